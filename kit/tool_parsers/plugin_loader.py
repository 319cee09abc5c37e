"""Loading vLLM tool-parser plugin files: through vLLM when it is importable, else through the stand-in.

vLLM itself is imported only here, and only when a parser is loaded (it takes seconds).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kit.paths import resolve_path
from kit.tool_parsers import vllm_shim
from kit.tool_parsers.result import ToolParserError

RequestFactory = Callable[[list[dict[str, Any]] | None], Any]


@dataclass(frozen=True)
class LoadedPlugin:
    """The parser classes one plugin file registered (name -> class), and the request type they take."""

    path: str
    parsers: dict[str, type]
    make_request: RequestFactory


@cache
def vllm_parsers() -> dict[str, tuple[str, str]] | None:
    """vLLM's own tool parsers, name -> (module, class), as vLLM registers them; None without vLLM."""
    try:
        from vllm.tool_parsers import ToolParserManager
    except ImportError:
        return None
    # Only vLLM's modules: plugins loaded into this process register into the same manager.
    return {
        name: entry for name, entry in ToolParserManager.lazy_parsers.items() if entry[0].startswith("vllm.")
    }


def load_vllm_parser(name: str) -> type:
    """The class of vLLM's own parser ``name`` (a key of :func:`vllm_parsers`)."""
    module_name, class_name = (vllm_parsers() or {})[name]
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except Exception as error:
        raise ToolParserError(
            f"vLLM's tool parser {name!r} could not be imported from {module_name}: "
            f"{type(error).__name__}: {error}"
        ) from error


def vllm_request(tools: list[dict[str, Any]] | None) -> Any:
    """vLLM's ``ChatCompletionRequest`` carrying ``tools`` (chat-completions format)."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    # vLLM rejects an empty tools list.
    return ChatCompletionRequest(messages=[], tools=tools or None)


def load_plugin(path: str | Path) -> LoadedPlugin:
    """Execute a plugin file once (again after it changes) and return what it registered."""
    resolved = Path(resolve_path(str(Path(path).expanduser()))).resolve()
    if not resolved.is_file():
        raise ToolParserError(
            f"Tool parser plugin file not found: {path}. Point rollout.tool_parser_plugin "
            "(--tool-parser-plugin) at a .py file that registers a vLLM tool parser."
        )
    _check_module_name(resolved)
    stat = resolved.stat()
    return _load(str(resolved), stat.st_mtime_ns, stat.st_size)


def _check_module_name(path: Path) -> None:
    """Refuse a file whose name is another module's: vLLM imports a plugin file as a top-level module named
    after it, which would replace that module (say ``json``) for the whole server."""
    existing = sys.modules.get(path.stem)
    if existing is not None:
        origin = getattr(existing, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(path.stem)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
    if origin is not None and Path(origin).resolve() != path:
        raise ToolParserError(
            f"Tool parser plugin {path} is named like the module {path.stem!r} ({origin}); vLLM imports a "
            "plugin as a top-level module named after its file, which would replace that module. Rename it."
        )


@cache
def _load(path: str, mtime_ns: int, size: int) -> LoadedPlugin:
    if vllm_parsers() is not None:
        return LoadedPlugin(path, _load_with_vllm(path), vllm_request)
    return LoadedPlugin(path, _load_with_stand_in(path), vllm_shim.make_request)


def _load_with_vllm(path: str) -> dict[str, type]:
    from vllm.tool_parsers import ToolParserManager

    # vLLM imports a plugin file as a top-level module named after the file (`--tool-parser-plugin`);
    # the kit does the same itself rather than through `ToolParserManager.import_tool_parser`, which
    # only logs an import error (under a logger name that differs between vLLM releases).
    module_name = Path(path).stem
    lazy_before, eager_before = dict(ToolParserManager.lazy_parsers), dict(ToolParserManager.tool_parsers)
    _exec_module(module_name, path, stand_in=False)
    # A name is the file's when it points into the file's module, or changed while the file ran.
    lazy = {
        name
        for name, entry in ToolParserManager.lazy_parsers.items()
        if entry[0] == module_name or lazy_before.get(name) != entry
    }
    eager = {
        name
        for name, parser in ToolParserManager.tool_parsers.items()
        if parser.__module__ == module_name or eager_before.get(name) is not parser
    }
    for name in lazy:
        # vLLM caches a lazily registered class on first use: drop one cached from an earlier version.
        ToolParserManager.tool_parsers.pop(name, None)
    try:
        return {name: ToolParserManager.get_tool_parser(name) for name in sorted(lazy | eager)}
    except Exception as error:
        raise _import_error(path, error) from error


def _exec_module(module_name: str, path: str, stand_in: bool) -> None:
    """Execute the plugin file as module `module_name`; its own exception becomes a ToolParserError."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ToolParserError(f"Tool parser plugin {path} is not a Python file; it must end in .py.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(module_name, None)
        raise _import_error(path, error, stand_in=stand_in) from error


def _load_with_stand_in(path: str) -> dict[str, type]:
    with vllm_shim.stand_in_for_vllm() as manager:
        _exec_module(f"_kit_tool_parser_plugin_{Path(path).stem}", path, stand_in=True)
    return dict(manager.tool_parsers)


def _import_error(path: str, error: BaseException, stand_in: bool = False) -> ToolParserError:
    message = f"Could not import tool parser plugin {path}: {type(error).__name__}: {error}."
    missing = getattr(error, "name", None) or ""
    if stand_in and isinstance(error, ImportError) and missing.split(".")[0] == "vllm":
        provided = "; ".join(f"{module}: {', '.join(names)}" for module, names in vllm_shim.EXPORTS.items())
        message += (
            " vLLM is not installed here, and the kit's stand-in for it provides only "
            f"{provided}. Install vLLM, or import only these names in the plugin."
        )
    else:
        message += " Fix the plugin file so that it imports cleanly."
    return ToolParserError(message)
