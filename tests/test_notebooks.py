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
sources). A cell error fails the test. Runtimes are printed and written to build/notebooks/timings.json.
The `python3` kernelspec resolves to this interpreter: jupyter_client replaces a kernelspec argv of
`python` with `sys.executable`, and the test runs in the venv. Budget: all notebooks together within
15 minutes on 2 CPU cores.
"""

from __future__ import annotations

import json
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


@pytest.mark.slow
def test_notebooks_execute(capsys: pytest.CaptureFixture[str]) -> None:
    """Run all notebooks in order (later ones read earlier ones' run folders); report per-notebook time."""
    import papermill

    BUILD.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    failure = None
    for path in _notebooks():
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
            failure = f"{path.name}: cell {error.cell_index} raised {error.ename}: {error.evalue}"
        timings[path.name] = round(time.perf_counter() - started, 1)
        with capsys.disabled():  # shown in the test run's output, passing or not
            print(f"\n{path.name}: {timings[path.name]} s", flush=True)
        if failure:
            break
    timings["total"] = round(sum(timings.values()), 1)
    (BUILD / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    with capsys.disabled():
        print(f"\nall notebooks: {timings['total']} s (timings in {BUILD / 'timings.json'})", flush=True)
    assert failure is None, failure
