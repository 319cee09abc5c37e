"""The config tree: recipes, overrides, and errors that name the key and the fix."""

from __future__ import annotations

import subprocess

import pytest
from conftest import KIT, PROJECT_ROOT

from kit.config.tree import ConfigError, load_config, resolve_recipe_path


def test_shipped_recipe_loads_with_overrides():
    cfg = load_config("cpu_demo", ["grpo.max_steps=2", "generation.mode=server", "env.tiers=[easy, medium]"])
    assert cfg.grpo.max_steps == 2
    assert cfg.generation.mode == "server"
    assert cfg.env.tiers == ["easy", "medium"]
    assert cfg.model.name_or_path == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_misspelt_kit_key_names_section_and_closest(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rollout:\n  max_turn: 3\n")
    with pytest.raises(ConfigError, match=r"Unknown key 'max_turn' in section 'rollout'.*'max_turns'"):
        load_config(recipe)


def test_misspelt_trl_key_is_checked_against_grpo_config():
    with pytest.raises(ConfigError, match=r"'lerning_rate' in section 'grpo'.*GRPOConfig.*'learning_rate'"):
        load_config("cpu_demo", ["grpo.lerning_rate=1e-5"])


def test_kit_owned_trl_field_points_to_kit_key():
    with pytest.raises(ConfigError, match=r"grpo.use_vllm.*generation.mode"):
        load_config("cpu_demo", ["grpo.use_vllm=true"])


def test_a_retired_key_says_where_its_meaning_went():
    with pytest.raises(ConfigError, match=r"'env.max_eval_rows' is no longer a key: .*run.eval_tasks=N"):
        load_config("cpu_demo", ["env.max_eval_rows=8"])


def test_invalid_choice_lists_valid_values():
    with pytest.raises(
        ConfigError, match=r"generation.mode is 'vllm'; valid values: transformers, server, colocate"
    ):
        load_config("cpu_demo", ["generation.mode=vllm"])


def test_base_recipe_is_merged_under(tmp_path):
    (tmp_path / "child.yaml").write_text("base: cpu_demo\ngrpo:\n  max_steps: 3\n")
    cfg = load_config(tmp_path / "child.yaml")
    assert cfg.grpo.max_steps == 3
    assert cfg.grpo.num_generations == 8  # from cpu_demo
    assert cfg.sft.enabled


def test_unknown_recipe_lists_shipped_ones():
    with pytest.raises(ConfigError, match="cpu_demo"):
        resolve_recipe_path("no_such_recipe")


def test_cli_exits_2_naming_the_misspelt_key(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("grpo:\n  num_generation: 4\n")
    result = subprocess.run(
        [*KIT, "train", "--config", str(recipe)], capture_output=True, text=True, cwd=PROJECT_ROOT
    )
    assert result.returncode == 2
    assert "num_generation" in result.stderr and "num_generations" in result.stderr


def test_help_lists_all_six_commands():
    result = subprocess.run([*KIT, "--help"], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr
    for command in ("train", "eval", "serve", "env", "tools", "sky"):
        assert f"    {command}" in result.stdout


def test_relative_paths_are_found_next_to_the_recipe_first(tmp_path, monkeypatch):
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text("")
    (folder / "recipe.yaml").write_text(
        "base: cpu_demo\nenv:\n  train_file: tasks.jsonl\n  eval_file: data/workplace/validation.jsonl\n"
        "model:\n  chat_template: kit\n"
    )
    monkeypatch.chdir(tmp_path)  # elsewhere: the recipe's folder decides, not the current one
    cfg = load_config(str(folder / "recipe.yaml"))
    assert cfg.env.train_file == str((folder / "tasks.jsonl").resolve())
    assert cfg.env.eval_file == "data/workplace/validation.jsonl"  # not there: current folder, then the repo
    assert cfg.model.chat_template == "kit"  # a keyword, not a path
    overridden = load_config(str(folder / "recipe.yaml"), ["env.train_file=tasks.jsonl"])
    assert overridden.env.train_file == "tasks.jsonl"  # an override starts at the current folder


def test_trl_sections_read_with_trl_defaults_and_save_only_what_is_set(tmp_path):
    """A field the recipe leaves out reads as TRL's own default (no kit module retypes one); config.yaml
    keeps the recipe's values only, and loads back to the same tree."""
    import trl

    from kit.config.tree import save_config

    cfg = load_config(None, ["grpo.max_steps=3", "sft.args.learning_rate=0.001"])
    defaults = trl.GRPOConfig(output_dir=str(tmp_path / "o"), use_cpu=True)
    assert cfg.grpo.max_completion_length == defaults.max_completion_length
    assert cfg.grpo.temperature == defaults.temperature and cfg.grpo.max_steps == 3
    assert cfg.grpo.report_to == "none"  # the kit's default where it differs from TRL's
    assert "max_steps" in cfg.grpo and "temperature" not in cfg.grpo
    built = cfg.grpo.build(output_dir=str(tmp_path / "b"), use_cpu=True)
    assert isinstance(built, trl.GRPOConfig) and built.max_steps == 3 and built.logging_steps == 1
    assert cfg.sft.args.learning_rate == 0.001 and cfg.sft.args.save_strategy == "no"
    save_config(cfg, tmp_path / "config.yaml")
    saved = (tmp_path / "config.yaml").read_text()
    assert "max_completion_length" not in saved
    again = load_config(tmp_path / "config.yaml")
    assert again.grpo == cfg.grpo and again.sft.args == cfg.sft.args


def test_trl_sections_name_a_misspelt_field_when_read_or_set():
    cfg = load_config(None)
    with pytest.raises(AttributeError, match=r"GRPOConfig has no field 'max_step'.*'max_steps'"):
        _ = cfg.grpo.max_step
    with pytest.raises(ConfigError, match=r"'grpo.seed' is set by the kit from 'run.seed'"):
        cfg.grpo.update(seed=1)
    with pytest.raises(ConfigError, match=r"grpo.max_steps must be an integer"):
        cfg.grpo.max_steps = "ten"
