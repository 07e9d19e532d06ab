"""A Python function as the RAG under test, and the shaping of whatever it returns into an :class:`Answer`."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.reply_shapes import coerce_answer
from ragreplay.core.types import Answer, Case
from ragreplay.errors import ConfigError, InputProblem, describe_exception
from ragreplay.targets.base import TargetBase
from ragreplay.targets.config import PythonTargetConfig, expand_env

log = logging.getLogger(__name__)


# Parameter names a RAG function may ask for, and what each receives.
_SOURCES: dict[str, Callable[[str, Case], Any]] = {
    "question": lambda q, c: q,
    "query": lambda q, c: q,
    "case": lambda q, c: c,
    "history": lambda q, c: [{"role": m.role.value, "content": m.content} for m in c.history],
    "user_id": lambda q, c: c.user_id,
    "conversation_id": lambda q, c: c.conversation_id,
    "tags": lambda q, c: dict(c.tags),
    "turn_index": lambda q, c: c.turn_index,
}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def plan_call(fn: Callable[..., Any]) -> tuple[list[str], dict[str, str]]:
    """Decide from ``fn``'s signature what to pass: positional sources and keyword -> source names.

    Parameters named like a source (question, case, history, user_id, ...) get it; other positional
    parameters without a default get the question, then the case. Raises ValueError if a parameter cannot
    be filled.
    """
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return ["question"], {}
    named = {p.name for p in params if p.name in _SOURCES}
    unnamed_fill = [] if {"question", "query"} & named else ["question"]
    if "case" not in named:
        unnamed_fill.append("case")
    args: list[str] = []
    kwargs: dict[str, str] = {}
    for p in params:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if p.name in _SOURCES:
            source = p.name
        elif p.kind in _POSITIONAL and p.default is inspect.Parameter.empty and unnamed_fill:
            source = unnamed_fill.pop(0)
        elif p.default is not inspect.Parameter.empty:
            continue
        else:
            raise ValueError(
                f"cannot tell what to pass to parameter '{p.name}'; known: {', '.join(_SOURCES)}"
            )
        if p.kind == inspect.Parameter.POSITIONAL_ONLY:
            args.append(source)
        else:
            kwargs[p.name] = source
    if not args and not kwargs:
        raise ValueError("takes no parameters; it must accept at least the question")
    return args, kwargs


class PythonTarget(TargetBase):
    """Calls a Python function per question; sync functions run in a worker thread."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        version: str | None = None,
        closer: Callable[[], Any] | None = None,
    ) -> None:
        try:
            self._args, self._kwargs = plan_call(fn)
        except ValueError as exc:
            raise ConfigError(f"function {getattr(fn, '__qualname__', fn)!r} {exc}") from None
        self._fn = fn
        # An instance with an async __call__ is async too.
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
        qualname = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', type(fn).__name__)}"
        self._name = name or qualname
        self._version = version or content_hash({"kind": "python", "function": qualname})
        self._closer = closer

    async def answer(self, question: str, case: Case) -> Answer:
        """Call the function; any exception or bad return value becomes ``Answer.error``."""
        args = [_SOURCES[s](question, case) for s in self._args]
        kwargs = {k: _SOURCES[s](question, case) for k, s in self._kwargs.items()}
        start = time.perf_counter()
        try:
            if self._is_async:
                result = await self._fn(*args, **kwargs)
            else:
                result = await asyncio.to_thread(self._fn, *args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            elapsed = (time.perf_counter() - start) * 1000
            shaped = coerce_answer(result)
        except Exception as exc:
            elapsed = (time.perf_counter() - start) * 1000
            return Answer(text="", error=describe_exception(exc), latency_ms=elapsed)
        return shaped.model_copy(update={"latency_ms": elapsed})

    async def aclose(self) -> None:
        """Close the object a factory returned, if it has ``aclose`` or ``close``."""
        if self._closer is None:
            return
        try:
            result = self._closer()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            log.warning("closing target %s failed: %s", self._name, describe_exception(exc))


def python_target_from_config(
    cfg: PythonTargetConfig, base_dir: Path, name: str, source: str
) -> PythonTarget:
    """Import the configured function (or call the factory) and wrap it; problems raise ConfigError.

    ``python_path`` entries (relative to the target file) are searched first; the target file's own folder is
    searched last, so a module beside the YAML imports without any ``python_path``.
    """
    for entry in cfg.python_path:
        directory = str((base_dir / entry).resolve())
        if directory not in sys.path:
            sys.path.insert(0, directory)
    beside = str(base_dir.resolve())
    if beside not in sys.path:
        sys.path.append(beside)
    module_name, _, attr_path = cfg.function.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise _problem(
            source, f"cannot import module '{module_name}': {describe_exception(exc)}", cfg
        ) from None
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise _problem(source, f"module '{module_name}' has no attribute '{attr_path}'", cfg)
        obj = getattr(obj, part)
    if not callable(obj):
        raise _problem(source, f"'{cfg.function}' is a {type(obj).__name__}, not a function", cfg)
    closer = None
    if cfg.factory:
        try:
            built = obj(**expand_env(cfg.options, source, "target.options"))
        except ConfigError:
            raise
        except Exception as exc:
            raise _problem(
                source, f"factory '{cfg.function}' failed: {describe_exception(exc)}", cfg
            ) from None
        closer = getattr(built, "aclose", None) or getattr(built, "close", None)
        obj = built if not callable(getattr(built, "answer", None)) else built.answer
        if not callable(obj):
            raise _problem(source, f"factory returned a {type(built).__name__}, not a function", cfg)
    elif cfg.options:
        raise ConfigError(
            str(
                InputProblem(
                    source,
                    None,
                    "target.options",
                    "options are only passed to a factory",
                    "add 'factory: true'",
                )
            )
        )
    try:
        plan_call(obj)
    except ValueError as exc:
        raise _problem(source, f"'{cfg.function}' {exc}", cfg) from None
    version = content_hash([cfg.model_dump(mode="json"), _file_hash(getattr(module, "__file__", None))])
    return PythonTarget(obj, name=name, version=version, closer=closer)


def _file_hash(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def _problem(source: str, message: str, cfg: PythonTargetConfig) -> ConfigError:
    fix = "check 'module:function'; a module outside the target file's folder needs 'python_path' (relative to it)"
    if cfg.python_path:
        fix += f"; searched {cfg.python_path}"
    return ConfigError(str(InputProblem(source, None, "target.function", message, fix)))
