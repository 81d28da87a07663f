"""``@function`` and ``@agentic_function``: ordinary Python functions that a model can pick.

Decorating does three things: it derives the tool spec from the signature and docstring (so the
schema can never drift from the code), registers the function in one registry (so ``exec``
offers every tool by default), and keeps the function callable as plain Python.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, Literal, ParamSpec, Protocol, TypeVar, overload

from pydantic import BaseModel

from openprogram.tools import (
    AgentTool,
    PlainPlan,
    ToolSchemaError,
    callable_executor,
    check_parameters,
    parse_docstring,
    plain_fields,
    prepare_plain,
    schema_of,
    signature_model,
)
from openprogram.types import ToolSpec

F = TypeVar("F", bound=Callable[..., Any])


_P = ParamSpec("_P")
_R = TypeVar("_R")


class Function(Generic[_P, _R]):
    """A decorated function: callable as itself, and a tool through ``.spec`` / ``.execute``.

    Generic in the function's parameters and result, so a call through the decorator is checked
    against the function as written."""

    kind = "function"
    default_thread = False
    """Sync bodies run inline on the loop thread: cheap, and deterministic for tests."""

    def __init__(
        self,
        fn: Callable[_P, _R],
        *,
        name: str | None = None,
        description: str | None = None,
        source: str | None = None,
        toolset: str | Iterable[str] | None = None,
        thread: bool | None = None,
        localns: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"@{self.kind} decorates a function, got {type(fn).__name__}")
        functools.update_wrapper(self, fn)
        self.fn: Callable[..., _R] = fn  # also called with the loop's JSON keywords (execute)
        doc_description, self._param_docs = parse_docstring(fn.__doc__)
        self.name = name or fn.__name__
        self.description = description if description is not None else doc_description
        self.source = source or getattr(fn, "__module__", None) or ""
        self.toolsets = frozenset([toolset] if isinstance(toolset, str) else (toolset or ()))
        self.thread = self.default_thread if thread is None else thread
        self._localns = localns
        self._model: type[BaseModel] | None = None
        self._tool: AgentTool | None = None
        self._plain: PlainPlan | Literal[False] | None = None  # plain_fields(arguments_model), False: not plain
        check_parameters(fn, self._where)

    @property
    def _where(self) -> str:
        return f"@{self.kind} {self.name}"

    @property
    def definition(self) -> str:
        """``module:qualname (file:line)``: where this tool was written, for messages about it."""
        code = getattr(self.fn, "__code__", None)
        place = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
        return f"{getattr(self.fn, '__module__', '?')}:{getattr(self.fn, '__qualname__', self.name)}{place}"

    def _same_definition(self, other: Function[..., Any]) -> bool:
        """The same source definition run again (a module reload, a re-run cell, a factory)."""
        mine, theirs = self.fn, other.fn
        return (getattr(mine, "__module__", None), getattr(mine, "__qualname__", None)) == (
            getattr(theirs, "__module__", None),
            getattr(theirs, "__qualname__", None),
        )

    def _is_live(self) -> bool:
        """Whether the module that defined this tool is still the one imported under its name.

        A module dropped from ``sys.modules`` or imported afresh (pytester restoring modules
        between runs, a hot reloader) leaves its tools behind as stale entries: those give way.
        """
        module = sys.modules.get(getattr(self.fn, "__module__", None) or "")
        return module is not None and vars(module) is getattr(self.fn, "__globals__", None)

    def check_schema(self) -> None:
        """Build the schema now, so a type hint with no JSON Schema fails where it is written.

        A postponed annotation naming a class not defined yet cannot be resolved at decoration
        time; that tool is checked when its spec is first needed (with the same error).
        """
        try:
            _ = self.arguments_model
        except ToolSchemaError:
            raise
        except TypeError:
            pass

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name}>"

    # Built lazily: a postponed annotation may name a class defined after the decorator ran.
    @property
    def arguments_model(self) -> type[BaseModel]:
        if self._model is None:
            self._model = signature_model(self.fn, self._param_docs, self._localns, where=self._where)
        return self._model

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=schema_of(self.arguments_model))

    def _prepare(self, args: dict[str, Any]) -> dict[str, Any]:
        """JSON arguments → Python values (pydantic models, enums) the way the signature declares."""
        plan = self._plain
        if plan is None:
            found = plain_fields(self.arguments_model)
            plan = self._plain = found if found is not None else False
        if plan is not False:
            prepared = prepare_plain(plan, args)
            if prepared is not None:
                return prepared
        parsed = self.arguments_model.model_validate(args)
        return {field: getattr(parsed, field) for field in type(parsed).model_fields}

    def execute(self, **kwargs: Any) -> _R:
        """Run with JSON-style keyword arguments, as the loop does."""
        return self.fn(**self._prepare(kwargs))

    def to_agent_tool(self) -> AgentTool:
        if self._tool is None:
            spec = self.spec
            self._tool = AgentTool(
                name=spec.name,
                description=spec.description,
                parameters=spec.parameters,
                execute=callable_executor(self.fn, thread=self.thread, prepare=self._prepare),
                source=self.source,
            )
        return self._tool


class AgenticFunction(Function[_P, _R]):
    """A function whose body asks a model (``runtime.exec``); as a tool it opens a nested loop."""

    kind = "agentic_function"
    default_thread = True
    """A sync body runs on a thread of its own: its ``runtime.exec`` blocks that thread while the
    nested run goes on in the outer run's own event loop, with the outer provider's SDK client
    (an async client is bound to the loop that made it, so a second loop could not use it)."""


class Registry:
    """Every decorated function by name: what ``exec`` offers when no menu is given."""

    def __init__(self) -> None:
        self._functions: dict[str, Function[..., Any]] = {}

    def register(self, fn: Function[..., Any]) -> None:
        """Add ``fn``; a second tool under a taken name is refused, since the model could reach only one.

        The same definition registered again (a module reloaded, a notebook cell re-run, a
        factory called twice) replaces the earlier one, as does any tool whose module is no
        longer the one imported (see ``_is_live``).
        """
        existing = self._functions.get(fn.name)
        if existing is not None and existing is not fn and not fn._same_definition(existing) and existing._is_live():
            raise ValueError(
                f'two tools are named "{fn.name}": {existing.definition} and {fn.definition}; '
                f"rename one (@{fn.kind}(name=...)), or keep it out of the registry with register=False"
            )
        self._functions[fn.name] = fn

    def unregister(self, name: str) -> None:
        self._functions.pop(name, None)

    def get(self, name: str) -> Function[..., Any] | None:
        return self._functions.get(name)

    def __iter__(self) -> Iterator[Function[..., Any]]:
        return iter(list(self._functions.values()))

    def __len__(self) -> int:
        return len(self._functions)

    def toolset(self, name: str) -> list[Function[..., Any]]:
        """``"full"``: everything; ``"none"``: nothing; else the functions tagged with that toolset."""
        if name == "none":
            return []
        if name == "full":
            return list(self)
        members = [fn for fn in self if name in fn.toolsets]
        if not members:
            known = sorted({t for fn in self for t in fn.toolsets})
            raise ValueError(
                f"unknown toolset {name!r}: use 'full', 'none' or one of {known or 'the toolsets given with '}"
                + ("" if known else "@function(toolset=...)")
            )
        return members

    @contextlib.contextmanager
    def isolated(self) -> Iterator[Registry]:
        """Start empty and restore afterwards: keeps tests from seeing each other's tools."""
        saved = dict(self._functions)
        self._functions.clear()
        try:
            yield self
        finally:
            self._functions.clear()
            self._functions.update(saved)


registry = Registry()


def _caller_locals() -> Mapping[str, Any] | None:
    """The locals of the code applying the decorator, when that is a function body.

    With postponed annotations, ``x: Local`` is the string ``"Local"``; if ``Local`` is a class
    defined in the same function as the tool, only that function's locals can resolve it.
    """
    frame = sys._getframe(2)
    return None if frame.f_locals is frame.f_globals else frame.f_locals


def _decorator(cls: type[Function[..., Any]]) -> Callable[..., Any]:
    def decorate(
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        source: str | None = None,
        toolset: str | Iterable[str] | None = None,
        thread: bool | None = None,
        register: bool = True,
    ) -> Any:
        localns = _caller_locals()

        def wrap(target: Callable[..., Any]) -> Function[..., Any]:
            if inspect.isclass(target):
                raise TypeError(f"@{cls.kind} decorates functions, not classes ({target.__name__})")
            wrapped = cls(
                target,
                name=name,
                description=description,
                source=source,
                toolset=toolset,
                thread=thread,
                localns=localns,
            )
            wrapped.check_schema()
            if register:
                registry.register(wrapped)
            return wrapped

        return wrap(fn) if fn is not None else wrap

    decorate.__name__ = cls.kind
    decorate.__doc__ = f"Make a function pickable by a model (``@{cls.kind}`` or ``@{cls.kind}(name=...)``)."
    return decorate


class _FunctionDecorator(Protocol):
    """``@function`` and ``@function(name=..., ...)``, as a type checker sees them."""

    @overload
    def __call__(self, fn: Callable[_P, _R], /) -> Function[_P, _R]: ...
    @overload
    def __call__(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        source: str | None = None,
        toolset: str | Iterable[str] | None = None,
        thread: bool | None = None,
        register: bool = True,
    ) -> Callable[[Callable[_P, _R]], Function[_P, _R]]: ...


class _AgenticFunctionDecorator(Protocol):
    """``@agentic_function`` and ``@agentic_function(name=..., ...)``, as a type checker sees them."""

    @overload
    def __call__(self, fn: Callable[_P, _R], /) -> AgenticFunction[_P, _R]: ...
    @overload
    def __call__(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        source: str | None = None,
        toolset: str | Iterable[str] | None = None,
        thread: bool | None = None,
        register: bool = True,
    ) -> Callable[[Callable[_P, _R]], AgenticFunction[_P, _R]]: ...


# Not wrapped in typed functions: the decorator reads its caller's locals two frames up.
function: _FunctionDecorator = _decorator(Function)
agentic_function: _AgenticFunctionDecorator = _decorator(AgenticFunction)


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Names or glob patterns (``"fs_*"``), the syntax of ``tools_allow`` / ``tools_deny``."""
    return any(name == pattern or fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


__all__ = ["AgenticFunction", "Function", "Registry", "agentic_function", "function", "matches", "registry"]
