"""Tools as the loop sees them: a spec to show the model and an ``execute`` to run its pick.

Everything a user can put on the menu (a decorated function, a ``{"spec", "execute"}`` dict, an
object with ``.spec`` / ``.execute``) is normalised here into one ``AgentTool``, so the loop has
exactly one kind of thing to call and one place where arguments are checked.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
import re
import threading
import types as types_module
import warnings
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, create_model, field_validator

from openprogram.types import TextContent, ToolCall, ToolSpec, trusted

if TYPE_CHECKING:  # imported where a validator is first needed: it is a fifth of ``import openprogram``
    import jsonschema

OnUpdate = Callable[[Any], None]
"""Called by a tool with partial results while it runs; each becomes ``tool_execution_update``."""

Execute = Callable[[str, dict[str, Any], "asyncio.Event | None", "OnUpdate | None"], Awaitable["AgentToolResult"]]

_SPECIAL_PARAMS = ("cancel_event", "on_update")


class AgentToolResult(BaseModel):
    """What a tool gives back. ``is_error=True`` tells the model the call failed without raising."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True)
    content: tuple[TextContent, ...] = ()
    details: Any = None
    is_error: bool = False

    @field_validator("content", mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (TextContent(text=value),)
        return value

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content)


@dataclass(eq=False)
class AgentTool:
    """The loop's tool. ``execute(tool_call_id, args, cancel_event, on_update)`` gets validated args."""

    name: str
    description: str
    parameters: dict[str, Any]
    execute: Execute
    source: str | None = None

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


def exception_text(exc: BaseException) -> str:
    """What a tool's exception tells the model: its text, else its type name (also when ``str()`` fails)."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    return text or type(exc).__name__


def describe_exception(exc: BaseException) -> str:
    """``<Type>: <text>`` for a provider failure; the type name alone when the text is empty or fails."""
    try:
        text = str(exc)
    except Exception:
        return type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def copy_arguments(value: Any) -> Any:
    """A deep copy of JSON-shaped arguments, so nothing a tool does reaches the committed history.

    Dicts and lists (all that JSON arguments hold) are copied by hand, which is several times
    cheaper than ``copy.deepcopy``; anything else a ``prepare`` step may have made goes to it.
    """
    if isinstance(value, dict):
        return {key: copy_arguments(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_arguments(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return copy.deepcopy(value)


async def run_in_own_thread(fn: Callable[..., Any], /, **kwargs: Any) -> Any:
    """Run a blocking tool body on a thread of its own, in a copy of the current context.

    Not the default executor: a tool body that runs a nested ``runtime.exec`` blocks its thread
    until the nested run (whose own tools may need threads) ends, so a bounded pool could deadlock.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():
            return  # the caller stopped waiting (cancelled)
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def body() -> None:
        try:
            outcome = (True, context.run(fn, **kwargs))
        except BaseException as exc:  # handed to the loop; a cancelled nested exec lands here too
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                exc = RuntimeError(f"tool thread stopped: {type(exc).__name__}")
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:  # the loop has closed: nobody is waiting
            pass

    threading.Thread(target=body, name="openprogram-tool", daemon=True).start()
    return await future


# ---------------------------------------------------------------------------------------------
# Return values → results
# ---------------------------------------------------------------------------------------------


def _model_as_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_PLAIN_RESULTS = frozenset({str, type(None), int, float, bool, dict, list})  # never awaitable: no check needed


def text_result(text: str) -> AgentToolResult:
    """``AgentToolResult(content=text)`` for a ``str`` this package holds, built without validating it again."""
    block = trusted(TextContent, {"type": "text", "text": text}, _TEXT_SET)
    return trusted(AgentToolResult, {"content": (block,), "details": None, "is_error": False}, _CONTENT_SET)


_TEXT_SET = frozenset({"text"})
_CONTENT_SET = frozenset({"content"})


def to_tool_result(value: Any) -> AgentToolResult:
    """Turn whatever a tool function returned into the text the model will read.

    Pydantic models are dumped the same way as dicts (also inside lists and dicts), so a tool's
    output reads the same whichever of the two it returns.
    """
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return text_result("")
    if type(value) is str:
        return text_result(value)
    if isinstance(value, str):
        return AgentToolResult(content=value)
    try:
        return AgentToolResult(content=json.dumps(value, ensure_ascii=False, default=_model_as_json))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"tool returned a {type(value).__name__}, which is not JSON-serializable ({exc}); "
            "return a str, a JSON-able value, a pydantic model or an AgentToolResult"
        ) from None


def callable_executor(
    fn: Callable[..., Any],
    *,
    thread: bool = False,
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Execute:
    """Adapt a plain function taking keyword arguments to the ``AgentTool.execute`` signature.

    Sync functions run inline on the loop thread (cheap, and deterministic for tests) unless
    ``thread=True`` asks for a worker thread, which blocking I/O needs so the loop stays live.
    ``prepare`` turns the validated JSON arguments into the objects ``fn`` expects.
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    wants = {name for name in _SPECIAL_PARAMS if name in params}
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004

    async def execute(
        tool_call_id: str, args: dict[str, Any], cancel_event: asyncio.Event | None, on_update: OnUpdate | None
    ) -> AgentToolResult:
        kwargs = prepare(args) if prepare is not None else dict(args)
        if "cancel_event" in wants:
            kwargs["cancel_event"] = cancel_event
        if "on_update" in wants:
            kwargs["on_update"] = on_update if on_update is not None else (lambda _partial: None)
        if is_async:
            value = await fn(**kwargs)
        elif thread:
            if on_update is not None and "on_update" in wants:
                # Events are pushed on the loop's thread only; FIFO scheduling keeps them in order.
                loop = asyncio.get_running_loop()
                kwargs["on_update"] = lambda partial: loop.call_soon_threadsafe(on_update, partial)
            value = await run_in_own_thread(fn, **kwargs)
        else:
            value = fn(**kwargs)
            if type(value) not in _PLAIN_RESULTS and inspect.isawaitable(value):
                value = await value
        return to_tool_result(value)

    return execute


# ---------------------------------------------------------------------------------------------
# Menu entries → AgentTool
# ---------------------------------------------------------------------------------------------


def _coerce_spec(spec: Any, where: str) -> ToolSpec:
    if isinstance(spec, ToolSpec):
        return spec
    if isinstance(spec, Mapping):
        data = dict(spec)
        if data.get("type") == "function" and isinstance(data.get("function"), Mapping):
            data = dict(data["function"])  # OpenAI-style {"type": "function", "function": {...}}
        if "name" not in data:
            raise ValueError(
                f"{where}: the spec has no 'name'; give {{'name': ..., 'description': ..., 'parameters': ...}}"
            )
        parameters = data.get("parameters") or data.get("input_schema") or {"type": "object", "properties": {}}
        return ToolSpec(name=data["name"], description=data.get("description", ""), parameters=parameters)
    raise TypeError(f"{where}: the spec must be a ToolSpec or a dict, got {type(spec).__name__}")


def as_agent_tool(entry: Any) -> AgentTool:
    """Normalise one menu entry; the error says which entry was wrong and what would work."""
    if isinstance(entry, AgentTool):
        return entry
    to_agent_tool = getattr(entry, "to_agent_tool", None)
    if callable(to_agent_tool):
        return to_agent_tool()
    if isinstance(entry, Mapping):
        where = f"tool entry {dict(entry)!r:.80}"
        if "spec" not in entry:
            raise ValueError(f"{where} has no 'spec'; a dict tool is {{'spec': {{...}}, 'execute': callable}}")
        if not callable(entry.get("execute")):
            raise ValueError(
                f"{where} has a spec but no callable 'execute'; add 'execute': a function taking the arguments"
            )
        spec = _coerce_spec(entry["spec"], where)
        return AgentTool(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters,
            execute=callable_executor(entry["execute"], thread=bool(entry.get("thread", False))),
            source=entry.get("source"),
        )
    if hasattr(entry, "spec"):
        where = f"tool object {entry!r:.80}"
        if not callable(getattr(entry, "execute", None)):
            raise ValueError(
                f"{where} has a spec but no 'execute' method; add execute(**arguments), "
                "or decorate a function with @function"
            )
        spec = _coerce_spec(entry.spec, where)
        return AgentTool(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters,
            execute=callable_executor(entry.execute, thread=bool(getattr(entry, "thread", False))),
            source=getattr(entry, "source", None),
        )
    if callable(entry):
        name = getattr(entry, "__name__", repr(entry))
        raise TypeError(
            f"{name!r} is a plain callable, not a tool: decorate it with @function (or @agentic_function), "
            "or pass {'spec': {...}, 'execute': fn}"
        )
    raise TypeError(
        f"{entry!r:.80} is not a tool: use an @function / @agentic_function, a {{'spec', 'execute'}} dict, "
        "or an object with .spec and .execute"
    )


# ---------------------------------------------------------------------------------------------
# Schemas from signatures
# ---------------------------------------------------------------------------------------------

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?|See Also)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into the tool description and per-parameter descriptions.

    Understands Google style (``Args:`` then ``name (type): text``) and reST (``:param name:``),
    because those are what users already write; anything else is all description.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    arg_indent = 0
    for line in lines:
        if _ARGS_HEADER.match(line):
            section, current = "args", None
            continue
        if _SECTION_HEADER.match(line):
            section, current = "other", None
            continue
        rest = _REST_PARAM.match(line)
        if rest:
            current = rest.group(1)
            params[current] = rest.group(2).strip()
            section = "rest"
            continue
        if line.strip().startswith(":"):
            section, current = "other", None
            continue
        if section == "description":
            description.append(line)
        elif section == "args":
            match = _ARG_LINE.match(line)
            indent = len(line) - len(line.lstrip())
            if match and (current is None or indent <= arg_indent):
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
                arg_indent = indent
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
        elif section == "rest" and current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), params


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keywords: noise the model pays tokens for."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
                out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema


def signature_model(
    fn: Callable[..., Any],
    param_docs: Mapping[str, str] | None = None,
    localns: Mapping[str, Any] | None = None,
    where: str | None = None,
) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters: the source of both the schema and argument parsing.

    ``localns`` resolves postponed annotations that name classes local to the function that
    defined ``fn`` (a test body, a factory), which ``fn.__globals__`` alone cannot see.
    """
    where = where or fn.__qualname__
    check_parameters(fn, where)
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, localns=dict(localns) if localns else None, include_extras=True)
    except Exception as exc:  # a postponed annotation naming something undefined
        raise TypeError(f"cannot resolve the type hints of {fn.__qualname__}: {exc}") from exc
    fields: dict[str, Any] = {}
    docs = param_docs or {}
    for name, param in signature.parameters.items():
        if name in _SPECIAL_PARAMS or name in ("self", "cls"):
            continue
        annotation = hints.get(name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        if name in docs:
            fields[name] = (annotation, Field(default, description=docs[name]))
        else:
            fields[name] = (annotation, default)
    try:
        model = _arguments_model(f"{fn.__name__}_arguments", fields)
        model.model_json_schema()  # some types validate but have no JSON Schema (callables, say)
    except PydanticUserError as exc:
        for name, field in fields.items():
            try:
                _arguments_model("probe", {name: field}).model_json_schema()
            except PydanticUserError:
                raise ToolSchemaError(
                    f'{where}: parameter "{name}" has type {_type_name(field[0])}, which has no JSON Schema; '
                    "use a JSON-able type (str, int, float, bool, list, dict, Literal, a pydantic model, ...), "
                    "or give the tool a hand-written schema as a {'spec': {...}, 'execute': fn} dict"
                ) from exc
        raise ToolSchemaError(f"{where}: its parameters have no JSON Schema: {exc}") from exc
    return model


_PLAIN_TYPES = (str, int, float, bool)
_REQUIRED = object()
PlainPlan = tuple[tuple[str, tuple[type, ...], Any], ...]


def plain_fields(model: type[BaseModel]) -> PlainPlan | None:
    """``(name, exact types, default)`` per field if every field is a plain scalar, else None.

    For such a model, validating values whose type is exactly one of a field's types returns
    them unchanged (and a missing field its default), so a caller can skip pydantic for them:
    most tools take a few ``str``/``int``/``bool`` parameters, and validating those was a tenth
    of a loop round. Defaults must be immutable scalars (pydantic copies others per instance).
    """
    if model.__pydantic_decorators__.field_validators or model.__pydantic_decorators__.model_validators:
        return None
    plan = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if annotation in _PLAIN_TYPES:
            types: tuple[type, ...] = (annotation,)
        elif get_origin(annotation) in (Union, types_module.UnionType) and all(
            arg in _PLAIN_TYPES or arg is type(None) for arg in get_args(annotation)
        ):
            types = tuple(get_args(annotation))
        else:
            return None
        if field.metadata or field.alias or field.default_factory is not None:
            return None
        default = _REQUIRED if field.is_required() else field.default
        if default is not _REQUIRED and not (default is None or type(default) in _PLAIN_TYPES):
            return None
        plan.append((name, types, default))
    return tuple(plan)


def prepare_plain(plan: PlainPlan, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The validated keyword arguments, or None where pydantic must decide (a conversion, a missing or extra key)."""
    out = {}
    given = 0
    for name, types, default in plan:
        if name in args:
            value = args[name]
            if type(value) not in types:
                return None
            out[name] = value
            given += 1
        elif default is _REQUIRED:
            return None
        else:
            out[name] = default
    return out if given == len(args) else None  # an extra key: pydantic words the error


def _arguments_model(name: str, fields: Mapping[str, Any]) -> type[BaseModel]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # parameter names that shadow BaseModel attributes
        return create_model(  # type: ignore[call-overload, no-any-return]
            name,
            __config__=ConfigDict(arbitrary_types_allowed=False, extra="forbid"),
            **fields,
        )


def _type_name(annotation: Any) -> str:
    if inspect.isclass(annotation):
        module = annotation.__module__
        return annotation.__qualname__ if module == "builtins" else f"{module}.{annotation.__qualname__}"
    return repr(annotation).removeprefix("typing.")


class ToolSchemaError(TypeError):
    """A function that cannot be a tool as written: raised when it is decorated, naming the parameter."""


def check_parameters(fn: Callable[..., Any], where: str) -> None:
    """Refuse ``*args`` / ``**kwargs``: a model sends one JSON object of named fields, nothing else.

    Silently leaving them out of the schema would make a tool the model can never fully call;
    mapping ``**kwargs`` to ``additionalProperties`` would hide typos in argument names, which
    the schema's ``additionalProperties: false`` exists to report back to the model.
    """
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            star = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise ToolSchemaError(
                f'{where}: parameter "{star}{param.name}" cannot be sent by a model (tool arguments are one '
                "JSON object of named fields); declare each argument as a named parameter, "
                "or take one parameter of type dict or a pydantic model"
            )


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    schema = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    return schema


# ---------------------------------------------------------------------------------------------
# Argument validation
# ---------------------------------------------------------------------------------------------


class ToolArgumentsError(ValueError):
    """The model's arguments do not fit the schema; ``str(err)`` is the text fed back to it."""


_validators: weakref.WeakKeyDictionary[AgentTool, tuple[jsonschema.protocols.Validator | None, bool, bool]] = (
    weakref.WeakKeyDictionary()
)
"""Per tool: its validator (``None`` until first needed, for a schema the fast paths cover), and
``_checked_schema``'s two verdicts."""
_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _dangling_refs(schema: Any, root: Any, where: str = "#") -> list[str]:
    """Every ``$ref`` in ``schema`` that does not point at a part of this same schema."""
    found: list[str] = []
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref != "#" and _pointer(ref, root) is _MISSING:
            found.append(f"{where}: $ref {ref!r}")
        for key, value in schema.items():
            found += _dangling_refs(value, root, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _dangling_refs(value, root, f"{where}/{index}")
    return found


_MISSING: Any = object()


def _pointer(ref: str, root: Any) -> Any:
    if not ref.startswith("#/"):
        return _MISSING  # remote references cannot be resolved offline, before any request
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def check_tool(tool: AgentTool) -> None:
    """Refuse a tool no provider could be shown: a bad name, an invalid schema, a dangling ``$ref``.

    Called when a menu is built, so a bad entry is refused at once, naming it, before any request
    (cached per tool, so a run pays nothing for tools it has already checked).
    """
    _validator_for(tool)


def _validator_for(tool: AgentTool) -> tuple[jsonschema.protocols.Validator | None, bool, bool]:
    """The tool's JSON Schema validator (``None``: a Draft 2020-12 one, not built yet), whether its
    schema is simple enough for ``_fits``, and whether ``_coerce`` leaves every value that fits it
    unchanged (see ``_transparent``)."""
    entry = _validators.get(tool)
    if entry is None:
        if not isinstance(tool.name, str) or not _TOOL_NAME.match(tool.name):
            raise ValueError(
                f"tool {tool.name!r}: the name must match ^[A-Za-z0-9_-]{{1,64}}$ (letters, digits, _ and -, "
                "at most 64), which is what every provider accepts"
            )
        if not isinstance(tool.parameters, Mapping):
            raise ValueError(f'tool "{tool.name}" has an invalid parameters schema: not a JSON object')
        cls, simple, transparent = _checked_schema(tool)
        entry = (None if cls is None else cls(tool.parameters), simple, transparent)
        _validators[tool] = entry
    return entry


def _validator(tool: AgentTool) -> jsonschema.protocols.Validator:
    """The tool's validator, built (and jsonschema imported) the first time arguments need it."""
    validator, simple, transparent = _validator_for(tool)
    if validator is None:
        import jsonschema

        validator = jsonschema.Draft202012Validator(tool.parameters)
        _validators[tool] = (validator, simple, transparent)
    return validator


_checked: dict[str, tuple[Any, bool, bool]] = {}
"""Schemas already found valid, by their JSON text (with the validator class, ``None`` for Draft
2020-12, and the two verdicts): checking one against its metaschema costs
about 0.8 ms (using it, microseconds), and tests, campaigns and servers build the same tools again
and again, as new objects. Bounded: cleared when it reaches ``_CHECKED_MAX`` entries."""
_CHECKED_MAX = 1024


_TEXT_KEYWORDS = frozenset({"title", "description", "$comment", "format"})
_ANY_KEYWORDS = frozenset({"default", "const"})
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNT_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_SCHEMA_MAPS = frozenset({"properties", "$defs"})
_LOCAL_REF = re.compile(r"^#(/[A-Za-z0-9_.~$-]+)*$")


def _plainly_valid(schema: Any, depth: int) -> bool:
    """True only for a schema the 2020-12 metaschema surely accepts: made of the keywords tools
    and signatures use, each of the right form (False: ``check_schema`` decides).

    The metaschema check costs about 2.5 ms a schema (jsonschema resolves the metaschema's
    ``$dynamicRef``s at every level), this a few microseconds, and every new schema paid it when
    its tool was first used. A property test holds it to never accepting what jsonschema refuses.
    """
    if depth > 16 or type(schema) is not dict:
        return False
    for key, value in schema.items():
        if key in _TEXT_KEYWORDS:
            ok = isinstance(value, str)
        elif key in _ANY_KEYWORDS:
            ok = True
        elif key == "type":
            names = value if type(value) is list else [value]
            known = all(type(t) is str and t in _JSON_TYPES for t in names)
            ok = bool(names) and known and len(set(names)) == len(names)
        elif key == "enum":
            ok = type(value) is list
        elif key == "required":
            ok = type(value) is list and all(type(n) is str for n in value) and len(set(value)) == len(value)
        elif key in _SCHEMA_MAPS:
            ok = type(value) is dict and all(_plainly_valid(sub, depth + 1) for sub in value.values())
        elif key in ("items", "additionalProperties"):
            ok = type(value) is bool or _plainly_valid(value, depth + 1)
        elif key == "anyOf":
            ok = type(value) is list and bool(value) and all(_plainly_valid(sub, depth + 1) for sub in value)
        elif key in _NUMBER_KEYWORDS:
            ok = type(value) in (int, float) and value == value and abs(value) != float("inf")
        elif key in _COUNT_KEYWORDS:
            ok = type(value) is int and value >= 0
        elif key == "$ref":
            ok = type(value) is str and _LOCAL_REF.match(value) is not None
        else:
            return False
        if not ok:
            return False
    return True


def _checked_schema(tool: AgentTool) -> tuple[Any, bool, bool]:
    """The validator class of a valid schema (``None``: Draft 2020-12, the default, for a schema
    ``_plainly_valid`` accepts, which has no ``$schema`` to name another), whether it is simple,
    whether coercion is transparent."""
    try:
        key: str | None = json.dumps(tool.parameters, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON text (a tuple key, NaN, ...): checked every time
        key = None
    found = _checked.get(key) if key is not None else None
    if found is not None:
        return found
    cls: Any = None
    if not _plainly_valid(tool.parameters, 0):
        import jsonschema

        cls = jsonschema.validators.validator_for(tool.parameters, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(tool.parameters)
        except jsonschema.SchemaError as exc:
            raise ValueError(f'tool "{tool.name}" has an invalid parameters schema: {exc.message}') from None
    dangling = _dangling_refs(tool.parameters, tool.parameters)
    if dangling:
        raise ValueError(f'tool "{tool.name}" has a parameters schema whose $ref points nowhere: {"; ".join(dangling)}')
    simple = _is_simple(tool.parameters, tool.parameters, 0)
    found = (cls, simple, simple and _transparent(tool.parameters, tool.parameters, 0))
    if key is not None:
        if len(_checked) >= _CHECKED_MAX:
            _checked.clear()
        _checked[key] = found
    return found


# A fast path for the schemas signatures produce. ``jsonschema`` costs ~20 µs per call, most of a
# loop round; ``_fits`` checks the common keywords directly. It only ever *accepts*: anything it
# does not accept (or a schema using other keywords) goes to jsonschema, which also words the
# errors, so the verdict and every error text are jsonschema's.
_ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema"}
)
_SIMPLE_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf"}
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})


def _lookup(ref: Any, root: Mapping[str, Any]) -> Any:
    """The local definition ``ref`` points at (``#/$defs/Name``), or None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _is_simple(schema: Any, root: Mapping[str, Any], depth: int) -> bool:
    if depth > 16 or not isinstance(schema, Mapping):
        return False  # recursive models and boolean schemas: leave them to jsonschema
    keys = set(schema) - ({"$defs", "definitions"} if depth == 0 else set())
    if "$ref" in schema:
        return keys - _ANNOTATIONS == {"$ref"} and _is_simple(_lookup(schema["$ref"], root), root, depth + 1)
    if not keys <= _SIMPLE_KEYWORDS:
        return False
    declared = schema.get("type")
    declared_list = declared if isinstance(declared, list) else [declared]
    if declared is not None and not all(isinstance(t, str) and t in _JSON_TYPES for t in declared_list):
        return False
    enum = schema.get("enum")
    if enum is not None and not (isinstance(enum, list) and all(isinstance(item, str) for item in enum)):
        return False
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(name, str) for name in required)):
        return False
    extra = schema.get("additionalProperties", True)
    subschemas = [
        *(schema.get("properties") or {}).values(),
        *(schema.get("anyOf") or ()),
        *([schema["items"]] if "items" in schema else []),
        *([] if isinstance(extra, bool) else [extra]),
    ]
    return all(_is_simple(sub, root, depth + 1) for sub in subschemas)


def _scalar_branch(branch: Any) -> bool:
    if not isinstance(branch, Mapping) or "type" not in branch or {"properties", "items", "anyOf"} & set(branch):
        return False
    declared = branch["type"]
    declared_list = declared if isinstance(declared, list) else [declared]
    if "object" in declared_list or "array" in declared_list:
        return False
    return "enum" not in branch or "string" in declared_list


def _transparent(schema: Any, root: Mapping[str, Any], depth: int) -> bool:
    """Whether ``_coerce`` returns every value that ``_fits`` this simple schema unchanged.

    Coercion only rewrites a string where the schema allows no string but some other type.
    Where a value fits, its place allows its type, so a fitting string is left alone, unless an
    ``anyOf`` lets it fit through a branch that coercion does not look at (an untyped ``enum``,
    an object branch whose properties coerce differently). Schemas without such branches (all
    that signatures produce) can skip coercion for arguments that already fit.
    """
    if depth > 16 or not isinstance(schema, Mapping):
        return False
    if "$ref" in schema:
        return _transparent(_lookup(schema["$ref"], root), root, depth + 1)
    any_of = schema.get("anyOf")
    if any_of is not None and ("enum" in schema or not all(_scalar_branch(_resolve(b, root)) for b in any_of)):
        return False
    extra = schema.get("additionalProperties", True)
    subschemas = [
        *(schema.get("properties") or {}).values(),
        *([schema["items"]] if "items" in schema else []),
        *([] if isinstance(extra, bool) else [extra]),
    ]
    return all(_transparent(sub, root, depth + 1) for sub in subschemas)


def _has_type(value: Any, declared: Any) -> bool:
    if isinstance(declared, list):
        return any(_has_type(value, t) for t in declared)
    if declared == "string":
        return isinstance(value, str)
    if declared == "integer":  # floats such as 2.0 are integers to JSON Schema: jsonschema decides
        return isinstance(value, int) and not isinstance(value, bool)
    if declared == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if declared == "boolean":
        return isinstance(value, bool)
    if declared == "object":
        return isinstance(value, dict)
    if declared == "array":
        return isinstance(value, list)
    return value is None  # "null"


def _fits(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    """True only if ``value`` is valid against a simple ``schema`` (False: ask jsonschema)."""
    if "$ref" in schema:
        return _fits(value, _lookup(schema["$ref"], root), root)
    declared = schema.get("type")
    if declared is not None and not _has_type(value, declared):
        return False
    enum = schema.get("enum")
    if enum is not None and not (isinstance(value, str) and value in enum):
        return False
    any_of = schema.get("anyOf")
    if any_of is not None and not any(_fits(value, branch, root) for branch in any_of):
        return False
    if isinstance(value, dict):
        if any(name not in value for name in schema.get("required", ())):
            return False
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                sub = extra
                if sub is True:
                    continue
                if sub is False:
                    return False
            if not _fits(item, sub, root):
                return False
    elif isinstance(value, list) and "items" in schema:
        return all(_fits(item, schema["items"], root) for item in value)
    return True


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    seen = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, Mapping) else {}
        schema = node
        seen += 1
    return schema


def _types_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> set[str]:
    types: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        types.add(declared)
    elif isinstance(declared, list):
        types.update(t for t in declared if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, ()) or ():
            branch = _resolve(branch, root)
            if isinstance(branch, Mapping):
                types |= _types_of(branch, root)
    return types


def _coerce(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """Apply the small coercions models need (``" 5 "`` → 5, ``"true"`` → True, ``"null"`` → None).

    Only strings are coerced, only toward a type the schema allows and the string does not
    already satisfy, so valid arguments pass through unchanged.
    """
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return value
    for key in ("allOf",):
        for branch in schema.get(key, ()) or ():
            value = _coerce(value, branch, root)
    if isinstance(value, str):
        types = _types_of(schema, root)
        if "string" in types or not types:
            return value
        text = value.strip()
        if "integer" in types and _INT.match(text):
            return int(text)
        if "number" in types and _NUMBER.match(text):
            number = float(text)
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if "boolean" in types and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "null" in types and text.lower() in ("null", "none", ""):
            return None
        return value
    if isinstance(value, dict):
        branches = [schema, *(_resolve(b, root) for b in (schema.get("anyOf") or schema.get("oneOf") or ()))]
        out = dict(value)
        for branch in branches:
            if not isinstance(branch, Mapping):
                continue
            props = branch.get("properties") or {}
            for key, sub in props.items():
                if key in out:
                    out[key] = _coerce(out[key], sub, root)
            extra = branch.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key in out:
                    if key not in props:
                        out[key] = _coerce(out[key], extra, root)
        return out
    if isinstance(value, list):
        branches = [schema, *(_resolve(b, root) for b in (schema.get("anyOf") or schema.get("oneOf") or ()))]
        for branch in branches:
            if isinstance(branch, Mapping) and isinstance(branch.get("items"), Mapping):
                return [_coerce(item, branch["items"], root) for item in value]
        return value
    return value


def _error_path(error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    return ".".join(str(part) for part in path) if path else "root"


def validate_tool_arguments(tool: AgentTool, tool_call: ToolCall) -> dict[str, Any]:
    """Check the model's arguments against the tool's schema, after light coercion.

    Returns the (coerced) arguments. Raises ``ToolArgumentsError`` whose text is what the model
    reads: one ``  - PATH: MESSAGE`` line per error, then the arguments it sent, so it can fix
    exactly what was wrong on its next turn.
    """
    _, simple, transparent = _validator_for(tool)
    if transparent and _fits(tool_call.arguments, tool.parameters, tool.parameters):
        return dict(tool_call.arguments)  # what coercion would return, found without walking the schema twice
    args = _coerce(dict(tool_call.arguments), tool.parameters, tool.parameters)
    if simple and _fits(args, tool.parameters, tool.parameters):
        return args
    errors = sorted(_validator(tool).iter_errors(args), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if not errors:
        return args
    lines = "\n".join(f"  - {_error_path(error)}: {error.message}" for error in errors)
    received = json.dumps(tool_call.arguments, indent=2, ensure_ascii=False, default=str)
    raise ToolArgumentsError(f'Validation failed for tool "{tool.name}":\n{lines}\n\nReceived arguments:\n{received}')


__all__ = [
    "AgentTool",
    "AgentToolResult",
    "Execute",
    "OnUpdate",
    "ToolArgumentsError",
    "as_agent_tool",
    "callable_executor",
    "check_tool",
    "copy_arguments",
    "describe_exception",
    "exception_text",
    "parse_docstring",
    "plain_fields",
    "prepare_plain",
    "run_in_own_thread",
    "schema_of",
    "text_result",
    "signature_model",
    "ToolSchemaError",
    "check_parameters",
    "to_tool_result",
    "validate_tool_arguments",
]
