"""The one-choice parts of ``harness.strategies``: vocabularies, tables and products.

Hypothesis' cost is per choice and per draw, so what the scenarios draw comes, wherever the
content matters little, from small vocabularies and fixed tables, one choice each; a product of
tables (``_product``) draws several decisions as one. Shrinking still works: every table's first
entry is its simplest, and an index shrinks towards 0. The tool calls live here too, since their
arguments are tables of the schema vocabulary's values.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from hypothesis import strategies as st

from harness.scenarios import Call, ToolDef
from harness.strategies._schemas import ALIENS, PROPERTY_SCHEMAS, _json, _key, arguments, invalid_arguments, memoized

TOOL_NAMES = ("add", "search", "fetch", "write", "plan")
UNKNOWN_TOOL = "no_such_tool"
NOT_JSON = ("{", "not json", "[1, 2]", '"text"', "null", '{"a": }', "  ", "")
"""Argument texts a model might send instead of a JSON object (blank text means "no arguments")."""
DUPLICATE_ID = "dup"


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def menu_key(tools: Sequence[ToolDef]) -> tuple[Any, ...]:
    """What the strategies of a menu are cached under: its names, schemas and whether each is real."""
    return tuple((t.name, _schema_key(t.parameters), t.is_real) for t in tools)


def _schema_key(schema: Mapping[str, Any]) -> str:
    found = _VOCABULARY_KEYS.get(id(schema))  # the generated tools' schemas: no JSON text a draw
    return found[1] if found is not None and found[0] is schema else _key(schema)


# Texts come from small vocabularies: one choice each (Hypothesis' cost is per choice, and what a
# text says seldom matters to the loop), shrinking to the first word. The odd ones are the texts
# that break naive code (multi-byte, combining, zero-width, blank, long, JSON-looking), and one
# draw in about twenty is any printable text at all.
WORDS = ("ok", "done", "wait", "stop", "the answer is 42", "hmm", "")
_ODD = ("héllo wörld ✓", "🙂🙃", "日本語", "line one\nline two", "  ", "a\u0301", "\u200b", '{"a": 1}', "x" * 30)
ANY = object()
_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
_any_text = st.text(st.characters(codec="utf-8", exclude_categories=_SURROGATES), max_size=24)


@st.composite
def _word_or_any(draw: st.DrawFn, vocabulary: Any) -> Any:
    picked = draw(vocabulary)
    return draw(_any_text) if picked is ANY else picked


def _say(draw: st.DrawFn, vocabulary: st.SearchStrategy[Any]) -> Any:
    """``_word_or_any`` inside a composite: one draw fewer (Hypothesis' cost is per draw too)."""
    picked = draw(vocabulary)
    if picked is ANY:
        return draw(_prompts if vocabulary is prompt_picks else _any_text)
    return picked


UNIFORM_UP_TO = 1000
"""Hypothesis skews an index range towards its low end: hardly below about 300 entries, some below
a thousand (Hypothesis 6.170: the top tenth of a thousand is drawn a quarter as often as the
bottom), much beyond (an entry of a big product would then mostly be its tables' first entries)."""
JOINT_SIZE = 256
"""The entries of a ``_joint`` table: an index below this is drawn uniformly (the joint weights
are exact only if it is)."""


def _product(*tables: Sequence[Any]) -> tuple[st.SearchStrategy[tuple[Any, ...]], ...]:
    """One entry of each table in as few choices as Hypothesis still draws uniformly: the tables,
    in order, are grouped into products of at most ``UNIFORM_UP_TO`` entries, each group one
    ``sampled_from`` (one draw, one choice) over its precomputed product, first table fastest.
    Shrinking an index towards 0 moves every entry of its group towards its table's first.
    Draw it with ``_take``."""
    return memoized(("product", repr(tables)), lambda: _grouped_product(tables))


def _grouped_product(tables: Sequence[Sequence[Any]]) -> tuple[st.SearchStrategy[tuple[Any, ...]], ...]:
    groups: list[list[Sequence[Any]]] = [[]]
    size = 1
    for table in tables:
        if groups[-1] and size * len(table) > UNIFORM_UP_TO:
            groups.append([])
            size = 1
        groups[-1].append(table)
        size *= len(table)
    return tuple(st.sampled_from(_entries(group)) for group in groups)


def _entries(group: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], ...]:
    # the product of group, its first table fastest: each entry reversed by itemgetter, in C (a
    # Python-level reversed per entry was most of the cost of building a campaign's products)
    combinations = itertools.product(*reversed(group))
    if len(group) < 2:
        return tuple(combinations)
    return tuple(map(operator.itemgetter(*range(len(group) - 1, -1, -1)), combinations))


def _take(draw: st.DrawFn, groups: tuple[st.SearchStrategy[tuple[Any, ...]], ...]) -> tuple[Any, ...]:
    """An entry of each table of a ``_product``."""
    out: tuple[Any, ...] = ()
    for group in groups:
        out += draw(group)
    return out


def _joint(
    *tables: Sequence[Any], relevant: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None
) -> st.SearchStrategy[tuple[Any, ...]]:
    """One entry of each table (an entry repeated in a table is that much likelier) in ONE choice,
    however many tables: a ``sampled_from`` over ``JOINT_SIZE`` entries that approximates their
    joint distribution, each combination repeated in proportion to its probability (a
    combination rarer than one in ``JOINT_SIZE`` may be gone; ``_product`` keeps every one, in
    more choices). ``relevant`` maps a combination to what matters of it (a field that does not
    matter there set to its table's first entry), so one that does not matter takes no room.
    The simplest combinations (fewest entries off their table's first) come first, where an
    index shrinks; the last entry is another copy of the likeliest, since Hypothesis draws a
    range's ends more often than its inside. Built once per set of tables."""
    key = ("joint", repr(tables), relevant)
    return memoized(key, lambda: st.sampled_from(_joint_table(tables, relevant)))


HOLE = object()


def joint_with(value: Any, *tables: Sequence[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    """``_joint`` of tables where ``HOLE`` stands for ``value``: the table is built once for
    every value (menus that differ only in a tool's name share it), then the value put in. The
    same entries in the same order as ``_joint`` with the value itself, as long as its ``repr``
    is neither a table's first entry's nor another entry's of its table."""
    table = memoized(("holed joint", repr(tables)), lambda: _joint_table(tables, None))
    return st.sampled_from(tuple(tuple(value if v is HOLE else v for v in entry) for entry in table))


def _joint_table(
    tables: Sequence[Sequence[Any]], relevant: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None
) -> tuple[tuple[Any, ...], ...]:
    entries, weights = [], []
    for table in tables:
        counts: dict[str, list[Any]] = {}  # by repr: entries may be unhashable, and False is not 0
        for entry in table:
            counts.setdefault(repr(entry), [entry, 0])[1] += 1
        entries.append([entry for entry, _ in counts.values()])
        weights.append([n / len(table) for _, n in counts.values()])
    # the combinations and their probabilities as two products walked side by side, each in C
    # (a tuple built per combination in Python was most of a table's cost)
    combinations: Any = itertools.product(*entries)
    if relevant is not None:
        combinations = map(relevant, combinations)
    mass: dict[str, list[Any]] = {}
    for values, p in zip(combinations, map(math.prod, itertools.product(*weights)), strict=True):
        key = repr(values)
        found = mass.get(key)
        if found is None:
            mass[key] = [values, p]
        else:
            found[1] += p
    firsts = tuple(table[0] for table in tables)
    plain = [repr(v) for v in (relevant(firsts) if relevant is not None else firsts)]
    ordered = sorted(mass.values(), key=lambda m: sum(map(operator.ne, map(repr, m[0]), plain)))
    # systematic sampling: entry i is the combination whose cumulative probability crosses
    # (i + 1/2) / JOINT_SIZE, so every run of neighbouring combinations keeps its share within one
    # entry (a table's rare value spread over many rare combinations is not rounded away)
    total, cumulative, counts_of = sum(p for _, p in ordered), 0.0, []
    for _, p in ordered:
        before = int(cumulative / total * JOINT_SIZE + 0.5)
        cumulative += p
        counts_of.append(int(cumulative / total * JOINT_SIZE + 0.5) - before)
    table = [m[0] for m, n in zip(ordered, counts_of, strict=True) for _ in range(n)]
    likeliest = ordered[max(range(len(ordered)), key=lambda i: counts_of[i])][0]
    del table[max(i for i, entry in enumerate(table) if entry is likeliest)]
    return (*table, likeliest)


@functools.cache
def _sizes(low: int, high: int, more: float, empty: float = 0.0) -> st.SearchStrategy[tuple[int]]:
    """How many elements a list has, in one choice instead of one per element (a list's "one
    more?" booleans): ``low`` to ``high``, each size ``more`` times as likely as the one before
    (as ``st.lists`` draws them); with ``empty``, that share of draws is 0 instead. The smallest
    size comes first, where shrinking goes (``harness.checking._regressions.minimize`` then deletes any
    element in the middle that a failure does not need)."""
    weights = {n: more ** (n - low) for n in range(low, high + 1)}
    scale = 1000 / sum(weights.values())
    table = [n for n, w in weights.items() for _ in range(max(1, round(w * scale * (1 - empty))))]
    return _joint((0,) * round(1000 * empty) + tuple(table) if empty else tuple(table))


def draw_list(draw: st.DrawFn, sizes: st.SearchStrategy[tuple[int]], element: st.SearchStrategy[Any]) -> list[Any]:
    """A list inside a composite: its size (``_sizes``), then its elements, and no span of its own
    (Hypothesis' cost is per draw too)."""
    (count,) = draw(sizes)
    return [draw(element) for _ in range(count)]


def one_in_table(n: int) -> tuple[bool, ...]:
    """A table for ``_product`` that is True once in ``n`` (0: never). The True entry sits in the
    middle: Hypothesis favours the ends of a range, and shrinks towards its start, i.e. to False."""
    return tuple(i == n // 2 for i in range(n)) if n > 0 else (False,)


_words = st.sampled_from(WORDS)
text_words = st.sampled_from((*WORDS, *_ODD, ANY))
_MESSAGE_WORDS = ("stop", "wait, use search", "also check x", "thanks", *WORDS, *_ODD, ANY)
_message_words = st.sampled_from(_MESSAGE_WORDS)
error_words = st.sampled_from(("", *WORDS, *_ODD, ANY))
_texts = _word_or_any(text_words)
_messages = _word_or_any(_message_words)


_JSON_RESULTS: tuple[Any, ...] = (None, 0, 42, -3, 100, True, [], {}, [1, "two", None], {"a": {"b": [1, 2]}}, 1.5)
_RETURN_VALUES = (*WORDS, *_JSON_RESULTS, *_ODD)
_return_values = st.sampled_from((*_RETURN_VALUES[:14], ANY, *_RETURN_VALUES[14:]))
"""One choice; now and then (``ANY``, drawn with ``_value``) any JSON value, a Hypothesis recursive value."""


def _value(draw: st.DrawFn) -> Any:
    picked = draw(_return_values)
    return draw(_json) if picked is ANY else picked


error_texts = _word_or_any(error_words)
DETAILS = (None, None, None, None, None, None, {"status": 200}, {"status": 404}, {"status": 503})
UPDATES = ((),) * 18 + (("ok",), (0,), (50,), ("ok", 100), ("wait", "done"), (1, 2))  # mostly none


def _schema_vocabulary(size: int = 64) -> tuple[dict[str, Any], ...]:
    """Object schemas of zero to three typed properties, some required, some closed, fixed once
    (the first is the empty open schema, where shrinking goes): a tool's schema is then one
    choice instead of ten, and the campaign meets each schema often enough to cache its
    validators and argument strategies. ``schemas()`` stays the open-ended strategy."""
    chooser = random.Random(11)
    found = [{"type": "object", "properties": {}}]
    while len(found) < size:
        names = chooser.sample(("a", "b", "query", "limit", "flag"), chooser.randint(0, 3))
        schema: dict[str, Any] = {"type": "object", "properties": {n: chooser.choice(PROPERTY_SCHEMAS) for n in names}}
        required = [n for n in names if chooser.random() < 0.5]
        if required:
            schema["required"] = required
        if chooser.random() < 0.5:
            schema["additionalProperties"] = False
        if schema not in found:
            found.append(schema)
    return tuple(found)


_SCHEMA_VOCABULARY = _schema_vocabulary()
tool_schemas = st.sampled_from(_SCHEMA_VOCABULARY)
_VOCABULARY_KEYS = {id(schema): (schema, _key(schema)) for schema in _SCHEMA_VOCABULARY}


_IDS = (None, None, None, None, DUPLICATE_ID)
_ids = st.sampled_from(_IDS)


def tool_calls(tools: Sequence[ToolDef] = ()) -> st.SearchStrategy[Call]:
    """A pick: mostly valid arguments for a menu tool; else broken arguments, non-JSON text or an unknown name."""
    tools = tuple(tools)
    return memoized(("calls", menu_key(tools)), lambda: _tool_calls(tools))


_CALL_FORMS = ("valid", "valid", "valid", "valid", "invalid", "raw")
_ABSENT = object()
_VALUES = {
    _key(schema): values
    for schema, values in zip(
        PROPERTY_SCHEMAS,
        (
            (0, 1, -1, 7, 100, 2**31 - 1, -(2**31)),
            ("", "x", "5", "héllo wörld", "null", "two words"),
            (False, True),
            (0, 1.5, -2.25, 1e10, 3),
            (0, 10, 5, 1),
            ("asc", "desc"),
            ([], [1], [0, -1, 2]),
            (None, 0, 3),
            (None, "", "x"),
            ({"x": 0}, {"x": 5}),
        ),
        strict=True,
    )
}
"""Argument values per property schema of ``_schema_vocabulary``: the edges the loop's validation
and coercion meet (0, the int32 bounds, empty, numeric and JSON-looking strings, null)."""
_NOW_AND_THEN = (False,) * 15 + (True,)


def _argument_tables(schema: Mapping[str, Any]) -> tuple[tuple[str, tuple[Any, ...]], ...] | None:
    """Per property, the values a call may give it (``_ABSENT`` first when it is optional); None
    for a schema outside the vocabulary (your tools' schemas), drawn with ``arguments`` instead."""
    if schema.get("type") != "object" or set(schema) - {"type", "properties", "required", "additionalProperties"}:
        return None
    properties, required = schema.get("properties") or {}, set(schema.get("required") or ())
    tables = []
    for name, prop in properties.items():
        values = _VALUES.get(_key(prop))
        if values is None:
            return None
        tables.append((name, values if name in required else (_ABSENT, *values)))
    return tuple(tables) if required <= set(properties) else None


def _tool_calls(tools: tuple[ToolDef, ...]) -> st.SearchStrategy[Call]:
    return _call(*call_parts(tools))


def call_parts(tools: tuple[ToolDef, ...]) -> tuple[Any, tuple[Any, ...]]:
    return memoized(("call parts", menu_key(tools)), lambda: _build_call_parts(tools))


def _build_call_parts(tools: tuple[ToolDef, ...]) -> tuple[Any, tuple[Any, ...]]:
    # One choice (``_joint``) picks the tool, the form of its arguments (valid, broken, not JSON,
    # with the text that is not JSON) or an unknown name, and the call's id; one more its
    # arguments. Mostly menu tools. The first pick, valid arguments for the first tool, is where
    # shrinking goes. Tools are named by index (an unknown name too: 0 is UNKNOWN_TOOL, i the
    # i-th tool's name in capitals), so menus of as many tools share one table.
    return memoized(("call picks", len(tools)), lambda: _call_picks(len(tools))), tuple(
        memoized(("argument forms", t.name, _schema_key(t.parameters)), functools.partial(_argument_forms, t))
        for t in tools
    )


def _call_picks(size: int) -> st.SearchStrategy[tuple[Any, ...]]:
    known = tuple((index, form) for index in range(size) for form in _CALL_FORMS)
    unknown = tuple(("unknown", which) for which in range(size + 1))
    weighted = known * 3 * len(unknown) + unknown * len(known) if known else unknown
    return _joint(weighted, _IDS, NOT_JSON, relevant=_what_a_call_uses)


def _what_a_call_uses(drawn: tuple[Any, ...]) -> tuple[Any, ...]:
    (index, form), id, raw = drawn
    return index, form, id, raw if form == "raw" else NOT_JSON[0]


def _argument_forms(tool: ToolDef) -> tuple[Any, ...]:
    # per schema, whatever the tool's name: tools of one schema share (and validate) one strategy
    schema = tool.parameters
    return (tool.name, *memoized(("schema forms", _schema_key(schema)), lambda: _schema_forms(schema)))


def _schema_forms(schema: Mapping[str, Any]) -> tuple[Any, ...]:
    tables = _argument_tables(schema)
    if tables is None:
        return None, arguments(schema).map(_as_dict), invalid_arguments(schema)
    properties = tuple(sorted(schema.get("properties") or {}))
    required = tuple(sorted(schema.get("required") or ()))
    ways = ("wrong type",) * bool(properties) + ("missing required",) * bool(required)
    ways += ("extra key",) * (schema.get("additionalProperties") is False or not ways)
    values = tuple(table for _, table in tables)
    valid = _product(*values, _NOW_AND_THEN) if not values else _product((*values[0], ANY), *values[1:])
    invalid = _product(*values, ways, properties or ("",), required or ("",), ALIENS)
    return tuple(name for name, _ in tables), valid, invalid, arguments(schema).map(_as_dict)


@st.composite
def _call(draw: st.DrawFn, picks: Any, forms: tuple[Any, ...]) -> Call:
    return draw_call(draw, picks, forms)


def draw_call(draw: st.DrawFn, picks: Any, forms: tuple[Any, ...]) -> Call:
    index, form, id, raw = draw(picks)
    if index == "unknown":
        return Call(forms[form - 1][0].upper() if form else UNKNOWN_TOOL, id=id)
    name, names, valid, invalid, *anything = forms[index]
    if form == "raw":
        return Call(name, raw=raw, id=id)
    if names is None:  # a schema outside the vocabulary: Hypothesis' own strategies
        return Call(name, args=draw(valid if form == "valid" else invalid), id=id)
    drawn = _take(draw, valid if form == "valid" else invalid)
    args = {n: v for n, v in zip(names, drawn, strict=False) if v is not _ABSENT}
    if form == "valid":  # now and then (the first property's ANY, or the empty schema's one in 16) anything
        return Call(name, args=draw(anything[0]) if ANY in drawn or drawn == (True,) else args, id=id)
    way, prop, needed, alien = drawn[-4:]
    if way == "wrong type":
        args[prop] = alien
    elif way == "missing required":
        args.pop(needed, None)
    else:
        args["unexpected"] = alien
    return Call(name, args=args, id=id)


STOPS = ("stop", "stop", "stop", "length")
CALL_COUNTS = (1, 1, 1, 2, 2, 3)
MAYBE_WORDS = (None,) * len(WORDS) + WORDS
maybe_word = st.sampled_from(MAYBE_WORDS)


BATCHES = (
    *((word,) for word in ("stop", "wait, use search", "also check x", "thanks", "ok", "")),
    ("stop", "thanks"),
    ("also check x", "ok"),
    *((word,) for word in _ODD[:3]),
    ANY,  # now and then one or two messages of any text
)
_batch = st.lists(_messages, min_size=1, max_size=2).map(tuple)


CONFIG_TABLES: tuple[tuple[Any, ...], ...] = (
    (None,) * 36 + (1, 2, 3, 4, 5, 6) * 2 + (0, -1, -2, -3) * 2 + (51, 55, 60),  # the cap: unset mostly, else
    # small, 0, negative or above 50; then parallel_tool_calls, model, system_prompt (tool_choice between)
    (None, False, True),
    (None, "model-x"),
    ("", "You are terse."),
)


_prompts = st.lists(_messages, min_size=1, max_size=2).map(tuple)
prompt_picks = st.sampled_from((*((m,) for m in _MESSAGE_WORDS[:-1]), ("stop", "thanks"), ("ok", "hmm"), ANY))


# The parts of what a draw means that ``harness.strategies`` hands to ``_joint`` (``relevant``)
# and its menus of names.


def what_matters(drawn: tuple[Any, ...]) -> tuple[Any, ...]:
    kind, updates, details, base, unprintable = drawn
    if kind != "raise":
        base = unprintable = False
    return kind, updates, details if kind in ("return", "error") else None, base, unprintable and not base


def what_nests(drawn: tuple[Any, ...]) -> tuple[Any, ...]:
    return drawn if not drawn[0] else (*drawn[:4], (), drawn[5])


def _menus(low: int, high: int) -> st.SearchStrategy[tuple[tuple[str, ...]]]:
    """The names of a menu in one choice: every size from ``low`` to ``high`` alike, each
    ordering of distinct names of a size alike; the empty (or shortest) menu first."""
    high = min(high, len(TOOL_NAMES))
    if low > high:
        return st.nothing()
    return memoized(
        ("menus of names", low, high),
        lambda: _joint(
            tuple(
                names
                for size in range(low, high + 1)
                for names in itertools.permutations(TOOL_NAMES, size)
                for _ in range(math.perm(len(TOOL_NAMES), high) // math.perm(len(TOOL_NAMES), size))
            )
        ),
    )


PARTIALS = ("nothing", "text", "calls")


def what_a_turn_uses(drawn: tuple[Any, ...]) -> tuple[Any, ...]:
    (kind, cancel), stop, text, count, partial = drawn
    if kind == "calls":
        return (kind, cancel), stop, text, count, "nothing"
    if kind == "text":
        return (kind, cancel), "stop", text, 1, "nothing"
    if kind == "empty":
        return (kind, cancel), stop, None, 1, "nothing"
    if kind in ("error", "aborted"):
        return (kind, cancel), "stop", None, 1, "nothing"
    return (kind, cancel), "stop", text if partial != "nothing" else None, count if partial == "calls" else 1, partial


def no_how(drawn: tuple[Any, ...]) -> tuple[Any, ...]:
    return drawn if drawn[0] is not None else (None, *drawn[1:3], 0, *drawn[4:])
