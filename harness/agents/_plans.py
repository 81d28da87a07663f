"""A conversation's plan of replies, drawn with Hypothesis's public ``st.data()``.

Each conversation's replies are one list (at most ``max_replies``, then the final answer), so
Hypothesis's list shrinker removes whole replies, and no draw reaches into Hypothesis's internals
(issue 27). The list needs the agent's menu, which its first request sends: the same every time
for a steady agent, so only the campaign's first conversation waits for that request to plan.

A campaign's first phase (:class:`FirstPhase`) serves each kind its tiers allow once, as ``harness
fuzz`` runs its boundary table first: what a campaign says it served, it served, whatever the seed
draws (three frameworks had been served nothing of the ``invalid`` tier under ``--hostile``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.agents._conversation import as_recorded
from harness.agents._replies import (
    FINAL,
    Tool,
    is_final,
    kinds_for,
    numbered,
    request_features,
    servable,
    strict_tools,
    unnumbered,
)
from harness.emulator import WireRequest
from harness.scenarios import ModelTurn

_ID_PREFIX = {"anthropic": "toolu_", "bedrock": "tooluse_"}
"""Call ids in the wire's own style (``call_N`` elsewhere)."""


class PlannedReplies:
    """The replies of one conversation, planned with the public ``st.data()``: a list of replies,
    served in order, then the final answer. A list, so Hypothesis's shrinker removes whole replies.

    The plan needs the agent's menu, which its first request tells and which a steady agent sends
    the same every time: the campaign's first conversation plans at its first request, every later
    one before the agent starts, so a plan Hypothesis throws away (a replayed prefix too short for
    it) costs no run of the agent. Drawn on the test's own thread either way."""

    def __init__(self, data: Any, max_replies: int, hostile: bool, menus: Menus) -> None:
        self.data, self.max_replies, self.hostile, self.menus = data, max_replies, hostile, menus
        self.planned_for = (menus.menu, menus.provider, menus.features)
        self.plan: list[ModelTurn] | None = None
        if menus.menu is not None:
            self.plan = self._draw(menus.menu, menus.provider, menus.features)
        self.asked = False
        self.served = 0
        self.prefix = "call_"
        self.count = 0
        self.final: ModelTurn | None = None

    def _draw(self, menu: tuple[Tool, ...], provider: str, features: frozenset[str]) -> list[ModelTurn]:
        plans = _plans(menu, self.max_replies, provider, self.hostile, self.menus.forced, features)
        drawn: list[ModelTurn] = self.data.draw(plans, label="replies")
        return drawn

    def next_id(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count}"

    def __call__(self, number: int, request: WireRequest) -> ModelTurn | None:
        if not self.asked:  # the first request: the wire (the calls' ids) and the menu
            self.asked = True
            self.prefix = _ID_PREFIX.get(request.route.provider, "call_")
            menu = self.menus.read(request)
            provider = request.route.provider
            features = request_features(provider, request.body)
            self.menus.menu, self.menus.provider, self.menus.features = menu, provider, features
            if (
                self.plan is None or (menu, provider, features) != self.planned_for
            ):  # the first conversation, or a new menu
                self.plan = self._draw(menu, provider, features)
        assert self.plan is not None
        if self.final is not None:
            return self.final
        if self.served >= len(self.plan):
            self.final = FINAL
            return FINAL
        reply = numbered(self.plan[self.served], self.next_id)
        self.served += 1
        if is_final(reply):
            self.final = reply
        return reply


@dataclass
class Menus:
    """The menu and wire the agent's last first request sent: what the next conversation is planned for
    (the wire decides which statuses a reply may carry)."""

    menu: tuple[Tool, ...] | None = None
    provider: str = "openai"
    forced: str | None = None
    """The kind the next conversation's one reply is (the first phase), ``None``: a drawn plan."""
    features: frozenset[str] = frozenset()
    """What the agent's last first request enabled (``_replies.request_features``): the kinds
    that need it are drawn only then."""
    declared: tuple[Any, ...] | None = None
    """What the menu was read from: the last first request's wire and tool declarations."""

    def read(self, request: WireRequest) -> tuple[Tool, ...]:
        """The menu a first request declares. A steady agent declares the same every conversation:
        when the declarations equal the last ones (a dict comparison), the menu read from them is
        kept instead of read again through the wire's tool reader."""
        body = request.body if isinstance(request.body, dict) else {}
        declared = (request.route.provider, request.route.endpoint, body.get("tools"), body.get("toolConfig"))
        if self.menu is not None and declared == self.declared:
            return self.menu
        strict = strict_tools(request.body)
        specs = as_recorded(request).tools
        self.declared = declared
        return _menu(tuple(Tool(spec.name, spec.parameters, spec.name in strict) for spec in specs))


@dataclass
class FirstPhase:
    """The campaign's first conversations: one per kind the campaign's tiers allow and the menu
    can be served (:func:`~harness.agents._replies.servable`), each a single reply of that kind,
    then the final answer. Run before the drawn ones, inside the campaign's budget, when the budget
    is at least twice the kinds (a default campaign's is); each as a Hypothesis test of one
    example under the campaign's seed, so the same seed serves the same replies, and a failure
    shrinks within its kind."""

    menus: Menus
    hostile: bool
    served: int = 0
    """Conversations the phase has run (what the drawn ones have left of the budget)."""

    def offered(self) -> tuple[str, ...]:
        """The kinds the campaign could serve: its tiers', less those the menu rules out."""
        if self.menus.menu is None:
            return kinds_for(self.hostile)
        return servable(self.menus.menu, self.hostile, self.menus.features)

    def run(self, examples: int) -> Iterator[str]:
        """Sets each kind in turn for the next conversation (yielded: run it), then ends the phase."""
        order = kinds_for(self.hostile)
        # the budget is weighed against the kinds every request can be served (those that need a
        # feature of the request, reasoning or the quota error, only add to them where it has it)
        if examples < 2 * len(kinds_for(self.hostile, frozenset())):
            return
        try:
            for kind in order:
                # the menu is known once the first conversation has sent its first request
                if self.menus.menu is not None and kind not in servable(
                    self.menus.menu, self.hostile, self.menus.features
                ):
                    continue
                self.menus.forced = kind
                yield kind
                self.served += 1
        finally:
            self.menus.forced = None


_PLANS: dict[tuple[Any, ...], tuple[tuple[Tool, ...], st.SearchStrategy[list[ModelTurn]]]] = {}


def _plans(
    menu: tuple[Tool, ...],
    max_replies: int,
    provider: str,
    hostile: bool,
    forced: str | None = None,
    features: frozenset[str] = frozenset(),
) -> st.SearchStrategy[list[ModelTurn]]:
    """One strategy per menu and wire, built once (a strategy is validated when first drawn);
    ``hostile`` adds the ``invalid`` tier; ``forced``: one reply of that kind; ``features``: what
    the request enables."""
    key = (id(menu), max_replies, provider, hostile, forced, features)
    found = _PLANS.get(key)
    if found is None or found[0] is not menu:
        if len(_PLANS) > 64:
            _PLANS.clear()
        replies = unnumbered(menu, provider, hostile, forced, features)
        # at least one reply: an empty plan is the final answer alone, which the first reply's
        # simplest kind already is
        size = 1 if forced is not None else max_replies
        found = _PLANS[key] = (menu, st.lists(replies, min_size=1, max_size=size))
    return found[1]


_MENUS: dict[str, tuple[Tool, ...]] = {}


def _menu(tools: tuple[Tool, ...]) -> tuple[Tool, ...]:
    """The same menu as the same tuple every run, so the strategies drawn from it are built once."""
    key = json.dumps([(tool.name, tool.schema, tool.strict) for tool in tools], sort_keys=True, default=repr)
    if len(_MENUS) > 64:
        _MENUS.clear()
    return _MENUS.setdefault(key, tools)
