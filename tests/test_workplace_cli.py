"""``kit env`` handlers (generate, verify, show) and the row loader."""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import pytest

from kit.envs.rows import RowsError, load_rows, read_jsonl
from kit.envs.workplace.cli import register
from kit.envs.workplace.schemas import STATE_CHANGING
from kit.envs.workplace.tasks import write_rows


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(list(argv))
    return args.func(args)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    assert _run("generate", "--seed", "3", "--out", str(out), "--train", "40", "--validation", "20") == 0
    return out


def test_generate_writes_both_splits(generated: Path) -> None:
    assert len(read_jsonl(generated / "train.jsonl")) == 40
    assert len(read_jsonl(generated / "validation.jsonl")) == 20


def test_verify_reads_predicted_lists_and_rollout_outputs(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = read_jsonl(generated / "validation.jsonl")[:4]
    rows[0]["predicted"] = rows[0]["ground_truth"]
    rows[1]["predicted"] = []
    rows[2]["response"] = {"output": [{"type": "function_call", **call} for call in rows[2]["ground_truth"]]}
    rows[3]["response"] = {"output": [{"type": "message", "content": []}]}
    path = write_rows(tmp_path / "rows.jsonl", rows)
    capsys.readouterr()
    assert _run("verify", "--rows", str(path)) == 0
    rewards = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    def doing_nothing_scores(row: dict) -> float:
        return 0.0 if any(call["name"] in STATE_CHANGING for call in row["ground_truth"]) else 1.0

    assert rewards == [
        {"index": 0, "reward": 1.0},
        {"index": 1, "reward": doing_nothing_scores(rows[1])},
        {"index": 2, "reward": 1.0},
        {"index": 3, "reward": doing_nothing_scores(rows[3])},
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"ground_truth": []}\n{oops\n', "rows.jsonl:2: not valid JSON"),
        ("[1, 2]\n", "rows.jsonl:1: expected a JSON object"),
        (
            '{"ground_truth": []}\n',
            "row 0: the row has neither a 'predicted' list nor a 'response.output' list",
        ),
        ('{"predicted": [], "ground_truth": "x"}\n', "row 0: field 'ground_truth' is a string but not JSON"),
    ],
)
def test_verify_rejects_bad_rows_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(content, encoding="utf-8")
    assert _run("verify", "--rows", str(path)) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_missing_files_and_databases_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("verify", "--rows", str(tmp_path / "nope.jsonl")) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err
    rows = write_rows(tmp_path / "rows.jsonl", [{"predicted": [], "ground_truth": []}])
    assert _run("verify", "--rows", str(rows), "--databases", str(tmp_path / "missing")) == 2
    assert "--databases" in capsys.readouterr().err
    assert _run("show", "--rows", str(rows), "--index", "0") == 2  # a rollout, not a task row
    assert "rows.jsonl:1: field 'responses_create_params' must be an object" in capsys.readouterr().err
    task = {"responses_create_params": {"input": "hi"}, "ground_truth": []}
    tasks = write_rows(tmp_path / "tasks.jsonl", [task])
    assert _run("show", "--rows", str(tasks), "--index", "5") == 2
    assert "has rows 0 to 0" in capsys.readouterr().err


def test_show_prints_task_tools_and_state_change(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = read_jsonl(generated / "train.jsonl")
    index = next(i for i, row in enumerate(rows) if row["tier"] == "easy")
    assert _run("show", "--rows", str(generated / "train.jsonl"), "--index", str(index)) == 0
    out = capsys.readouterr().out
    request = rows[index]["responses_create_params"]["input"][1]["content"]
    assert request in out and rows[index]["ground_truth"][0]["name"] in out
    state_change = out.split("state change:\n")[1]
    assert state_change.strip() and "(none)" not in state_change


def test_load_rows_from_a_hub_id_uses_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("datasets")
    params = {"input": "hi"}
    fake.load_dataset = lambda name, split: [  # type: ignore[attr-defined]
        {"id": 1, "name": name, "split": split, "responses_create_params": params}
    ]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    assert load_rows("nvidia/some-rows", split="validation") == [
        {"id": 1, "name": "nvidia/some-rows", "split": "validation", "responses_create_params": params}
    ]


def test_load_rows_explains_an_unreachable_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(name: str, split: str) -> list:
        raise ConnectionError("no network")

    fake = types.ModuleType("datasets")
    fake.load_dataset = offline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    with pytest.raises(RowsError, match="hub dataset failed .*no network.*local .jsonl"):
        load_rows("nvidia/Nemotron-RL-agent-workplace_assistant")
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    with pytest.raises(RowsError, match="needs the 'datasets' package"):
        load_rows("nvidia/Nemotron-RL-agent-workplace_assistant")
    with pytest.raises(RowsError, match="no such file"):
        load_rows("missing/rows.jsonl")
