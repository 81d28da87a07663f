"""The record-replay half of the harness's pytest plugin (``harness.recording._recorded``), on pytest-recording.

pytest-recording owns ``--record-mode``, ``--block-network``, the ``vcr`` marker, ``vcr_config``
and ``vcr_cassette_dir``; this module gives the ``recorded`` fixture. A project's plain ``vcr``
marker is someone else's test suite: through pytest-recording's ``pytest_recording_configure`` hook
it gets only what changes no outcome (event-by-event stream replay) unless the project opts in
with the ``harness_vcr = strict`` ini option (or the test uses ``recorded``): then scrubbing, the
credential scan, semantic matching, atomic writes, option checks and the refusal of a mismatch the
code under test swallowed apply to it too. ``harness.pytest_plugin``
registers it (``pytest_plugins``); like that module it imports only pytest and the standard
library until a fixture or hook needs more.

PYTEST_DONT_REWRITE: the package's ``__init__`` imports this module before pytest loads it as a
plugin, so pytest could not rewrite its asserts anyway (it has none) and warned so in every
user's session (``PytestAssertRewriteWarning: Module already imported``); this marker says so.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

_CALL_FAILED = pytest.StashKey[bool]()
_RECORDED = pytest.StashKey[Any]()  # the test's RecordedFixture, for its call report
_REFUSED = pytest.StashKey[list[Exception]]()  # what a vcr-marker cassette refused to replay


_SAID_ONCE = (  # the message is the report (a traceback of vcrpy's save would print the cassette's bodies)
    "CassetteCorruptError",
    "CassetteExpiredError",
    "CredentialLeakError",
    "VcrOptionError",
)


class VcrOptionError(Exception):
    """An option of a plain ``vcr`` test's ``vcr_config`` the harness does not know, or a bad value."""


_RECORDING_ITEM: list[pytest.Item] = []  # the test whose cassette a vcr-marker save belongs to

HARNESS_FIXTURES = ("recorded",)
"""The harness's own cassette fixtures: a test using one gets the strict behaviour whatever the ini says."""

VCR_MODES = ("plain", "strict")
"""The values of the ``harness_vcr`` ini option; ``plain`` (the default) is pytest-recording alone."""


VCRPY_EXTRA_OPTIONS = ("additional_matchers", "allow_playback_repeats", "path", "persister")
"""``use_cassette`` keywords vcrpy reads that are not ``VCR()`` parameters (the rest come from its signature)."""


def known_options() -> frozenset[str]:
    """Every key ``vcr_config``, ``@pytest.mark.recorded`` and ``@pytest.mark.vcr`` accept.

    vcrpy's own are read from the installed ``VCR()`` signature, so a vcrpy that adds one is
    accepted at once; an unknown key is an error rather than silently ignored, as vcrpy does.
    The ``recorded`` fixture accepts vcrpy's path and patching options too (a project's
    ``vcr_config`` serves its plain ``vcr`` tests as well) and has no use for them.
    """
    import inspect

    from vcr import VCR

    from harness.recording._recorded import HARNESS_KEYS

    vcrpy = {name for name in inspect.signature(VCR.__init__).parameters if name != "self"}
    return frozenset(vcrpy | set(VCRPY_EXTRA_OPTIONS) | HARNESS_KEYS | {"record_mode"})


def option_problem(options: Mapping[str, Any], where: str) -> str | None:
    """Why ``options`` cannot be used: the first unknown name (with the closest known one) or a bad
    ``max_age`` / ``max_age_action`` value; ``None`` when they can."""
    import difflib

    from harness.recording._age import AgeLimit

    known = known_options()
    for name in options:
        if name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{where}: unknown option {name!r}{hint} (every option: docs/record-replay.md, section Options)"
    from vcr.record_mode import RecordMode

    from harness.recording._recorded import RECORD_MODES

    modes = dict.fromkeys([*RECORD_MODES, *(str(mode.value) for mode in RecordMode)])  # vcrpy's own too
    mode = options.get("record_mode", "none")
    if str(getattr(mode, "value", mode)) not in modes:  # a RecordMode, or its value
        return f"{where}: record_mode {mode!r} is not one of {', '.join(modes)}"
    try:
        AgeLimit.from_options(options, may_record=False)
    except ValueError as exc:
        return f"{where}: {exc}"
    return None


def cassette_file_name(name: str, suffix: str = ".yaml") -> str:
    """``name`` + ``suffix``, cut to a length every file system takes, with a hash keeping names apart.

    A parametrized test's id can be as long as its parameters (pytest-recording#172). The rule is
    pytest-recording's for the plain ``vcr`` marker (beyond 255: the start, ``...``, the md5 of the
    whole name), so a test keeps its cassette when it moves between the marker and the fixture,
    counted in bytes, since file systems count bytes and an id need not be ASCII.
    """
    import hashlib

    limit = 255
    if len(name.encode("utf-8")) + len(suffix) <= limit:
        return name + suffix
    digest = hashlib.md5(name.encode("utf-8"), usedforsecurity=False).hexdigest()
    start = name.encode("utf-8")[: limit - len(suffix) - len(digest) - 3].decode("utf-8", "ignore")
    return f"{start}...{digest}{suffix}"


def recorded_allows(item: pytest.Item) -> str | None:
    """A test replaying or recording a cassette may reach the provider: in replay the cassette
    answers everything (an unrecorded request fails), in a record mode recording is the point."""
    if "recorded" in getattr(item, "fixturenames", ()) or item.get_closest_marker("vcr") is not None:
        mode = item.config.getoption("--record-mode", None) or "the test's"
        return f"its vcr cassette (record mode {mode})"
    return None


def _keep_failed(config: pytest.Config, options: dict[str, Any]) -> bool:
    return bool(config.getoption("harness_keep_failed_recordings", False) or options.get("keep_failed_recording"))


def strict(item: pytest.Item) -> bool:
    """Whether ``item``'s plain ``vcr`` cassette gets the harness's outcome-changing checks: the
    project asked (``harness_vcr = strict``) or the test uses a harness cassette fixture."""
    fixtures = getattr(item, "fixturenames", ())
    return item.config.getini("harness_vcr") == "strict" or any(name in fixtures for name in HARNESS_FIXTURES)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _RECORDING_ITEM[:] = [item]
    names = ("recorded", "vcr") if strict(item) else ("recorded",)  # plain: vcrpy ignores what it does not know
    marked = [(m.name, m.kwargs) for name in names for m in item.iter_markers(name) if m.kwargs]
    if not marked:
        return  # the common case imports nothing
    for name, kwargs in marked:
        refused = option_problem(kwargs, f"@pytest.mark.{name}")
        if refused is not None:
            pytest.fail(refused, pytrace=False)


# optionalhook: with pytest-recording disabled (``-p no:recording``, which the HypoFuzz command in
# docs/distributed-campaigns.md needs) the hook is simply never called instead of pytest refusing
# to start with "unknown hook".
@pytest.hookimpl(optionalhook=True)
def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    """pytest-recording's hook: a ``@pytest.mark.vcr`` cassette replays streams event by event; with
    ``harness_vcr = strict`` (or a harness fixture) it gets all the harness's additions."""
    from harness.recording._vcr import AtomicPersister, configure_vcr, record_refusals, replay_streams_by_event

    item = _RECORDING_ITEM[-1] if _RECORDING_ITEM else None
    if item is None or not strict(item):
        replay_streams_by_event(vcr)  # changes how a stream arrives, never what it holds
        return

    def refused(error: Exception) -> None:
        if _RECORDING_ITEM:
            _RECORDING_ITEM[-1].stash.setdefault(_REFUSED, []).append(error)

    def hold(path: str) -> str | None:
        item = _RECORDING_ITEM[-1] if _RECORDING_ITEM else None
        if item is None or not item.stash.get(_CALL_FAILED, False) or _keep_failed(config, {}):
            return None
        return "the test failed"

    persister = configure_vcr(vcr, persister=AtomicPersister(hold=hold))
    guard_cassettes(vcr, persister, refused)
    record_refusals(vcr, refused)


def guard_cassettes(vcr: Any, persister: Any, refused: Callable[[Exception], None]) -> None:
    """Give every cassette of a plain ``vcr`` marker's ``vcr`` the checks the ``recorded`` fixture makes.

    A stream cut inside its last event is refused when replayed (and, through ``record_refusals``, a
    request the cassette cannot answer) fails the test in vcrpy's words even if the code under test
    swallows it; one the test's own code catches is the test's business. Under the plain marker each HTTP
    library has its own vcrpy stub, and all of them ask ``Cassette.play_response``; vcrpy's
    ``after_load_interaction`` hook hands over the cassette as it loads, so its ``play_response``
    is checked there, once, for every stub alike. The hook is added to whatever hooks the project
    configured (``vcr.use_cassette`` is wrapped), never replacing them. ``refused`` is told each
    error too: the code under test (an SDK that turns it into a "connection error", a ``try``)
    must not hide it from the test's report.

    ``max_age`` / ``max_age_action`` (from ``vcr_config`` or the marker) set the ``persister``'s
    ``AgeLimit`` for the cassette about to be opened. Every option is checked as for the
    ``recorded`` fixture: an unknown one (or a bad value) is :class:`VcrOptionError`.
    """
    from harness.recording._age import AgeLimit

    if getattr(vcr, "_harness_guarded", False):
        return
    use_cassette = vcr.use_cassette

    def guard(request: Any, response: Any, cassette: Any) -> tuple[Any, Any]:
        if "play_response" not in vars(cassette):
            cassette.play_response = _refusing_cut_streams(cassette, refused)
        return request, response

    def guarded(path: Any = None, **kwargs: Any) -> Any:
        problem = option_problem(kwargs, "the vcr_config fixture or @pytest.mark.vcr")
        if problem is not None:  # vcrpy would ignore an unknown key; the markers were checked at setup
            raise VcrOptionError(problem)
        mode = kwargs.get("record_mode", vcr.record_mode)
        mode = str(getattr(mode, "value", mode))
        checked = mode in ("none", "once", "new_episodes")  # all (and rewrite) record everything anew
        persister.age = AgeLimit.from_options(kwargs, may_record=mode != "none") if checked else None
        hooks = kwargs.get("after_load_interaction", vcr.after_load_interaction)
        if hooks is None:
            hooks = []
        elif callable(hooks) or not isinstance(hooks, Iterable):
            hooks = [hooks]
        kwargs["after_load_interaction"] = [*hooks, guard]
        return use_cassette(path, **kwargs)

    vcr.use_cassette = guarded
    vcr._harness_guarded = True


def _refusing_cut_streams(cassette: Any, refused: Callable[[Exception], None]) -> Callable[[Any], Any]:
    """``cassette.play_response``, refusing a recorded stream cut inside its last event."""
    from harness.recording._vcr import cut_stream_error, stream_cut

    play = cassette.play_response

    def play_response(vcr_request: Any) -> Any:
        played = play(vcr_request)
        cut = stream_cut(played)
        if cut:
            index = next((i for i, (_, r) in enumerate(cassette.data) if r is played), None)
            error = cut_stream_error(cassette.path, index, vcr_request, cassette.play_count, cut)
            refused(error)
            raise error
        return played

    return play_response


@pytest.fixture
def recorded(
    request: pytest.FixtureRequest, vcr_config: dict[str, Any], vcr_cassette_dir: str, default_cassette_name: str
) -> Iterator[Any]:
    """``recorded("openai", "chat.completions", model=...)`` -> a real backend over this test's cassette,
    ``<test dir>/cassettes/<module>/<test>.yaml``, in ``--record-mode`` (default ``none``: replay).
    Pass ``upstream=emulator.base_url`` to record against a loopback emulator. See docs/record-replay.md."""
    from pytest_recording.utils import merge_kwargs

    from harness.recording import CassetteError
    from harness.recording._recorded import RecordedFixture, RecordingError, open_recording

    markers = [*request.node.iter_markers("vcr"), *request.node.iter_markers("recorded")]
    options = merge_kwargs(vcr_config, markers)
    mode = request.config.getoption("--record-mode", None) or options.get("record_mode") or "none"
    path = Path(vcr_cassette_dir) / cassette_file_name(default_cassette_name)
    refused = option_problem(vcr_config, "the vcr_config fixture")  # the markers were checked at setup
    try:
        fixture = RecordedFixture(open_recording(path, mode, options)) if refused is None else None
    except (CassetteError, RecordingError) as exc:
        refused = str(exc)
    if refused is not None or fixture is None:  # failed outside the except block: the reason once, no chain
        pytest.fail(refused or "the recorded fixture could not be opened", pytrace=False)
    request.node.stash[_RECORDED] = fixture
    yield fixture
    failed = request.node.stash.get(_CALL_FAILED, False)
    problems = fixture.finish(failed=failed, keep_failed=_keep_failed(request.config, options))
    reported = {str(error) for error in fixture.recording.failures} if failed else set()
    problems = [problem for problem in problems if problem not in reported]  # the call's failure said it
    if fixture.discarded:
        request.node.add_report_section("teardown", "harness cassette", fixture.discarded)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "harness_vcr",
        "plain (default): @pytest.mark.vcr behaves as with pytest-recording alone; strict: the harness's "
        "matching, scrubbing, credential scan, option checks and swallowed-mismatch failures apply to it too",
        default="plain",
    )
    parser.getgroup("harness", "openprogram harness").addoption(
        "--harness-keep-failed-recordings",
        action="store_true",
        default=False,
        help="save what a failing test recorded (by default a failing test leaves its cassette as it was)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "recorded(**options): vcr_config options for this test's recorded fixture")
    mode = config.getini("harness_vcr")
    if mode not in VCR_MODES:
        raise pytest.UsageError(
            f"harness_vcr ini option: {mode!r} is not one of {', '.join(VCR_MODES)} "
            "(strict gives @pytest.mark.vcr the harness's checks; docs/pytest-plugin.md, section Cassettes)"
        )


def refuse_under_hypofuzz(config: pytest.Config) -> None:
    """HypoFuzz collects inside ``pytest.main`` and sets fixtures up after it returns, and
    pytest-recording's autouse ``vcr`` fixture reads ``Node.fspath``, which pytest removes when
    ``pytest.main`` returns: every test would fail its setup, and HypoFuzz would report "a failing
    input for every test". Said once, with the fix, before anything runs (called by the plugin's
    ``pytest_configure``)."""
    manager = config.pluginmanager
    if manager.has_plugin("recording") and any(
        type(plugin).__module__.startswith("hypofuzz.") for plugin in manager.get_plugins()
    ):
        raise pytest.UsageError(
            "HypoFuzz cannot set up pytest-recording's fixtures (they read Node.fspath, which pytest removes "
            "once its collection returns), so every test would fail its setup: disable pytest-recording for "
            "the campaign, e.g. hypothesis fuzz -- tests/property -p no:recording"
        )


def caught_by_test(error: BaseException, item: pytest.Item, call: pytest.CallInfo[None]) -> bool:
    """Whether the test's own code caught ``error`` (``pytest.raises``, an ``except`` in the test
    module): a raised exception's traceback starts at the frame that caught it. An SDK or the
    application that swallowed it (or turned it into its own error) caught it elsewhere, and one
    that ended the test is the failure pytest saw."""
    traceback = error.__traceback__
    if traceback is None or (call.excinfo is not None and call.excinfo.value is error):
        return False
    caught_in = Path(traceback.tb_frame.f_code.co_filename)
    return caught_in == Path(str(item.path)) or "_pytest" in caught_in.parts  # pytest.raises(E, f) too


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    fixture = item.stash.get(_RECORDED, None)
    refused = [error for error in item.stash.get(_REFUSED, []) if not caught_by_test(error, item, call)]
    failures = [*(fixture.recording.failures if fixture is not None else ()), *refused]
    if report.when == "call" and failures:
        # one mismatch, one failure, in the mismatch's words: not the ExecError it caused in the
        # code under test and then the same mismatch again at teardown, nor a pass when the code
        # under test swallowed it (only a strict cassette or the recorded fixture records one; a
        # mismatch the test's own code caught is the test's business)
        report.outcome = "failed"
        report.longrepr = "\n\n".join(str(error) for error in failures)
    if call.excinfo is not None and type(call.excinfo.value).__name__ in _SAID_ONCE:
        report.longrepr = str(call.excinfo.value)  # under the vcr marker too: the path and the reason, once
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True  # a failing test's recording is not kept unless asked
