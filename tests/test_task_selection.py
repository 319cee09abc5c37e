"""Task selection: GRPO trains only on probed tasks whose sampled episodes mix outcomes."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import ConfigError, load_config
from kit.testing.fuzz.server import KEY
from kit.train.job import TrainingJob


@pytest.mark.parametrize(
    "overrides",
    [["task_selection.probe_tasks=-1"], ["task_selection.probe_tasks=8", "task_selection.samples=1"]],
)
def test_settings_that_cannot_select_are_refused(overrides):
    with pytest.raises(ConfigError, match="task_selection has probe_tasks"):
        load_config("cpu_demo", overrides)


def test_several_trainer_processes_are_refused_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setenv("WORLD_SIZE", "2")
    cfg = load_config("cpu_demo", ["task_selection.probe_tasks=8", f"run.output_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="one trainer process"):
        TrainingJob(cfg)


def test_grpo_trains_on_the_probed_tasks_with_mixed_outcomes_and_a_resume_keeps_them(
    demo_model_dir, shared_server, served_weights, tmp_path, caplog
):
    caller = tool_caller(demo_model_dir)  # the job pushes its weights to the shared server before probing
    cfg = load_config(
        "cpu_demo",
        [
            *TASK_OVERRIDES,
            f"model.name_or_path={caller}",
            "generation.mode=server",
            "generation.start_server=false",
            f"generation.server_url={shared_server.url}",
            f"generation.api_key={KEY}",
            "sft.enabled=false",
            "run.eval_tasks=0",
            f"run.output_dir={tmp_path}",
            "task_selection.probe_tasks=12",
            "task_selection.samples=4",
            "rollout.max_turns=2",
            "grpo.max_completion_length=96",
            "grpo.num_generations=4",
            "grpo.per_device_train_batch_size=8",
            "grpo.gradient_accumulation_steps=1",
            "grpo.max_steps=1",
            "grpo.save_strategy=steps",
            "grpo.save_steps=1",
        ],
    )
    job = TrainingJob(cfg)
    probed = job.train_tasks[:12]
    job.select_tasks()
    report = job.summary["task_selection"]
    # The tool caller solves some of these tasks some of the time: some mixed, some not.
    assert 0 < report["kept"] < report["probed"] == 12
    # With 0/1 rewards a probed task is exactly one of: kept (mixed), always solved, never solved.
    assert report["kept"] + report["always_solved"] + report["never_solved"] == 12
    assert [t.info["id"] for t in job.train_tasks] == report["kept_ids"]
    assert set(report["kept_ids"]) <= {t.info["id"] for t in probed}
    assert json.loads((tmp_path / "summary.json").read_text())["task_selection"] == report

    job.grpo()
    trained = {json.loads(line)["task"]["id"] for line in (tmp_path / "trajectories.jsonl").open()}
    assert trained <= set(report["kept_ids"])

    # A resumed job trains on the same tasks (TRL's sampler resumes on the same dataset), without probing.
    resumed = TrainingJob(dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, resume=True)))
    with caplog.at_level(logging.INFO, logger="kit.train.job"):
        resumed.select_tasks()
    assert [t.info["id"] for t in resumed.train_tasks] == report["kept_ids"]
    assert "resume: task_selection ran before checkpoint-1" in caplog.text
    assert resumed.summary["task_selection"] == report
