"""The tutorial notebooks: structure checks (fast) and papermill runs with smoke parameters (slow).

Structure, instead of nbval: the notebooks are committed without outputs (README and each notebook's
intro say so), and almost every cell's output depends on timing, sampling or the hardware (tokens/s,
success rates, server logs), so `pytest --nbval-lax` would compare nothing useful, and a strict nbval
run would fail on every machine but the one that produced the outputs. What must hold instead, and is
checked here: every notebook has exactly one cell tagged `parameters` (papermill injects the smoke
values after it), no code cell carries committed outputs or execution counts, and the kernelspec is
`python3`.

Execution: every notebook runs under papermill, in order (04 evaluates the model 01 trains, 03 serves
it), with CWD = notebooks/ and the smoke parameters below, into build/notebooks/ (never over the
sources), each notebook its own test. A cell error fails the test, and so does a missing promise: what the
notebook's prose says it makes (run folders, files, figures, tables, printed results) is checked after it
runs. Runtimes are printed and written to build/notebooks/timings.json.
The `python3` kernelspec resolves to this interpreter: jupyter_client replaces a kernelspec argv of
`python` with `sys.executable`, and the test runs in the venv. Budget: all notebooks together within
15 minutes on 2 CPU cores.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import PROJECT_ROOT

NOTEBOOKS = PROJECT_ROOT / "notebooks"
BUILD = PROJECT_ROOT / "build" / "notebooks"
SMOKE_RUNS = "../runs/ci_notebooks"

# Small enough for 2 CPU cores; each notebook's defaults are what a single-GPU user runs.
SMOKE: dict[str, dict[str, Any]] = {
    "00_setup_and_check.ipynb": {"max_new_tokens": 8},
    "01_single_gpu_grpo.ipynb": {
        "recipe": "cpu_demo",
        "model_name": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "run_dir": f"{SMOKE_RUNS}/01",
        "eval_tasks": 2,
        "sft_examples": 2,
        "max_steps": 1,
        "num_generations": 2,
        "batch_size": 2,
        "max_completion_length": 32,
        "extra_overrides": ["task_selection.probe_tasks=0"],  # the 2-example warm-up solves no task
    },
    "02_tool_parsers_and_plugins.ipynb": {"run_dir": f"{SMOKE_RUNS}/02"},
    "03_vllm_server_mode.ipynb": {
        "nb01_run_dir": f"{SMOKE_RUNS}/01",
        "run_dir": f"{SMOKE_RUNS}/03",
        "grpo_steps": 1,
        "num_generations": 2,
        "batch_size": 2,
        "max_completion_length": 32,
        "throughput_tasks": 2,
    },
    "04_evaluate_and_compare.ipynb": {
        "nb01_run_dir": f"{SMOKE_RUNS}/01",
        "eval_tasks": 2,
        "max_completion_length": 32,
        "dialogue_tasks": 2,
    },
    "05_multinode_with_skypilot.ipynb": {"run_rehearsal": False, "rehearsal_dir": f"{SMOKE_RUNS}/05"},
    "06_nemo_gym_environments.ipynb": {
        "run_dir": f"{SMOKE_RUNS}/06",
        "eval_tasks": 4,
        "sft_examples": 4,
        "max_steps": 1,
        "agent_tasks": 2,
        "extra_overrides": [
            "task_selection.probe_tasks=0",  # the 4-example warm-up solves no task
            "grpo.num_generations=2",
            "grpo.per_device_train_batch_size=4",
            "grpo.max_completion_length=64",
        ],
    },
}


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def test_every_notebook_has_smoke_parameters() -> None:
    assert [p.name for p in _notebooks()] == sorted(SMOKE), "SMOKE must list every notebook"


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_structure(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters', expected 1"
    assert tagged[0].cell_type == "code"
    names = {line.split("=")[0].strip() for line in tagged[0].source.splitlines() if "=" in line}
    unknown = set(SMOKE[path.name]) - names
    assert not unknown, f"{path.name}: smoke parameters {unknown} are not in its parameters cell"
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name}: cell {index} has committed outputs"
            assert cell.execution_count is None, f"{path.name}: cell {index} has an execution count"


def _executed(path: Path) -> str:
    """Run one notebook under papermill into build/notebooks/ (its timing into timings.json) and return
    the text it printed and displayed, cell by cell; a cell error fails the test, naming the cell."""
    import papermill

    BUILD.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(path),
            str(BUILD / path.name),
            parameters=SMOKE[path.name],
            cwd=str(NOTEBOOKS),
            kernel_name="python3",
            progress_bar=False,
        )
    except papermill.PapermillExecutionError as error:
        pytest.fail(f"{path.name}: cell {error.cell_index} raised {error.ename}: {error.evalue}")
    finally:
        timings_file = BUILD / "timings.json"
        timings = json.loads(timings_file.read_text()) if timings_file.exists() else {}
        timings[path.name] = round(time.perf_counter() - started, 1)
        timings_file.write_text(json.dumps(timings, indent=2) + "\n")
        print(f"{path.name}: {timings[path.name]} s")
    texts = []
    for cell in nbformat.read(BUILD / path.name, as_version=4).cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") + output.get("data", {}).get("text/plain", ""))
    return "\n".join(texts)


def _run_folder(relative: str) -> Path:
    return NOTEBOOKS / relative


def _summary(run: Path, n: int) -> dict[str, Any]:
    """summary.json of a notebook's run, with the three stages the notebook reports, each on n tasks."""
    summary = json.loads((run / "summary.json").read_text())
    for stage in ("base", "after_sft", "after_grpo"):
        assert summary[stage]["n"] == n, f"{run}: {stage} evaluated {summary[stage]['n']} tasks, not {n}"
    return summary


def _training_steps(run: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [line for line in lines if "reward" in line]


def _check_00(printed: str) -> None:
    # The model resolves to a folder transformers and vLLM load, and the sanity generation is text.
    model_name = SMOKE["00_setup_and_check.ipynb"].get("model_name", "HuggingFaceTB/SmolLM2-135M-Instruct")
    resolved = next(line for line in printed.splitlines() if line.startswith(f"{model_name} -> "))
    folder = Path(resolved.split(" -> ", 1)[1].rsplit(" (", 1)[0])
    assert (folder / "config.json").is_file()
    answer = next(line for line in printed.splitlines() if line.startswith("answer:"))
    assert answer.removeprefix("answer:").strip(), "the sanity generation produced no text"
    assert "Nothing to fix." in printed or "FIX:" in printed  # the verdict


def _check_01(printed: str) -> None:
    smoke = SMOKE["01_single_gpu_grpo.ipynb"]
    run = _run_folder(smoke["run_dir"])
    # "The run folder now holds everything a later notebook needs": metrics, trajectories, final/.
    assert len(_training_steps(run)) == smoke["max_steps"]
    episodes = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len({episode["step"] for episode in episodes}) == smoke["max_steps"]
    assert (run / "final" / "config.json").is_file() and (run / "reward_curve.png").is_file()
    _summary(run, smoke["eval_tasks"])  # before and after: the table the last cell shows
    assert "reward per step:" in printed and "GRPO steps in" in printed


def _check_02(printed: str) -> None:
    # The new plugin is written into the run folder and round-trips the ground-truth calls.
    assert (
        _run_folder(SMOKE["02_tool_parsers_and_plugins.ipynb"]["run_dir"]) / "function_tag_plugin.py"
    ).is_file()
    assert "round trip OK for" in printed
    assert "malformed -> None" not in printed  # the parser says why a botched call failed


def _check_03(printed: str) -> None:
    smoke = SMOKE["03_vllm_server_mode.ipynb"]
    run = _run_folder(smoke["run_dir"])
    # GRPO against the server: one weight sync a step, the throughput table, the server stopped after.
    assert len(_training_steps(run)) == smoke["grpo_steps"]
    syncs = re.search(r"(\d+) weight syncs", printed)
    assert syncs and int(syncs.group(1)) >= smoke["grpo_steps"]
    assert "vLLM server" in printed and "transformers generate" in printed
    assert "server running: False" in printed


def _check_04(printed: str) -> None:
    smoke = SMOKE["04_evaluate_and_compare.ipynb"]
    # Both models on the same tasks, the training episodes of notebook 01 by step, the dialogue tasks.
    for label in ("base", "trained"):
        assert f"{label}: success" in printed
    assert "training episodes from" in printed
    assert f"trained model on {smoke['dialogue_tasks']} dialogue tasks" in printed


def _check_05(printed: str) -> None:
    # Each task YAML validates with SkyPilot's own parser; each gets a launch command per infra and a
    # plan for every rank.
    from kit.sky.validate import default_files

    for path in default_files():
        assert f"{path}: OK" in printed or f"{path.name}: OK" in printed, f"{path.name} did not validate"
        assert f"# {path.name}" in printed and f"===== {path.name}, rank 0" in printed
    assert printed.count("sky launch") >= 2 * 3


def _check_06(printed: str) -> None:
    smoke = SMOKE["06_nemo_gym_environments.ipynb"]
    run = _run_folder(smoke["run_dir"])
    assert len(_training_steps(run)) == smoke["max_steps"]
    _summary(run, smoke["eval_tasks"])
    # The third path: NeMo-Gym's own agent on the trained policy, against the kit's loop.
    assert f"/{smoke['agent_tasks']} solved; the kit's loop:" in printed
    assert "prefixes replaced while stitching" in printed


PROMISES = {
    "00_setup_and_check.ipynb": _check_00,
    "01_single_gpu_grpo.ipynb": _check_01,
    "02_tool_parsers_and_plugins.ipynb": _check_02,
    "03_vllm_server_mode.ipynb": _check_03,
    "04_evaluate_and_compare.ipynb": _check_04,
    "05_multinode_with_skypilot.ipynb": _check_05,
    "06_nemo_gym_environments.ipynb": _check_06,
}


def test_every_notebook_has_its_promises_checked() -> None:
    assert sorted(PROMISES) == sorted(SMOKE)


@pytest.mark.slow
@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_runs_and_makes_what_it_promises(path: Path) -> None:
    """In order (03 and 04 read notebook 01's run folder): the notebook runs, then what its prose says it
    makes (files, figures, tables) is there."""
    PROMISES[path.name](_executed(path))
