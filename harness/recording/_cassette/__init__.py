"""A cassette as data: the values (``_cassette_values``), reading a file into them
(``_cassette_loading``), and the tools a request declared, per provider (``_tool_specs``).

Private to ``harness.recording``; the names users read are re-exported by its facade.
"""

from harness.recording._cassette._cassette_loading import CassetteError, load, shape_problem
from harness.recording._cassette._cassette_values import Body, Cassette, Headers, Interaction, Request, Response
from harness.recording._cassette._tool_specs import TOOL_READERS

__all__ = [
    "TOOL_READERS",
    "Body",
    "Cassette",
    "CassetteError",
    "Headers",
    "Interaction",
    "Request",
    "Response",
    "load",
    "shape_problem",
]
