"""pass^k and pass@k (τ²-bench's reliability metric): estimators, seeded sampling, `kit eval --repeats`."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import ConfigError, load_config
from kit.envs.environment import make_environment
from kit.generation.base import Sampling
from kit.generation.transformers_gen import TransformersGenerator
from kit.models import load_policy, load_tokenizer
from kit.stats import wilson_interval
from kit.train.evaluate import summarize
from kit.train.success_rates import pass_at_k, pass_hat_k, rate

# ---------------------------------------------------------------- the estimators


@st.composite
def outcomes(draw) -> tuple[int, int, int]:
    attempts = draw(st.integers(1, 9))
    return draw(st.integers(0, attempts)), attempts, draw(st.integers(1, attempts))


@given(outcomes())
def test_estimators_match_every_draw_of_k_attempts(case):
    """pass^k and pass@k of c successes in n attempts are the shares of the n-choose-k draws of k attempts
    that are all successes, and that hold at least one."""
    successes, attempts, k = case
    trials = [True] * successes + [False] * (attempts - successes)
    draws = list(itertools.combinations(trials, k))
    assert pass_hat_k(successes, attempts, k) == pytest.approx(sum(map(all, draws)) / len(draws))
    assert pass_at_k(successes, attempts, k) == pytest.approx(sum(map(any, draws)) / len(draws))


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_rate_pass_k_falls_pass_at_k_rises_both_start_at_the_success_rate(successes):
    report = rate([(c, 5) for c in successes], 5)
    hat = [report["pass^k"][str(k)]["rate"] for k in range(1, 6)]
    at = [report["pass@k"][str(k)]["rate"] for k in range(1, 6)]
    assert hat == sorted(hat, reverse=True) and at == sorted(at)
    assert hat[0] == at[0] == report["success_rate"] == round(sum(successes) / (5 * len(successes)), 4)
    for k in ("1", "5"):
        low, high = report["pass^k"][k]["interval95"]
        assert low <= report["pass^k"][k]["rate"] <= high


def test_one_attempt_is_the_plain_success_rate_with_its_wilson_interval():
    expected = {"n": 4, "success_rate": 0.75, "interval95": [0.3006, 0.9544]}
    assert rate([(1, 1), (0, 1), (1, 1), (1, 1)]) == expected
    assert wilson_interval(3, 4) == pytest.approx((0.3006, 0.9544), abs=1e-4)


def test_attempts_kept_out_of_the_rates_leave_a_task_its_other_attempts():
    # Task 1 lost one of its 3 attempts to a user that broke a rule; task 2 lost all of them.
    report = rate([(3, 3), (1, 2), (0, 0)], 3)
    assert report["n"] == 2 and report["success_rate"] == 0.75
    assert report["pass^k"]["2"]["rate"] == 0.5  # both tasks have 2 attempts: 1 and 0
    assert report["pass^k"]["3"]["rate"] == 1.0  # only task 0 has 3


@pytest.mark.parametrize(("successes", "attempts", "k"), [(4, 3, 1), (-1, 3, 1), (1, 3, 0), (1, 3, 4)])
def test_estimators_refuse_impossible_counts(successes, attempts, k):
    with pytest.raises(ValueError, match="1 <= k <= attempts"):
        pass_hat_k(successes, attempts, k)


def test_summary_of_repeats_counts_each_task_once():
    cfg = load_config("cpu_demo", ["env.tiers=[easy, medium]"])
    tasks = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=6)
    # Repeat by repeat: task 0 always solved, task 1 in one of 3 repeats, the others never.
    rewards = [1.0 if i == 0 or (i == 1 and repeat == 2) else 0.0 for repeat in range(3) for i in range(6)]
    report = summarize(tasks, rewards, repeats=3)
    assert report["n"] == 6 and report["success_rate"] == round(4 / 18, 4)
    assert report["pass^k"]["3"]["rate"] == round(1 / 6, 4)
    assert report["pass@k"]["3"]["rate"] == round(2 / 6, 4)
    assert sum(entry["n"] for entry in report["by_category"].values()) == 6
    with pytest.raises(ValueError, match="17 rewards for 3 repeats of 6 tasks"):
        summarize(tasks, rewards[:-1], repeats=3)


# ---------------------------------------------------------------- configuration


def test_repeats_must_be_positive_and_sampled(cli):
    with pytest.raises(ConfigError, match=r"run.eval_repeats \(kit eval --repeats\) is 0; it must be 1"):
        load_config("cpu_demo", ["run.eval_repeats=0"])
    with pytest.raises(ConfigError, match="greedy repeats would all be the same episode"):
        load_config("cpu_demo", ["run.eval_repeats=2", "grpo.temperature=0"])
    done = cli("eval", "--config", "cpu_demo", "--repeats", "0")
    assert done.returncode == 2 and "--repeats) is 0" in done.stderr


# ---------------------------------------------------------------- seeded sampling, real models


def test_seeded_sampling_repeats_itself_and_leaves_torch_stream_alone(tiny_model_dir):
    cfg = load_config("cpu_demo")
    tokenizer = load_tokenizer(cfg.model, tiny_model_dir)
    generator = TransformersGenerator.for_model(load_policy(cfg.model, tiny_model_dir), tokenizer)
    prompts = [[1, 2, 3, 4], [5, 6, 7]]

    def sample(seed: int) -> list[list[int]]:
        return [c.token_ids for c in generator.generate(prompts, [12, 12], Sampling(1.0, seed=seed))]

    state = torch.random.get_rng_state()
    first = sample(7)
    assert torch.equal(torch.random.get_rng_state(), state)  # a trainer's stream is where it was
    assert sample(7) == first and sample(8) != first
    assert Sampling(1.0, seed=7).request_seed([1, 2]) != Sampling(1.0, seed=7).request_seed([1, 2, 3])
    assert Sampling(1.0).request_seed([1, 2]) is None


@pytest.mark.slow
def test_kit_eval_repeats_reports_pass_k_on_plain_and_dialogue_tasks(cli, demo_model_dir, tmp_path):
    """Two sampled episodes of each of 4 tasks, half of them dialogues with the scripted user, by a model
    that calls tools: pass^1..2 and pass@1..2 overall and per group. (That a seed gives the same episodes
    is checked without a model above and through a server in test_server_mode.)"""
    caller = tool_caller(demo_model_dir, "kit")
    common = ["eval", "--config", "cpu_demo", "--model", caller, "--limit", "4", "--repeats", "2",
              *TASK_OVERRIDES, "env.dialogue_share=0.5", "user_model.kind=scripted", "user_model.max_turns=2",
              "grpo.max_completion_length=96", "rollout.max_turns=2"]  # fmt: skip
    out = tmp_path / "report.json"
    report = json.loads(cli(*common, "--out", str(out)).stdout)
    assert report["sampling"] == {"repeats": 2, "temperature": 0.7, "seed": 0}
    groups = [report, *report["by_category"].values(), *report["by_ambiguity_type"].values()]
    for group in groups:
        hat = [group["pass^k"][k]["rate"] for k in ("1", "2")]
        at = [group["pass@k"][k]["rate"] for k in ("1", "2")]
        assert hat == sorted(hat, reverse=True) and at == sorted(at)
        assert hat[0] == at[0] == group["success_rate"]
    episodes = [json.loads(line) for line in (tmp_path / "report.episodes.jsonl").read_text().splitlines()]
    assert [e["repeat"] for e in episodes] == [0] * 4 + [1] * 4
    assert report["success_rate"] == round(sum(e["reward"] >= 1 for e in episodes) / 8, 4)
    assert report["dialogue"]["tasks"] == sum(e["ambiguity_type"] is not None for e in episodes[:4])
