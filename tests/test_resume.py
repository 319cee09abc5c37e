"""Resuming killed runs, for real: `kit train` subprocesses are SIGKILLed at seeded random points of
their observed progress, then resumed (`--resume` / `run.resume=true`) until they finish.

What a finished chain must show: at most one step lost per kill (a step logged before the kill but
after the newest complete checkpoint is trained again), metrics.jsonl with strictly increasing steps,
every episode of every step in trajectories.jsonl exactly once, every line whole JSON, and in
transformers mode the re-trained steps sample exactly what the killed run had sampled (TRL restored
the RNG states, data order and step counter). In server mode a resumed job starts a new server with
the base weights, so the first resumed step's logprob gap between server and trainer shows whether the
checkpoint's weights were pushed before that step generated.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest
from conftest import KIT, PROJECT_ROOT
from safetensors.torch import load_file

from kit.config.tree import load_config, save_config
from kit.net import free_port, port_in_use
from kit.run_folder import RunFolder, read_whole_lines
from kit.train.resume import find_checkpoints

SEED = 20261201
EPISODES_PER_STEP = 2  # grpo.per_device_train_batch_size
TINY = [
    "generation.mode=transformers",
    "generation.start_server=false",
    "sft.enabled=false",
    "task_selection.probe_tasks=0",
    "run.eval_tasks=0",
    "grpo.save_steps=1",
    "grpo.save_total_limit=2",
    "grpo.num_generations=2",
    f"grpo.per_device_train_batch_size={EPISODES_PER_STEP}",
    "grpo.max_completion_length=24",
    "rollout.max_turns=1",
    "grpo.learning_rate=5.0e-6",  # the schedule checks below follow it, whatever cpu_demo's own rate
]


# ---------------------------------------------------------------- the run folder's pieces, no training


def test_a_torn_last_line_is_left_out_a_damaged_earlier_line_is_an_error(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3, "rew')
    assert read_whole_lines(path) == [{"step": 1}, {"step": 2}]
    run = RunFolder(tmp_path)
    run.truncate_to_step(1)
    assert path.read_text() == '{"step": 1}\n'
    path.write_text('{"step": 1, "rew{"step": 2}\n{"step": 3}\n')
    with pytest.raises(ValueError, match="line 1"):
        read_whole_lines(path)


def test_only_checkpoints_with_weights_and_a_readable_trainer_state_count(tmp_path):
    for step, files in {
        2: {"model.safetensors": "w", "trainer_state.json": "{}"},
        3: {"model.safetensors": "w"},  # killed before trainer_state.json
        4: {"model.safetensors": "w", "trainer_state.json": '{"glob'},  # killed while writing it
        5: {"trainer_state.json": "{}"},
    }.items():
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
    complete, incomplete = find_checkpoints(tmp_path)
    assert [c.step for c in complete] == [2] and [c.step for c in incomplete] == [3, 4, 5]


def test_resume_refuses_what_it_cannot_continue_and_says_what_to_do(cli, tmp_path):
    run_dir = tmp_path / "run"
    done = cli("train", "--config", "cpu_demo", *TINY, f"run.output_dir={run_dir}", "--resume")
    assert done.returncode == 2 and "does not exist: nothing to resume" in done.stderr
    assert "without run.resume" in done.stderr

    run_dir.mkdir()
    save_config(load_config("cpu_demo", [*TINY, f"run.output_dir={run_dir}"]), run_dir / "config.yaml")
    (run_dir / "checkpoints" / "checkpoint-3").mkdir(parents=True)
    done = cli("train", "--config", "cpu_demo", *TINY, f"run.output_dir={run_dir}", "run.resume=true")
    assert done.returncode == 2 and "holds no complete checkpoint (incomplete: checkpoint-3)" in done.stderr

    changed = ["grpo.learning_rate=1.0e-3", "rollout.max_turns=3", "grpo.max_steps=50"]  # the last may change
    done = cli("train", "--config", "cpu_demo", *TINY, *changed, f"run.output_dir={run_dir}", "--resume")
    assert done.returncode == 2, done.stderr
    message = done.stderr
    assert "grpo.learning_rate (5e-06 in the run, 0.001 now)" in message
    assert "rollout.max_turns (1 in the run, 3 now)" in message and "max_steps" not in message
    assert f"--config {run_dir / 'config.yaml'} --resume" in message


# ---------------------------------------------------------------- kill and resume, real training


def _start(run_dir: Path, log: Path, *overrides: str) -> subprocess.Popen:
    command = [*KIT, "train", "--config", "cpu_demo", *TINY, f"run.output_dir={run_dir}", *overrides]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    with open(log, "ab") as out:
        return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _logged(run_dir: Path) -> list[dict]:
    return RunFolder(run_dir).training_steps()


def _kill_after_step(process: subprocess.Popen, run_dir: Path, step: int, rng: random.Random) -> None:
    """SIGKILL `process` at a random time within 0.8 of a step after `step` is logged (so before the run
    could finish when `step` is not the last)."""
    deadline = time.monotonic() + 240
    while not any(m["step"] >= step for m in _logged(run_dir)):
        assert process.poll() is None, f"the run exited ({process.returncode}) before step {step}"
        assert time.monotonic() < deadline, f"step {step} not logged within 240 s"
        time.sleep(0.05)
    step_time = statistics.median(m["step_time"] for m in _logged(run_dir))
    time.sleep(rng.uniform(0, 0.8 * step_time))
    process.send_signal(signal.SIGKILL)
    assert process.wait(30) == -signal.SIGKILL, "the run finished before it could be killed"


def _wait_for_text(process: subprocess.Popen, log: Path, offset: int, text: str) -> None:
    deadline = time.monotonic() + 120
    while text not in log.read_text()[offset:]:
        assert process.poll() is None, f"the run exited ({process.returncode}) before logging {text!r}"
        assert time.monotonic() < deadline, f"{text!r} not logged within 120 s"
        time.sleep(0.05)


def _episodes_by_step(run_dir: Path) -> dict[int, list[list[str]]]:
    """The sampled completions of each step whose metrics line was written (so its episodes were too)."""
    logged = max((m["step"] for m in _logged(run_dir)), default=0)
    by_step: dict[int, list[list[str]]] = {}
    for record in read_whole_lines(run_dir / "trajectories.jsonl"):
        if record["step"] <= logged:
            by_step.setdefault(record["step"], []).append(record["raw_completions"])
    return by_step


def _compare_retrained(before: dict, after: dict, checkpoint_step: int) -> int:
    """Steps after the checkpoint that the killed run had trained and the resumed one trained again must
    have sampled the same completions for the same tasks; returns how many were compared."""
    again = [step for step in before if step > checkpoint_step and step in after]
    for step in again:
        assert after[step] == before[step], f"step {step} sampled differently after the resume"
    return len(again)


def _check_finished_run(run_dir: Path, max_steps: int, resumes: int) -> dict:
    """The files of a run that was resumed `resumes` times and finished."""
    for path in run_dir.glob("*.jsonl"):
        text = path.read_text()
        assert text.endswith("\n"), f"{path.name} ends in a torn line"
        for line in text.splitlines():
            json.loads(line)  # every line whole
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "reward" in m] == list(range(1, max_steps + 1))
    # The linear schedule from 5e-6, as one uninterrupted run follows it: the scheduler was restored.
    rates = [m["learning_rate"] for m in metrics if "reward" in m]
    assert rates == pytest.approx([5e-6 * (1 - step / max_steps) for step in range(max_steps)])
    assert ["train_runtime" in m for m in metrics].count(True) == 1 and "train_runtime" in metrics[-1]
    episodes = _episodes_by_step(run_dir)
    assert sorted(episodes) == list(range(1, max_steps + 1))
    assert {len(e) for e in episodes.values()} == {EPISODES_PER_STEP}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["grpo_steps"] == max_steps and len(summary["resumed_from"]) == resumes
    assert (run_dir / "final" / "model.safetensors").is_file()
    return summary


@pytest.mark.slow
def test_runs_killed_at_random_points_resume_to_the_same_finished_run(tiny_model_dir, tmp_path):
    """Five kills of one run in transformers mode; one also leaves a half-written checkpoint and torn
    lines, as a kill while saving does."""
    rng = random.Random(SEED)
    run_dir, log = tmp_path / "run", tmp_path / "train.log"
    max_steps, kills = 10, 5
    overrides = [f"model.name_or_path={tiny_model_dir}", f"grpo.max_steps={max_steps}"]
    process = _start(run_dir, log, *overrides)
    checkpoint_step, before, lost_per_kill, retrained = 0, {}, [], 0
    for trial in range(kills):
        _kill_after_step(process, run_dir, min(checkpoint_step + rng.randint(1, 2), max_steps - 1), rng)
        after = _episodes_by_step(run_dir)
        retrained += _compare_retrained(before, after, checkpoint_step)
        before = after
        newest = find_checkpoints(run_dir / "checkpoints")[0][-1]
        # At most one step lost: the resumed run's first step is at least the last one logged.
        lost_per_kill.append(_logged(run_dir)[-1]["step"] - newest.step)
        assert lost_per_kill[-1] <= 1, lost_per_kill
        checkpoint_step = newest.step
        if trial == 2:
            partial = newest.path.with_name(f"checkpoint-{newest.step + 1}")
            shutil.copytree(newest.path, partial, dirs_exist_ok=True)
            (partial / "trainer_state.json").unlink()
            for name in ("metrics.jsonl", "trajectories.jsonl"):
                with open(run_dir / name, "a") as handle:
                    handle.write('{"step": 99, "to')
        offset = len(log.read_text())
        process = _start(run_dir, log, *overrides, "--resume")
        _wait_for_text(process, log, offset, "resume: continuing from")  # the logs are cut back now
    assert process.wait(300) == 0, log.read_text()[-3000:]
    retrained += _compare_retrained(before, _episodes_by_step(run_dir), checkpoint_step)
    finished = _check_finished_run(run_dir, max_steps, kills)
    text = log.read_text()
    assert "incomplete (no readable trainer_state.json, or no weights): ignored and removed" in text
    assert "leaving out a torn last line" in text

    # Resuming at the last checkpoint trains nothing more (HF's Trainer alone would train one more step).
    metrics = (run_dir / "metrics.jsonl").read_text()
    process = _start(run_dir, log, *overrides, "--resume")
    assert process.wait(300) == 0, log.read_text()[-3000:]
    assert "nothing left to train" in log.read_text()[len(text) :]
    assert (run_dir / "metrics.jsonl").read_text() == metrics
    again = _check_finished_run(run_dir, max_steps, kills + 1)
    assert again["reward_first_last"] == finished["reward_first_last"]
    print(f"\nsteps lost per kill: {lost_per_kill}; re-trained steps compared: {retrained}")


@pytest.mark.slow
def test_a_resumed_server_mode_run_pushes_the_checkpoint_weights_first(tiny_model_dir, tmp_path):
    """Server mode with `kit train` starting its own server, an SFT warm-up (so the checkpoint's weights
    differ from the base weights a new server loads) and evaluations that a resume must not redo."""
    rng = random.Random(SEED + 1)
    run_dir, log = tmp_path / "run", tmp_path / "train.log"
    port = free_port()
    overrides = [
        f"model.name_or_path={tiny_model_dir}",
        "grpo.max_steps=4",
        "generation.mode=server",
        "generation.start_server=true",
        f"serve.port={port}",
        "sft.enabled=true",
        "sft.num_examples=8",
        "sft.args.learning_rate=1.0e-2",
        "run.eval_tasks=2",
    ]
    process = _start(run_dir, log, *overrides)
    _kill_after_step(process, run_dir, rng.randint(1, 2), rng)
    deadline = time.monotonic() + 60
    while port_in_use("127.0.0.1", port):  # the job's server stops with it, even after a SIGKILL
        assert time.monotonic() < deadline, "the killed job's vLLM server still holds its port after 60 s"
        time.sleep(0.5)
    earlier = json.loads((run_dir / "summary.json").read_text())
    newest = find_checkpoints(run_dir / "checkpoints")[0][-1]
    lost = _logged(run_dir)[-1]["step"] - newest.step
    mark = len(log.read_text())
    process = _start(run_dir, log, *overrides, "run.resume=true")
    assert process.wait(300) == 0, log.read_text()[-3000:]
    summary = _check_finished_run(run_dir, 4, resumes=1)
    assert lost <= 1
    resumed_log = log.read_text()[mark:]
    assert "resume: sft ran before" in resumed_log and "SFT warm-up:" not in resumed_log
    for stage in ("base", "after_sft"):
        assert summary[stage] == earlier[stage]  # kept, not evaluated again
    assert summary["after_grpo"]["n"] == 2
    # The warm-up's weights reached the final model although the resumed job skipped it: TRL loaded them
    # from the checkpoint.
    final = load_file(run_dir / "final" / "model.safetensors")
    base = load_file(Path(tiny_model_dir) / "model.safetensors")
    assert max((final[name] - base[name]).abs().max().item() for name in base.keys() & final.keys()) > 1e-3
    gaps = {m["step"]: m["sampling/sampling_logp_difference/mean"] for m in _logged(run_dir)}
    first = newest.step + 1
    # Server and trainer agree on the first resumed step's samples as on the others: the server held the
    # checkpoint's weights, not the base weights it started with.
    assert gaps[first] < 0.05, gaps
    print(f"\nserver mode: step lost {lost}; server-trainer logprob gap per step {gaps}")


def test_the_resume_plan_is_decided_once_from_the_run_folder(tmp_path):
    """A fresh run loads the base model and skips nothing; a resumed one skips the stages before GRPO and,
    at GRPO's last step, loads the checkpoint's weights instead of training on."""
    from kit.config.tree import save_config
    from kit.train.resume import plan_resume

    folder = tmp_path / "run"
    fresh_cfg = load_config("cpu_demo", [f"run.output_dir={folder}", "grpo.max_steps=3"])
    run = RunFolder(folder)
    fresh = plan_resume(fresh_cfg, run)
    assert fresh.checkpoint is None and not fresh.skips("sft") and fresh.trainer_checkpoint is None
    assert fresh.policy_weights("base") == "base"
    save_config(fresh_cfg, run.path / "config.yaml")
    checkpoint = run.checkpoints / "checkpoint-3"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")
    (checkpoint / "model.safetensors").write_bytes(b"")
    done = plan_resume(
        load_config("cpu_demo", [f"run.output_dir={folder}", "grpo.max_steps=3", "run.resume=true"]), run
    )
    assert done.grpo_done and done.policy_weights("base") == str(checkpoint)
    more = plan_resume(
        load_config("cpu_demo", [f"run.output_dir={folder}", "grpo.max_steps=5", "run.resume=true"]), run
    )
    assert not more.grpo_done and more.policy_weights("base") == "base"
    assert more.trainer_checkpoint == str(checkpoint)
    assert more.skips("sft") and more.skips("base_eval") and not more.skips("grpo")


def test_a_resumed_summary_keeps_the_earlier_stages_and_the_curve_up_to_the_checkpoint(tmp_path):
    """The held-out curve's points after the checkpoint are measured again by the resumed run; those up
    to it are kept, as are the stages before GRPO and the chain of resumes."""
    from kit.train.resume import Checkpoint, ResumePlan

    earlier = {
        "base": {"success_rate": 0.1}, "after_sft": {"success_rate": 0.2}, "grpo_steps": 6,
        "seconds": {"base_eval": 5.0, "sft": 9.0, "grpo": 50.0},
        "held_out_curve": [{"step": 2, "success_rate": 0.3}, {"step": 4, "success_rate": 0.4},
                           {"step": 6, "success_rate": 0.5}],
        "resumed_from": [{"checkpoint": "checkpoint-2", "step": 2}],
    }  # fmt: skip
    kept = ResumePlan(Checkpoint(tmp_path / "checkpoint-4", 4)).carried_summary(earlier)
    assert [point["step"] for point in kept["held_out_curve"]] == [2, 4]
    assert kept["base"] == earlier["base"] and kept["after_sft"] == earlier["after_sft"]
    assert kept["seconds"] == {"base_eval": 5.0, "sft": 9.0} and "grpo_steps" not in kept
    assert [r["step"] for r in kept["resumed_from"]] == [2, 4]
    early = ResumePlan(Checkpoint(tmp_path / "checkpoint-1", 1)).carried_summary(earlier)
    assert "held_out_curve" not in early
