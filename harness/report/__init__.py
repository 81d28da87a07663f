"""See a run: self-contained HTML timelines of runs, campaigns and recorded conversations.

Text serves a short run; a failing campaign scenario with a nested run, a steering message
mid-batch and a cap, or a recorded conversation of twenty requests, a person would rather look
at. Every report here is one HTML file that needs nothing else (no network, no script to read
it), whose timelines each have a root element of class ``harness-timeline`` (DESIGN section 6).

The pages (``_pages``) are drawn by Jinja2 (the ``report`` extra; ``MissingReportExtra`` names it
when it is missing) from plain values (``_model``): a ``Trace`` read into lanes (``_runs``), a
cassette's decoded steps read the same way (``_cassette_lanes``), and the oracle's objections placed on
the events they are about (``_marks``); a wire campaign's conversation is read from the requests
an agent sent and the replies it was served (``_campaign_page``). This package sits beside
``campaigns`` and ``recording`` and imports neither: the command line and the pytest plugin hand it
what they hold.
"""

from harness.report._campaign_page import Spine, SpineRow, WireCampaignLike, wire_campaign_report, wire_timeline
from harness.report._cassette_lanes import StepLike
from harness.report._env import MissingReportExtra
from harness.report._model import Entry, Lane, ProblemShown, RecordingJudgement, Timeline
from harness.report._pages import (
    CampaignLike,
    campaign_report,
    cassette_report,
    judge,
    run_report,
    stylesheet,
    timelines_fragment,
    trace_report,
    trace_timeline,
)

__all__ = [
    "CampaignLike",
    "Entry",
    "Lane",
    "MissingReportExtra",
    "ProblemShown",
    "RecordingJudgement",
    "Spine",
    "SpineRow",
    "StepLike",
    "Timeline",
    "campaign_report",
    "cassette_report",
    "judge",
    "run_report",
    "stylesheet",
    "timelines_fragment",
    "trace_report",
    "trace_timeline",
    "WireCampaignLike",
    "wire_campaign_report",
    "wire_timeline",
]
