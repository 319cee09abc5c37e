"""Ambiguous dialogue variants of workplace rows and the splits that hold them."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit.envs.rows import read_jsonl
from kit.envs.workplace.dialogue_variants import AMBIGUITY_TYPES, STOP_TOKEN, ambiguous_row, user_prompt
from kit.envs.workplace.reward import ground_truth_problem
from kit.envs.workplace.tasks import make_splits, write_splits

REFERENCE = Path(__file__).resolve().parents[2] / "shared/reference/workplace_assistant/example_tasks.jsonl"
METADATA_KEYS = {"ambiguity_type", "original_user_query", "removed_info", "clarification"}


def _request(row: dict) -> str:
    return [m for m in row["responses_create_params"]["input"] if m["role"] == "user"][-1]["content"]


@pytest.fixture(scope="module")
def plain() -> dict[str, list[dict]]:
    return make_splits(seed=0, train=300, validation=60)


@pytest.fixture(scope="module")
def dialogue() -> dict[str, list[dict]]:
    return make_splits(seed=0, train=300, validation=60, dialogue_share=1.0)


def _check_variant(original: dict, variant: dict) -> None:
    metadata = variant["verifier_metadata"]
    assert set(metadata) == METADATA_KEYS
    assert metadata["ambiguity_type"] in AMBIGUITY_TYPES
    assert metadata["original_user_query"] == _request(original)
    assert metadata["removed_info"].endswith(".") and metadata["clarification"].strip()
    assert variant["user_model_system_prompt"] == user_prompt(_request(original))
    assert _request(original) in variant["user_model_system_prompt"]
    assert STOP_TOKEN in variant["user_model_system_prompt"]
    assert _request(variant) != _request(original)
    assert not re.search(r"  | [,.;]|[,;][,.;]|\b(?:with|and|to|for|of|the)[.,;]", _request(variant))
    stripped = {
        k: v for k, v in variant.items() if k not in ("user_model_system_prompt", "verifier_metadata")
    }
    stripped["responses_create_params"] = dict(stripped["responses_create_params"])
    stripped["responses_create_params"]["input"] = original["responses_create_params"]["input"]
    assert stripped == original  # same id, ground truth and every other field


def test_most_rows_get_a_variant_of_every_type(plain: dict, dialogue: dict) -> None:
    for name in ("train", "validation"):
        pairs = list(zip(plain[name], dialogue[name], strict=True))
        variants = [(p, d) for p, d in pairs if "verifier_metadata" in d]
        assert len(variants) >= 0.6 * len(pairs)
        assert all(d == p for p, d in pairs if "verifier_metadata" not in d)
        kinds = [d["verifier_metadata"]["ambiguity_type"] for _, d in variants]
        assert set(kinds) == set(AMBIGUITY_TYPES), kinds
        for original, variant in variants:
            _check_variant(original, variant)
            assert variant["ground_truth"] == original["ground_truth"]
            assert ground_truth_problem(variant["ground_truth"]) is None


def test_removed_names_ids_and_quotes_are_gone(dialogue: dict) -> None:
    checked = 0
    for row in dialogue["train"]:
        metadata = row.get("verifier_metadata")
        shown = re.search(r"\((.+)\) was (replaced|removed)", metadata["removed_info"]) if metadata else None
        if shown and (shown[2] == "replaced" or shown[1].startswith("'")):
            removed = shown[1].strip("'").lower()
            assert removed in metadata["original_user_query"].lower()
            assert removed not in _request(row).lower(), (metadata, _request(row))
            assert removed in metadata["clarification"].lower()
            checked += 1
    assert checked >= 100


def test_clarifications_read_as_short_sentences(dialogue: dict) -> None:
    for row in dialogue["validation"]:
        if "verifier_metadata" in row:
            clarification = row["verifier_metadata"]["clarification"]
            assert clarification[0].isupper() and clarification[-1] in ".'", clarification
            assert not clarification.endswith(".'.") and len(clarification) < 120


def test_same_seed_same_rows_and_share_zero_is_todays_output(plain: dict, tmp_path: Path) -> None:
    once = make_splits(seed=4, train=40, validation=20, dialogue_share=0.5)
    assert once == make_splits(seed=4, train=40, validation=20, dialogue_share=0.5)
    before = make_splits(seed=4, train=40, validation=20)
    for name, rows in once.items():
        changed = [row for row, old in zip(rows, before[name], strict=True) if row != old]
        assert 0.6 * len(rows) / 2 <= len(changed) <= len(rows) / 2
        assert all("verifier_metadata" in row for row in changed)
    first = write_splits(tmp_path / "a", seed=4, train=40, validation=20, dialogue_share=0.5)
    second = write_splits(tmp_path / "b", seed=4, train=40, validation=20, dialogue_share=0.5)
    assert all(first[name].read_bytes() == second[name].read_bytes() for name in first)
    assert make_splits(seed=0, train=300, validation=60, dialogue_share=0.0) == plain
    row = plain["train"][0]
    assert ambiguous_row(row, random.Random(1)) == ambiguous_row(row, random.Random(1))
    with pytest.raises(ValueError, match="between 0 and 1"):
        make_splits(seed=0, train=40, validation=20, dialogue_share=1.5)


def test_rows_without_needed_information_give_none() -> None:
    plot = {
        "time_min": "2023-11-01",
        "time_max": "2023-11-02",
        "value_to_plot": "total_visits",
        "plot_type": "line",
    }
    row = {
        "responses_create_params": {
            "input": [
                {
                    "role": "user",
                    "content": "Create a bar plot of total_visits from 2023-10-01 to 2023-10-05.",
                }
            ]
        },
        "ground_truth": [{"name": "analytics_create_plot", "arguments": json.dumps(plot)}],
    }
    assert ambiguous_row(row, random.Random(0)) is None  # neither the plot type nor the dates are used
    plot.update(time_min="2023-10-01", time_max="2023-10-05")
    row["ground_truth"][0]["arguments"] = json.dumps(plot)
    variant = ambiguous_row(row, random.Random(0))
    assert variant is not None and variant["verifier_metadata"]["ambiguity_type"] == "missing_constraint"
    assert _request(variant) == "Create a bar plot of total_visits."
    assert variant["verifier_metadata"]["clarification"] == "From 2023-10-01 to 2023-10-05."
    assert ambiguous_row({"ground_truth": []}, random.Random(0)) is None


def test_generate_flag_writes_dialogue_rows_and_refuses_bad_shares(tmp_path: Path) -> None:
    kit = [str(Path(sys.executable).parent / "kit")]  # the venv's console script
    common = ["env", "generate", "--seed", "3", "--train", "30", "--validation", "10"]
    done = subprocess.run(
        [*kit, *common, "--out", str(tmp_path / "d"), "--dialogue-share", "1"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    rows = read_jsonl(tmp_path / "d" / "train.jsonl")
    assert sum("user_model_system_prompt" in row for row in rows) >= 0.6 * len(rows)
    index = next(i for i, row in enumerate(rows) if "verifier_metadata" in row)
    shown = subprocess.run(
        [*kit, "env", "show", "--rows", str(tmp_path / "d" / "train.jsonl"), "--index", str(index)],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert rows[index]["verifier_metadata"]["ambiguity_type"] in shown.stdout
    assert rows[index]["verifier_metadata"]["original_user_query"] in shown.stdout
    errors = {}
    for bad in ("1.5", "-0.1", "half"):
        refused = subprocess.run(
            [*kit, *common, "--out", str(tmp_path / "x"), "--dialogue-share", bad],
            capture_output=True,
            text=True,
        )
        assert refused.returncode == 2 and "--dialogue-share" in refused.stderr, refused.stderr
        errors[bad] = refused.stderr
    assert "must be between 0 and 1, got 1.5" in errors["1.5"]
    assert not (tmp_path / "x").exists()


@pytest.mark.skipif(not REFERENCE.exists(), reason="NeMo-Gym reference rows not present")
def test_nemo_gym_example_rows_get_variants() -> None:
    rows = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(0)
    variants = [(row, ambiguous_row(row, rng)) for row in rows]
    made = [(row, variant) for row, variant in variants if variant is not None]
    assert len(made) >= 3
    for row, variant in made:
        _check_variant(row, variant)
