# SPDX-License-Identifier: Apache-2.0
"""A small runtime for the Python code that Jinja2 compiles gpusub's templates to (pure).

Jinja2 stays the template language and the compiler: ``Environment.compile(source, raw=True)`` turns each
template into a module of plain Python whose ``root(context)`` yields the text. Running that code needs
only a handful of names from ``jinja2.runtime`` and a few methods of the environment and the context.
This module provides exactly those, so that a warm gpusub renders from the compiled code it cached
(:mod:`slurm_gpu.submit.fast_templates`) without importing Jinja2, which with what it pulls in is most of
gpusub's start-up (benchmarks/bench_submit.py). Semantics are Jinja2's for what the templates use:
StrictUndefined (a missing variable is an error), ``obj.attr`` falling back to ``obj["attr"]``, the
``join`` and ``map`` filters and the project's own filters; autoescape off. A compiled template that
needs any other runtime name is refused (:func:`runtime_names_supported`) and Jinja2 renders it.
tests/render/test_fast_templates.py renders every golden case both ways and compares the text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

RUNTIME_VERSION = 1  # bump when this runtime changes what it accepts: cached code is rebuilt
IMPORT_PREFIX = "from jinja2.runtime import "


class RenderError(Exception):
    """A template used an undefined variable or something this runtime does not offer."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "missing"


missing = _Missing()


class StrictUndefined:
    """An undefined value: any use of it is an error (as jinja2.StrictUndefined)."""

    __slots__ = ("_name",)

    def __init__(self, hint: Any = None, obj: Any = missing, name: str | None = None, exc: Any = None) -> None:
        self._name = name

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise RenderError(f"{self._name!r} is undefined")

    __str__ = __iter__ = __len__ = __bool__ = __call__ = __getitem__ = __eq__ = __hash__ = _fail

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._fail()


def _unsupported(name: str) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RenderError(f"jinja2.runtime.{name} is not offered by the fast renderer")
    return fail


def _str_join(seq: Iterable[Any]) -> str:
    return "".join(map(str, seq))


# What the compiled code imports from jinja2.runtime (autoescape off: markup is plain text).
RUNTIME: dict[str, Any] = {
    "missing": missing,
    "Undefined": StrictUndefined,
    "str_join": _str_join,
    "markup_join": _str_join,
    "escape": str,
    "Markup": str,
    "identity": lambda x: x,
    "internalcode": lambda f: f,
    **{name: _unsupported(name) for name in ("LoopContext", "Macro", "Namespace", "TemplateNotFound",
                                              "TemplateReference", "TemplateRuntimeError")},
}


def runtime_names_supported(code_text: str) -> str | None:
    """The module text without its ``from jinja2.runtime import ...`` line, or None when that line
    names something this runtime does not provide (then Jinja2 itself must render)."""
    first, _, rest = code_text.partition("\n")
    if not first.startswith(IMPORT_PREFIX):
        return None
    names = [n.strip() for n in first[len(IMPORT_PREFIX):].split(",")]
    if any(n not in RUNTIME for n in names):
        return None
    return "\n" + rest  # keep the line numbers of the compiled code


class _EvalContext:
    __slots__ = ()
    autoescape = False


class Context:
    """What compiled code asks of its context: variables, all of them, and the evaluation context."""

    __slots__ = ("vars", "environment")
    eval_ctx = _EvalContext()

    def __init__(self, environment: Environment, variables: Mapping[str, Any]) -> None:
        self.environment, self.vars = environment, variables

    def resolve_or_missing(self, key: str) -> Any:
        return self.vars.get(key, missing)

    def get_all(self) -> Mapping[str, Any]:
        return self.vars


class Template:
    __slots__ = ("environment", "root_render_func")

    def __init__(self, environment: Environment, root: Callable[..., Iterator[str]]) -> None:
        self.environment, self.root_render_func = environment, root

    def new_context(self, variables: Mapping[str, Any] | None = None, shared: bool = False,
                    locals: Mapping[str, Any] | None = None) -> Context:
        merged = dict(variables or {})
        merged.update({k: v for k, v in (locals or {}).items() if v is not missing})
        return Context(self.environment, merged)

    def render(self, **variables: Any) -> str:
        return "".join(self.root_render_func(self.new_context(variables)))


def _join(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        raise RenderError("join(attribute=...) is not offered by the fast renderer")
    return str(d).join(map(str, value))


class Environment:
    """Compiled templates (name -> code object) run with this runtime and the given filters."""

    concat = staticmethod("".join)

    def __init__(self, codes: Mapping[str, Any], filters: Mapping[str, Callable[..., Any]]) -> None:
        self._codes = dict(codes)
        self._templates: dict[str, Template] = {}
        self.filters: dict[str, Callable[..., Any]] = {"join": _join, "map": self._map, **filters}

    def _map(self, context: Any, value: Iterable[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        if not args or not isinstance(args[0], str) or kwargs:
            raise RenderError("only map('filter', ...) is offered by the fast renderer")
        func = self.filters[args[0]]
        return (func(item, *args[1:]) for item in value)

    def undefined(self, hint: Any = None, obj: Any = missing, name: str | None = None, exc: Any = None) -> Any:
        return StrictUndefined(name=name)

    def getattr(self, obj: Any, attribute: str) -> Any:
        try:
            return getattr(obj, attribute)
        except AttributeError:
            pass
        try:
            return obj[attribute]
        except (TypeError, LookupError, AttributeError):
            return StrictUndefined(name=attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        try:
            return obj[argument]
        except (AttributeError, TypeError, LookupError):
            if isinstance(argument, str):
                try:
                    return getattr(obj, argument)
                except AttributeError:
                    pass
            return StrictUndefined(name=str(argument))

    def get_template(self, name: str, parent: str | None = None) -> Template:
        template = self._templates.get(name)
        if template is None:
            if name not in self._codes:
                raise RenderError(f"template {name!r} is not compiled")
            namespace: dict[str, Any] = dict(RUNTIME, environment=self, __name__=f"fast:{name}")
            exec(self._codes[name], namespace)  # the user's own private cache entry (see fast_templates)
            template = self._templates[name] = Template(self, namespace["root"])
        return template


__all__ = ["Environment", "RenderError", "runtime_names_supported", "RUNTIME_VERSION", "StrictUndefined"]
