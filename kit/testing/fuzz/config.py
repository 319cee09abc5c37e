"""Fuzzing the config loader: recipes built from real and made-up keys with YAML's awkward values, random
overrides, and one known fault in a shipped recipe; and the checks each must pass (`check_load`,
`check_mutation`).

Used by tests/test_config_fuzz.py and bench/fuzz.py.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import yaml
from hypothesis import strategies as st

from kit.config.tree import (
    SECTIONS,
    ConfigError,
    KitConfig,
    load_config,
    resolve_recipe_path,
    save_config,
)
from kit.config.trl_args import TRLArgs
from kit.config.value_types import matches
from kit.testing.fuzz.verdicts import Crash, Unclear, Wrong

KIT_KEYS = {section: [f.name for f in dataclasses.fields(cls)] for section, cls in SECTIONS.items()}
TRL_KEYS = ["learning_rate", "max_steps", "num_generations", "beta", "report_to", "lr_scheduler_type",
            "save_strategy", "bf16", "max_completion_length", "use_vllm", "logging_steps"]  # fmt: skip
ALL_KEYS = sorted({key for keys in KIT_KEYS.values() for key in keys} | set(TRL_KEYS))

# Scalars as YAML hands them over, and text YAML reads in surprising ways.
yaml_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.dates()
    | st.sampled_from(
        ["1e-5", "1.0e5", "2023-02-30", "yes", "~", "0x1F", "1_000", ".inf", "kit", "server", ""]
    )
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(ALL_KEYS), inner, max_size=3),
    max_leaves=8,
)
keys = st.sampled_from([*SECTIONS, "grpo", "base", "args", *ALL_KEYS]) | st.text(max_size=6) | st.integers()
sections = st.dictionaries(st.sampled_from(ALL_KEYS) | st.integers() | st.none(), yaml_values, max_size=4)
recipes = st.dictionaries(keys, sections | yaml_values, max_size=5)
# YAML text no dump produces: anchors inside themselves, broken syntax, odd tags, deep nesting.
RAW_RECIPES = [
    text.encode()
    for text in [
        "grpo: &a {max_steps: 2, again: *a}\n",
        "env:\n  tiers: &t [easy, *t]\n",
        "rollout: [max_turns, 2]\n",
        "model: {name_or_path: x\n",
        "grpo: !!python/object:os.system {}\n",
        "run: {seed: !!binary aGk=}\n",
        "sft: {args: !!set {a, b}}\n",
        "grpo:\n  " + "[" * 1100 + "\n",  # deeper than Python recurses
        "base: [cpu_demo]\n",
        "base: no_such_recipe\n",
        "base: ''\n",
        "base: " + "x" * 300 + "\n",
        'base: "a\\0b"\n',
        "\t- not a mapping\n",
        "42\n",
    ]
] + [b"\xff\xfe\x00"]
override_keys = st.sampled_from(
    [f"{section}.{key}" for section, names in KIT_KEYS.items() for key in names]
    + [f"grpo.{key}" for key in TRL_KEYS]
    + ["grpo", "model", "a.b.c", "env.tiers.x", "sft.args.learning_rate", "grpo..x", ".", "base"]
)
override_values = st.sampled_from(
    ["2023-02-30", "[", "{a: 1}", "1e-5", "x", "", "[1, 2]", "null", "&a [*a]", "!!set {a}", "1" * 400, "0.5"]
) | st.text(max_size=10)
overrides = st.lists(
    st.builds(lambda key, value: f"{key}={value}", override_keys, override_values) | st.text(max_size=15),
    max_size=3,
)


def _keys_and_values(document) -> set[str]:
    """Every key and scalar in a YAML document, as text (aliases that contain themselves included)."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, (dict, list)):
            if id(value) not in seen:
                seen.add(id(value))
                found.update(str(key) for key in value) if isinstance(value, dict) else None
                stack.extend(value.values() if isinstance(value, dict) else value)
        else:
            found.add(str(value))
    return found


def _names_something(message: str, recipe_path: Path, overrides: list[str]) -> bool:
    """Whether an error names something the author wrote: a key or value of the recipe, an override (or
    part of its dotted key), or the file."""
    try:
        written = yaml.safe_load(recipe_path.read_text(encoding="utf-8"))
    except Exception:
        written = None
    dotted = [o.split("=", 1)[0].split(".") for o in overrides]
    names = {str(recipe_path), *overrides, *(".".join(d[:i]) for d in dotted for i in range(1, len(d) + 1))}
    names |= _keys_and_values(written)
    # An empty name counts only quoted: "Unknown key '' ...".
    return any(f"'{name}'" in message or (name and name in message) for name in names)


def check_load(recipe_path: Path, overrides: list[str], folder: Path) -> None:
    """Load a recipe with overrides. Raises Crash (anything but a ConfigError), Unclear (a ConfigError that
    names nothing the author wrote) or Wrong (a config that does not save and load back unchanged)."""
    try:
        cfg = load_config(recipe_path, overrides)
    except ConfigError as error:
        if not _names_something(str(error), recipe_path, overrides):
            raise Unclear(f"{error} (overrides {overrides})") from error
        return
    except Exception as error:
        raise Crash(f"{type(error).__name__}: {error} (overrides {overrides})") from error
    saved = folder / "saved.yaml"
    try:
        save_config(cfg, saved)
        again = load_config(saved)
    except Exception as error:
        raise Wrong(f"the loaded config does not save and load back: {error!r}") from error
    if _dump(again) != _dump(cfg):
        raise Wrong("the loaded config loads back different")


def _dump(cfg: KitConfig) -> str:
    return yaml.safe_dump(cfg.to_dict() | {"recipe": None})  # as text: NaN equals NaN


def write_recipe(folder: Path, recipe: dict | bytes) -> Path:
    """``recipe`` as ``folder``/recipe.yaml: a mapping dumped as YAML, bytes as they are."""
    path = folder / "recipe.yaml"
    if isinstance(recipe, bytes):
        path.write_bytes(recipe)
    else:
        path.write_text(yaml.safe_dump(recipe, allow_unicode=True), encoding="utf-8")
    return path


any_recipe = recipes | st.sampled_from(RAW_RECIPES)


# --- one known fault in a shipped recipe -------------------------------------------------------------------


def _hint(section: str, key: str) -> typing.Any:
    if section == "grpo":
        import trl

        return typing.get_type_hints(trl.GRPOConfig)[key]
    hint = typing.get_type_hints(SECTIONS[section])[key]
    nested = dataclasses.is_dataclass(hint) or (isinstance(hint, type) and issubclass(hint, TRLArgs))
    return dict[str, typing.Any] if nested else hint


wrong_values = st.one_of(
    st.sampled_from(["abc", "1e-5", "", "none", "true", "3"]),
    st.integers(-5, 10**12),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers() | st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.dates(),
)
targets = st.sampled_from(
    [(section, key) for section, names in KIT_KEYS.items() for key in names]
    + [("grpo", key) for key in TRL_KEYS]
)
faults = st.sampled_from(["value", "value", "unknown key", "number key"])


def check_mutation(
    folder: Path, target: tuple[str, str], value: object, fault: str, as_override: bool
) -> None:
    """cpu_demo with one known fault at ``target`` (a ``value`` of any type, an unknown key, a non-string
    key), in the file or as an override. Raises Unclear (refused without naming the key), Crash (anything
    but a ConfigError) or Wrong (a fault accepted, or a value accepted other than as written)."""
    section, key = target
    data = yaml.safe_load(resolve_recipe_path("cpu_demo").read_text())
    data.setdefault(section, {})
    override = None
    if fault == "unknown key":
        key = key + "_typo"
        override, data[section][key] = f"{section}.{key}=1", 1
    elif fault == "number key":
        key, data[section][7] = "7", 1  # an override cannot write a non-string key
        as_override = False
    else:
        data[section][key] = value
        override = f"{section}.{key}={yaml.safe_dump(value, default_flow_style=True).strip()}"
        override = override.removesuffix("\n...")
    if as_override:
        del data[section][key]
    try:
        cfg = load_config(write_recipe(folder, data), [override] if as_override else [])
    except ConfigError as error:
        if key not in str(error):
            raise Unclear(f"{fault} at {section}.{key} ({value!r}): {error}") from error
        return
    except Exception as error:
        raise Crash(f"{fault} at {section}.{key} ({value!r}): {error!r}") from error
    loaded = getattr(cfg.grpo, key) if section == "grpo" else getattr(getattr(cfg, section), key)
    if isinstance(loaded, TRLArgs):  # sft.args: what the recipe set, as a mapping
        loaded = loaded.given
    elif dataclasses.is_dataclass(loaded):  # model.lora: the keys it set; null (an empty `lora:`) is
        if value is None and loaded == type(loaded)():  # the defaults, as for a top-level section
            return
        loaded = {name: getattr(loaded, name) for name in value} if isinstance(value, dict) else loaded
    if fault != "value" or not (loaded == value and type(loaded) is type(value)):
        raise Wrong(f"{fault} at {section}.{key} ({value!r}) loaded as {loaded!r}")
    if not matches(value, _hint(section, key)):
        raise Wrong(f"{section}.{key} accepted {value!r}")
