"""What a wire invariant's verdict is made of: the finding (:class:`Violation`), a framework's
declared departure from an invariant (:class:`Deviation`), a run's :class:`Judgement`, and the kinds
of the replies that led to a finding (what a deviation is matched on). The invariants themselves
live beside this module, one per concept (``_wire_invariants``: W1-W6; ``_w7_refused``,
``_w8_well_formed``), and all report in these terms.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from harness.agents._conversation import Exchange, Run, as_recorded
from harness.agents._replies import KINDS, TIERS, kind_of, strict_tools, strictly, tier_of
from harness.scenarios import ModelTurn

INVARIANTS: dict[str, str] = {
    "W1": "every tool call of a reply is answered exactly once, by its id, in the next request",
    "W2": "history is append-only: each request repeats the previous one and the reply it got",
    "W3": "the run ends, returning or raising, within the request bound and the time bound",
    "W4": "a normal return's text is the last reply's text",
    "W5": "a cut stream, an error (a status or an in-band event), a malformed chunk or a dropped reply "
    "is never returned as a complete answer",
    "W6": "a retry after a 429 or 503 waits at least its Retry-After",
    "W7": "a request the provider refused as non-retryable (400, 401, 403, 404, OpenAI's insufficient_quota) "
    "is not sent again unchanged",
    "W8": "a run served only replies whole and well-formed by the provider's documentation ends by returning",
}


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which, at which request (0: the run's end), what was wrong."""

    invariant: str
    request: int
    message: str
    kinds: tuple[str, ...] = ()
    """The kinds of reply that led to it (what a :class:`Deviation` is matched against)."""
    measured: str = ""
    """What a clock measured (how soon a retry came), shown with the message but kept out of it:
    the message goes into the saved scenario, whose name is a digest of its text, so the same
    seed must give the same message, whatever the machine's timing that time."""
    tier: str = ""
    """Who could have sent the replies that led to it (``harness.agents.TIERS``): the least
    realistic of them, ``provider``, ``network`` or ``invalid`` (a finding on input no conforming
    provider sends is literally right and of little value beside a realistic one)."""
    cause: int = 0
    """The number of the reply that caused it (0: the run's own doing, or no one reply)."""
    also: tuple[Violation, ...] = ()
    """The other invariants the same reply broke: one cause, one finding (a call dropped with a
    warning breaks W1 and W2 at once), listed with it."""

    def __str__(self) -> str:
        shown = self._said()
        for other in self.also:
            shown += f"; the same reply also broke {other._said()}"
        tier = f" [tier: {self.tier}]" if self.tier else ""
        return shown + tier

    def _said(self) -> str:
        where = f"request {self.request}" if self.request else "the end of the run"
        measured = f" ({self.measured})" if self.measured else ""
        return f"{self.invariant} at {where}: {self.message}{measured}"

    @property
    def invariants(self) -> tuple[str, ...]:
        """Every invariant this finding broke, its own first."""
        return (self.invariant, *(other.invariant for other in self.also))


@dataclass(frozen=True)
class Deviation:
    """A framework's deliberate departure from one invariant, with the reason it is deliberate.

    ``kinds``: the reply kinds (``harness.agents.KINDS``) after which it applies; empty: any."""

    invariant: str
    reason: str
    kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.invariant not in INVARIANTS:
            raise ValueError(f"Deviation: unknown invariant {self.invariant!r} (one of {', '.join(INVARIANTS)})")
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("Deviation: say why the framework does this (reason)")
        # a kind misspelt, or one kind given as a bare string, would match nothing: the deviation
        # would silently never apply, and the campaign fail on what it was meant to declare
        if isinstance(self.kinds, str):
            raise ValueError(f"Deviation: kinds is a tuple of reply kinds: kinds=({self.kinds!r},)")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(
                f"Deviation: unknown reply kind(s) {', '.join(map(repr, unknown))} (one of {', '.join(KINDS)})"
            )

    def covers(self, violation: Violation) -> bool:
        """Whether it covers ``violation``, or one of the violations the same reply caused with it
        (one cause, one finding: declared for that reply, it covers all it broke)."""
        return any(self._covers(v) for v in (violation, *violation.also))

    def _covers(self, violation: Violation) -> bool:
        if violation.invariant != self.invariant:
            return False
        return not self.kinds or bool(set(self.kinds) & set(violation.kinds))


@dataclass(frozen=True)
class Judgement:
    violations: tuple[Violation, ...]
    """The violations no declared deviation covers: each one fails the campaign."""
    declared: tuple[tuple[Violation, Deviation], ...]

    @property
    def ok(self) -> bool:
        return not self.violations


def declared_deviations(declared: object) -> tuple[Deviation, ...]:
    """An agent's ``wire_deviations`` (or a ``deviations=`` argument) as a tuple, or a ``TypeError``
    saying what is wrong with it: anything but :class:`Deviation` values would fail deep inside the
    first judgement that needs them, long after the campaign started."""
    if declared is None:
        return ()
    if isinstance(declared, Deviation):
        raise TypeError("wire_deviations is a list of Deviation values: [Deviation(...)], not one Deviation")
    if isinstance(declared, (str, bytes)) or not isinstance(declared, Iterable):
        raise TypeError(f"wire_deviations is a list of Deviation values, not {type(declared).__name__}")
    values = tuple(declared)
    wrong = [v for v in values if not isinstance(v, Deviation)]
    if wrong:
        raise TypeError(
            f"wire_deviations holds {wrong[0]!r} ({type(wrong[0]).__name__}): each one is "
            "Deviation(invariant, reason, kinds=(...)) from harness.agents"
        )
    return values


def by_cause(found: Iterable[Violation]) -> list[Violation]:
    """One finding per cause: the violations one reply caused joined into the first of them
    (``also``), at the least realistic tier among them; the others as they were."""
    out: list[Violation] = []
    led: dict[int, int] = {}
    for violation in found:
        if not violation.cause or violation.cause not in led:
            if violation.cause:
                led[violation.cause] = len(out)
            out.append(violation)
            continue
        lead = out[led[violation.cause]]
        tier = max(lead.tier, violation.tier, key=lambda t: TIERS.index(t) if t in TIERS else -1)
        out[led[violation.cause]] = dataclasses.replace(lead, also=(*lead.also, violation), tier=tier)
    return out


def led_by(violation: Violation, invariant: str) -> Violation:
    """The finding with its violation of ``invariant`` first: what a deviation for it is counted as."""
    if violation.invariant == invariant:
        return violation
    members = [dataclasses.replace(violation, also=()), *violation.also]
    first = next(v for v in members if v.invariant == invariant)
    rest = tuple(v for v in members if v is not first)
    return dataclasses.replace(first, also=rest, tier=violation.tier)


def tier_for(kinds: Iterable[str]) -> str:
    """The least realistic tier among ``kinds`` (``provider`` for none: the run's own doing)."""
    return max((tier_of(kind) for kind in kinds), key=TIERS.index, default="provider")


# -- reading the requests --------------------------------------------------------------------------


class ReplyKinds:
    """The kinds of the replies that led to a violation, what a :class:`Deviation` is matched on.

    A call whose arguments fail its tool's schema looks like a valid call on its own
    (``kind_of`` has no menu to check it against); here the menu of the run's first request
    tells them apart, so ``Deviation(..., kinds=("invalid arguments",))`` can apply. Read only
    when a violation is found: a clean run pays nothing for it."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._schemas: dict[str, Any] | None = None
        first = run.exchanges[0].request if run.exchanges else None
        self.provider = first.route.provider if first is not None else None
        self.strict = strict_tools(first.body) if first is not None else frozenset()

    def __call__(self, *replies: ModelTurn | None) -> tuple[str, ...]:
        return tuple(self._kind(r) for r in replies if r is not None)

    def _kind(self, reply: ModelTurn) -> str:
        kind = kind_of(reply, self.provider, self.strict)
        if kind != "valid call" or reply.calls[0].raw is not None:
            return kind
        call = reply.calls[0]
        schema = self._menu().get(call.name)
        if schema is not None and not _fits(dict(call.args), schema):
            return strictly("invalid arguments", call.name, self.strict)
        return kind

    def _menu(self) -> dict[str, Any]:
        if self._schemas is None:
            first = self._run.exchanges[0].request if self._run.exchanges else None
            tools = as_recorded(first).tools if first is not None else ()
            self._schemas = {spec.name: spec.parameters for spec in tools}
        return self._schemas


def reply_kinds(run: Run) -> tuple[str, ...]:
    """The kind of each reply the run was served, arguments that fail their schema told apart
    from a valid call (what a campaign's table of what it exercised should count)."""
    return ReplyKinds(run)(*run.replies)


def _fits(arguments: dict[str, Any], schema: Any) -> bool:
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
    except (TypeError, ValueError):  # a schema the validator cannot read: no way to call it invalid
        return True
    return bool(validator.is_valid(arguments))


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    import jsonschema

    schema = json.loads(schema_text)
    try:
        return jsonschema.validators.validator_for(schema)(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(str(exc)) from None


def deviations_of(agent: Callable[..., Any]) -> tuple[Deviation, ...]:
    """The agent's ``wire_deviations``, or a ``TypeError`` saying what is wrong with them."""
    return declared_deviations(getattr(agent, "wire_deviations", None))


def rendered_again(exchange: Exchange) -> Any:
    """The emulator's delivery of ``exchange``'s reply, rendered again for the request that got it
    (the same events and error body; only ids may differ): what a message names in the wire's own
    terms. ``None`` when it cannot be rendered: a description is not worth a failed judgement."""
    from harness.emulator import Emulator, script_of

    request = exchange.request
    assert exchange.reply is not None
    try:
        emulator = Emulator(*script_of([exchange.reply]))
        body = json.dumps(request.body).encode() if request.body is not None else b""
        query = "&".join(f"{k}={v}" for k, v in request.query.items())
        return emulator.answer(request.method, request.path, query, request.headers.items(), body)
    except Exception:  # the message says less instead
        return None
