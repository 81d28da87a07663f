"""Tools as the loop sees them: a spec to show the model and an ``execute`` to run its pick.

Everything a user can put on the menu (a decorated function, a ``{"spec", "execute"}`` dict, an
object with ``.spec`` / ``.execute``) is normalised here into one ``AgentTool``, so the loop has
exactly one kind of thing to call. Arguments are checked in ``openprogram.tool_arguments``,
whose public names (``check_tool``, ``validate_tool_arguments``, ``ToolArgumentsError``) this
module re-exports.
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
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, create_model, field_validator

from openprogram.tool_arguments import ToolArgumentsError, check_tool, validate_tool_arguments
from openprogram.types import FROZEN_ANY, TextContent, ToolSpec, trusted

OnUpdate = Callable[[Any], None]
"""Called by a tool with partial results while it runs; each becomes ``tool_execution_update``."""

Execute = Callable[[str, dict[str, Any], "asyncio.Event | None", "OnUpdate | None"], Awaitable["AgentToolResult"]]

_SPECIAL_PARAMS = ("cancel_event", "on_update")


class AgentToolResult(BaseModel):
    """What a tool gives back. ``is_error=True`` tells the model the call failed without raising."""

    model_config = FROZEN_ANY
    content: tuple[TextContent, ...] = ()
    details: Any = None
    is_error: bool = False

    if TYPE_CHECKING:
        # What callers pass: the validator below turns a str into one text block. Declared for
        # type checkers only, so pydantic's own __init__ (and the fields a call sets) is untouched.
        def __init__(
            self, *, content: str | Iterable[TextContent] = ..., details: Any = ..., is_error: bool = ...
        ) -> None: ...

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
    params: Mapping[str, inspect.Parameter]
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
        tool: AgentTool = to_agent_tool()
        return tool
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
PlainPlan = tuple[tuple[str, tuple[object, ...], Any], ...]


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
            types: tuple[object, ...] = (annotation,)
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
        return create_model(
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
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())  # a dict stays one
    schema.setdefault("properties", {})
    return schema


__all__ = [
    "AgentTool",
    "AgentToolResult",
    "Execute",
    "OnUpdate",
    "PlainPlan",
    "ToolArgumentsError",
    "as_agent_tool",
    "callable_executor",
    "check_tool",
    "copy_arguments",
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
