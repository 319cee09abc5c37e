"""Reading recipe files: a shipped name or a path, `base:` inheritance, and paths next to the recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kit.config.value_types import ConfigError

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"


def where(section: str) -> str:
    return f"section '{section}'" if section else "the top level"


def check_names(values: dict[Any, Any], section: str) -> None:
    for key in values:
        if not isinstance(key, str):
            raise ConfigError(f"Key {key!r} in {where(section)} is not a name: keys must be strings.")


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for names no file can have (a NUL byte, a component too long)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def resolve_recipe_path(recipe: str | Path) -> Path:
    """A recipe is a YAML path, or the name of a recipe shipped in kit/recipes/ (with or without .yaml)."""
    path = Path(recipe)
    if _is_file(path):
        return path
    shipped = RECIPES_DIR / (path.name if path.suffix in (".yaml", ".yml") else f"{path.name}.yaml")
    if _is_file(shipped):
        return shipped
    names = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))
    raise ConfigError(f"Recipe '{recipe}' not found: not a file, and not one of the shipped recipes {names}.")


# Recipe keys that name files or folders (the keywords are values that are not paths).
_PATH_KEYS = {
    ("env", "train_file"): (),
    ("env", "eval_file"): (),
    ("env", "databases"): (),
    ("model", "name_or_path"): (),
    ("model", "chat_template"): ("kit", "model"),
    ("rollout", "tool_parser_plugin"): (),
}


def _anchor_paths(data: dict[str, Any], folder: Path) -> None:
    """Make a recipe's relative paths that exist next to the recipe file absolute. Others stay as they
    are, for `kit.paths.resolve_path` (the current folder, then the repository root)."""
    for (section, key), keywords in _PATH_KEYS.items():
        values = data.get(section)
        value = values.get(key) if isinstance(values, dict) else None
        if not isinstance(value, str) or not value or value in keywords or Path(value).is_absolute():
            continue
        if _exists(folder / value):
            values[key] = str((folder / value).resolve())


def read_recipe(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a recipe, merging the recipe it names as `base:` underneath it."""
    if path.resolve() in seen:
        raise ConfigError(f"Recipe '{path}' inherits from itself through 'base:'.")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"Recipe '{path}' cannot be read: {err}") from err
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as err:  # a date like 2023-02-30: ValueError
        raise ConfigError(f"Recipe '{path}' is not valid YAML: {err}") from err
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"Recipe '{path}' must be a mapping of sections, got {type(data).__name__}.")
    _anchor_paths(data, path.resolve().parent)
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise ConfigError(
            f"'base' in recipe '{path}' must name a recipe (a file or a shipped name), got {base!r}."
        )
    base_path = resolve_recipe_path(path.parent / base if _is_file(path.parent / base) else base)
    return _deep_merge(read_recipe(base_path, (*seen, path.resolve())), data)


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "args":
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
