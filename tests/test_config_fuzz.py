"""Fuzzing the config loader: every recipe and override either loads, into a config that saves and loads
back unchanged, or fails with a ConfigError that names the key, value, override or file at fault.

1,500 cases: 700 recipes built from real and made-up keys with YAML's awkward values (dates, anchors that
contain themselves, numbers YAML reads as text, non-string keys), with random overrides; and 800 mutations
of a shipped recipe that change one known key (a value of another type, an unknown or non-string key), in
the file or as an override, each of which must be named if it is refused.
"""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.config.tree import ConfigError, load_config, resolve_recipe_path
from kit.testing.fuzz.config import (
    any_recipe,
    check_load,
    check_mutation,
    faults,
    overrides,
    targets,
    write_recipe,
    wrong_values,
)

SETTINGS = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}


@settings(max_examples=700, **SETTINGS)
@given(recipe=any_recipe, extra=overrides)
def test_any_recipe_loads_or_fails_with_a_config_error_naming_the_fault(tmp_path, recipe, extra):
    check_load(write_recipe(tmp_path, recipe), extra, tmp_path)


# --- one known fault in a shipped recipe -------------------------------------------------------------------


@settings(max_examples=800, **SETTINGS)
@given(target=targets, value=wrong_values, fault=faults, as_override=st.booleans())
def test_a_bad_key_or_value_in_a_shipped_recipe_is_named(tmp_path, target, value, fault, as_override):
    check_mutation(tmp_path, target, value, fault, as_override)


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        (["rollout.max_turns=abc"], ["rollout.max_turns must be an integer", "'abc'"]),
        (["grpo.learning_rate=1e-5"], ["grpo.learning_rate must be a number", "1.0e-5"]),
        (["grpo.max_steps=2023-02-30"], ["grpo.max_steps must be an integer", "'2023-02-30'"]),
        (["serve.port=[1]"], ["serve.port must be an integer, got list [1]"]),
        (["env.tiers=easy"], ["env.tiers must be a list of: a string, got str 'easy'"]),
        (["generation.api_key=12345"], ["generation.api_key must be a string or null", "quote it"]),
        (["grpo.report_to=5"], ["grpo.report_to must be null or a string or a list of: a string"]),
        (["sft.args={1: 2}"], ["Key 1 in section 'sft.args'", "keys must be strings"]),
        (["grpo.bf16=yes please"], ["grpo.bf16 must be true or false", "GRPOConfig.bf16"]),
    ],
)
def test_wrong_types_are_named_with_what_was_expected(overrides, fragments):
    with pytest.raises(ConfigError) as failure:
        load_config("cpu_demo", overrides)
    for fragment in fragments:
        assert fragment in str(failure.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("grpo: &a {max_steps: 2, again: *a}\n", "'grpo.again' contains itself"),
        ("grpo:\n  7: 1\n", "Key 7 in section 'grpo' is not a name"),
        ("base: [cpu_demo]\n", "'base' in recipe"),
        ("run: {seed: 2023-02-30}\n", "is not valid YAML"),
        ("base: '" + "x" * 300 + "'\n", "not found"),
    ],
)
def test_recipe_faults_are_named(tmp_path, text, fragment):
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_config(path)


def test_an_unreadable_recipe_is_named(tmp_path):
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="binary.yaml' cannot be read"):
        load_config(path)


def test_dates_and_non_string_scalars_round_trip_where_allowed(tmp_path):
    cfg = load_config("cpu_demo", ["grpo.model_init_kwargs={revision: 2024-01-01}"])
    assert cfg.grpo.model_init_kwargs == {"revision": datetime.date(2024, 1, 1)}
    check_load(resolve_recipe_path("cpu_demo"), [], tmp_path)
