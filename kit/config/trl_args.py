"""A recipe's TRL sections (`grpo`: GRPOConfig, `sft.args`: SFTConfig), typed at load.

The values a recipe sets are checked against the TRL class's fields when the recipe loads (an unknown
name is an error naming TRL's close matches; a wrong type says what was expected). Reading a field the
recipe left out gives TRL's own default, so no kit module retypes one:

    cfg.grpo.max_completion_length   # the recipe's value, else GRPOConfig's default
    cfg.grpo.given                   # only what the recipe set (what config.yaml saves)
    cfg.grpo.build(output_dir=...)   # the GRPOConfig itself
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from typing import Any, ClassVar

from kit.config.value_types import ConfigError, problem


@functools.cache
def trl_fields(class_name: str) -> dict[str, tuple[Any, Any]]:
    """``{field: (type hint, default)}`` of TRL's config class ``class_name`` (default MISSING if none)."""
    import trl

    cls = getattr(trl, class_name)
    hints = typing.get_type_hints(cls)
    fields = {}
    for spec in dataclasses.fields(cls):
        default = spec.default
        if spec.default_factory is not dataclasses.MISSING:
            default = spec.default_factory()
        fields[spec.name] = (hints[spec.name], default)
    return fields


def close_matches(name: str, valid: typing.Iterable[str]) -> str:
    """ " Did you mean 'a', 'b'?" for the names in ``valid`` closest to ``name`` ("" when none is close)."""
    matches = difflib.get_close_matches(name, sorted(valid), n=3, cutoff=0.6)
    return f" Did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""


class TRLArgs:
    """The fields of one TRL config class that a recipe section sets, read with TRL's defaults."""

    trl_class: ClassVar[str]
    # The kit's defaults where they differ from TRL's; the recipe's values override them.
    kit_defaults: ClassVar[dict[str, Any]] = {}
    # Fields the kit sets itself from its own sections: naming one in the recipe is an error.
    kit_owned: ClassVar[dict[str, str]] = {}

    def __init__(self, values: dict[str, Any], section: str) -> None:
        object.__setattr__(self, "section", section)
        object.__setattr__(self, "given", {})
        self.update(**values)

    def update(self, **values: Any) -> None:
        """Set fields, each checked as a recipe's would be."""
        fields = trl_fields(self.trl_class)
        for key, value in values.items():
            if key in self.kit_owned:
                raise ConfigError(
                    f"'{self.section}.{key}' is set by the kit from '{self.kit_owned[key]}'; "
                    "set that instead."
                )
            if key not in fields:
                raise ConfigError(
                    f"Unknown key '{key}' in section '{self.section}': not a field of TRL's "
                    f"{self.trl_class}.{close_matches(key, fields)}"
                )
            if (why := problem(value, fields[key][0])) is not None:
                raise ConfigError(f"{self.section}.{key} {why} (TRL's {self.trl_class}.{key}).")
            self.given[key] = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self.given:
            return self.given[name]
        if name in self.kit_defaults:
            return self.kit_defaults[name]
        fields = trl_fields(self.trl_class)
        if name not in fields:
            raise AttributeError(
                f"TRL's {self.trl_class} has no field '{name}'.{close_matches(name, fields)}"
            )
        default = fields[name][1]
        if default is dataclasses.MISSING:
            raise AttributeError(f"TRL's {self.trl_class}.{name} has no default and the recipe sets none.")
        return default

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(**{name: value})

    def __contains__(self, name: str) -> bool:
        """Whether the recipe sets ``name`` (rather than leaving TRL's default)."""
        return name in self.given

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.given == self.given

    def __repr__(self) -> str:
        return f"{self.trl_class} fields set by the recipe: {self.given}"

    def __deepcopy__(self, memo: dict[int, Any]) -> TRLArgs:
        import copy

        return type(self)(copy.deepcopy(self.given, memo), self.section)

    def build(self, defaults: dict[str, Any] | None = None, **kit_values: Any) -> Any:
        """TRL's config object: the kit's defaults and ``defaults`` (the machine's: mixed precision)
        under the recipe's values, then ``kit_values`` (what the kit decides: output_dir, vLLM wiring)."""
        import trl

        values = {**self.kit_defaults, **(defaults or {}), **self.given, **kit_values}
        return getattr(trl, self.trl_class)(**values)


class GRPOArgs(TRLArgs):
    """The `grpo` section: TRL's GRPOConfig."""

    trl_class = "GRPOConfig"
    kit_defaults = {"report_to": "none", "logging_steps": 1}
    kit_owned = {
        "use_vllm": "generation.mode",
        "vllm_mode": "generation.mode",
        "vllm_server_base_url": "generation.server_url",
        "vllm_server_host": "generation.server_url",
        "vllm_server_port": "generation.server_url",
        "output_dir": "run.output_dir",
        "seed": "run.seed",
    }


class SFTArgs(TRLArgs):
    """The `sft.args` section: TRL's SFTConfig."""

    trl_class = "SFTConfig"
    kit_defaults = {"report_to": "none", "logging_steps": 1, "save_strategy": "no"}
