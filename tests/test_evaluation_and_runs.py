"""Evaluation, the SFT warm-up, the run folder and episode classification, each tested directly."""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT_ROOT
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.models import load_policy, load_tokenizer
from kit.run_folder import RunFolder
from kit.tool_parsers import load_parser
from kit.train.analysis import classify_episode
from kit.train.evaluate import evaluate_model, summarize
from kit.train.sft import (
    check_demonstration_format,
    demonstration,
    solution_calls,
    tokenize_demonstration,
)
from kit.train.success_rates import wilson_interval

PLUGIN = PROJECT_ROOT / "tests" / "plugins" / "bracket_call_plugin.py"
NEMOTRON = PROJECT_ROOT / "kit" / "tool_parsers" / "plugins" / "nemotron_toolcall.py"
# A user's plugin with no format_tool_calls: it reads the <tool_call> blocks the kit's chat template renders
# from a message's tool_calls, or, written for another template, fails the warm-up's read-back check.
TAG_READER = """
import json, re
from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.tool_parsers import ToolParser, ToolParserManager

@ToolParserManager.register_module("{name}")
class TagReader(ToolParser):
    def extract_tool_calls(self, model_output, request):
        calls = [json.loads(m) for m in re.findall(r"{open}\\s*(\\{{.*?\\}})\\s*{close}", model_output, re.S)]
        if not calls:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        found = [FunctionCall(name=c["name"], arguments=json.dumps(c["arguments"])) for c in calls]
        return ExtractedToolCallInformation(
            tools_called=True, content=None, tool_calls=[ToolCall(function=f) for f in found])
"""

# ---------------------------------------------------------------- intervals and summaries


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [(0, 24, 0.0, 0.1380), (12, 24, 0.3143, 0.6857), (24, 24, 0.8620, 1.0), (145, 200, 0.6593, 0.7822)],
)
def test_wilson_interval(successes, n, low, high):
    assert wilson_interval(successes, n) == pytest.approx((low, high), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_summary_counts_each_tier_and_category():
    cfg = load_config("cpu_demo", ["env.tiers=[easy, medium]"])
    tasks = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=20)
    rewards = [1.0 if i % 3 == 0 else 0.0 for i in range(len(tasks))]
    report = summarize(tasks, rewards)
    assert report["n"] == 20 and report["success_rate"] == pytest.approx(7 / 20)
    for group in ("by_tier", "by_category"):
        assert sum(entry["n"] for entry in report[group].values()) == 20
        successes = sum(round(entry["success_rate"] * entry["n"]) for entry in report[group].values())
        assert successes == 7
    low, high = report["interval95"]
    assert low < report["success_rate"] < high


# ---------------------------------------------------------------- SFT warm-up + evaluation, real model


def test_demonstrations_train_only_on_what_the_assistant_wrote(demo_model_dir):
    cfg = load_config("cpu_demo")
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    env = make_environment(cfg.env)
    task = next(t for t in env.load_tasks(cfg.env.train_file, limit=20) if t.ground_truth)
    messages = demonstration(task, env, load_parser("kit"))
    row = tokenize_demonstration(tokenizer, messages, task.tools)
    trained = tokenizer.decode(
        [t for t, m in zip(row["input_ids"], row["assistant_masks"], strict=True) if m]
    )
    assert task.ground_truth[0]["name"] in trained  # the call is trained on
    tool_results = [m["content"] for m in messages if m["role"] == "tool"]
    assert tool_results and all(result[:40] not in trained for result in tool_results)
    assert task.messages[-1]["content"][:40] not in trained  # the user's request is not


def trained_spans(row: dict) -> list[list[int]]:
    """The runs of token ids the SFT loss covers (one per assistant turn)."""
    spans, current = [], []
    for token, trained in zip(row["input_ids"], row["assistant_masks"], strict=True):
        if trained:
            current.append(token)
        elif current:
            spans, current = [*spans, current], []
    return spans + ([current] if current else [])


@pytest.mark.parametrize(
    ("name", "plugin"),
    [("kit", None), ("hermes", None), ("json", None), ("nemotron_toolcall", NEMOTRON),
     ("bracket_call", PLUGIN), ("tag_reader", "template")],
)  # fmt: skip
def test_warm_up_demonstrations_parse_back_into_their_calls(demo_model_dir, tmp_path, name, plugin):
    """What the SFT loss trains on, decoded turn by turn and read by the rollout's own parser, is the
    solution's calls, in order: the warm-up teaches the format the rollout parses."""
    if plugin == "template":  # no format_tool_calls: the chat template renders the calls
        plugin = tmp_path / "tag_reader.py"
        plugin.write_text(TAG_READER.format(name=name, open="<tool_call>", close="</tool_call>"))
    cfg = load_config("cpu_demo")
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    env = make_environment(cfg.env)
    parser = load_parser(name, plugin, tokenizer)
    tasks = [t for t in env.load_tasks(cfg.env.train_file, limit=60) if len(t.solution) >= 2][:4]
    assert tasks
    for task in tasks:
        check_demonstration_format(tokenizer, parser, task, env)
        row = tokenize_demonstration(tokenizer, demonstration(task, env, parser), task.tools)
        read = [parser.parse(tokenizer.decode(span), task.tools) for span in trained_spans(row)]
        assert [call for result in read for call in result.tool_calls] == solution_calls(task)
        assert not any(result.error for result in read)


def test_warm_up_refuses_a_format_its_parser_cannot_read(demo_model_dir, tmp_path):
    plugin = tmp_path / "call_tags_reader.py"
    plugin.write_text(TAG_READER.format(name="call_tags", open="<call>", close="</call>"))
    cfg = load_config("cpu_demo")
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    env = make_environment(cfg.env)
    task = next(t for t in env.load_tasks(cfg.env.train_file, limit=20) if t.solution)
    with pytest.raises(ValueError, match="call_tags.*does not read back.*format_tool_calls"):
        check_demonstration_format(tokenizer, load_parser("call_tags", plugin, tokenizer), task, env)


@pytest.mark.slow
def test_sft_warm_up_teaches_a_call_format_evaluation_measures_it(demo_model_dir):
    caller_dir = tool_caller(demo_model_dir, "bracket")  # the kit's SFT warm-up, 8 steps
    cfg = load_config(
        "cpu_demo",
        [*TASK_OVERRIDES, "rollout.tool_parser=bracket_call", f"rollout.tool_parser_plugin={PLUGIN}",
         "grpo.max_completion_length=96", "rollout.max_turns=2"],
    )  # fmt: skip
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.eval_file, limit=6)
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    base = evaluate_model(cfg, load_policy(cfg.model, demo_model_dir), tokenizer, env, tasks)
    warmed = evaluate_model(cfg, load_policy(cfg.model, caller_dir), tokenizer, env, tasks)
    assert not any(e.tool_calls for e in base.episodes)  # the base model never writes this format
    assert sum(len(e.tool_calls) for e in warmed.episodes) >= len(tasks) // 2
    # One scoring: the report's rate is the mean of the returned rewards, which are the env's outcome.
    assert warmed.rewards == [
        env.outcome(t, e.tool_calls) for t, e in zip(tasks, warmed.episodes, strict=True)
    ]
    assert warmed.report["success_rate"] == pytest.approx(
        sum(r >= 1 for r in warmed.rewards) / len(tasks), 1e-3
    )


# ---------------------------------------------------------------- the run folder


def test_every_rank_writes_its_own_trajectory_file(tmp_path, monkeypatch):
    from kit.episode import Episode

    run = RunFolder(tmp_path / "run").create()
    cfg = load_config("cpu_demo")
    tasks = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=1)
    episode = [Episode(prompt_ids=[1], completion_ids=[2], env_mask=[1], turns=1)]
    for rank in (0, 2, 1):
        monkeypatch.setenv("RANK", str(rank))
        run.append_trajectories(1, tasks, episode, [float(rank)])
    assert sorted(p.name for p in run.path.glob("trajectories*.jsonl")) == [
        "trajectories.jsonl",
        "trajectories.rank1.jsonl",
        "trajectories.rank2.jsonl",
    ]
    assert [r["rank"] for r in run.trajectories()] == [0, 1, 2]


def test_run_folder_keeps_steps_and_trajectories_apart(tmp_path):
    run = RunFolder(tmp_path / "run").create()
    run.append_metrics({"phase": "sft", "train_loss": 1.2})
    run.append_metrics({"step": 1, "reward": 0.25, "episode/success_rate": 0.25})
    run.append_metrics({"step": 2, "reward": 0.5, "episode/success_rate": 0.5})
    run.append_metrics({"step": 2, "train_runtime": 10.0})
    assert [m["step"] for m in run.training_steps()] == [1, 2]
    cfg = load_config("cpu_demo")
    tasks = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=2)
    from kit.episode import Episode

    episodes = [Episode(prompt_ids=[1], completion_ids=[2, 3], env_mask=[1, 1], turns=1) for _ in tasks]
    run.append_trajectories(1, tasks, episodes, [1.0, 0.0])
    records = run.trajectories()
    assert [r["reward"] for r in records] == [1.0, 0.0] and {r["step"] for r in records} == {1}
    assert records[0]["completion_tokens"] == 2 and records[0]["task"] == tasks[0].info
    assert run.plot_rewards().stat().st_size > 1000
    summary = {
        "base": {"success_rate": 0.1, "interval95": [0.0, 0.3], "n": 10},
        "after_grpo": {"success_rate": 0.6, "interval95": [0.3, 0.8], "n": 10},
    }
    curve, stages = run.reward_figure(summary).axes
    plotted = {line.get_label(): list(line.get_ydata()) for line in curve.get_lines()}
    assert plotted["mean reward (5-step mean)"] == [0.25, 0.375]  # the metrics' rewards, averaged
    assert [bar.get_height() for bar in stages.patches] == [0.1, 0.6]
    assert [tick.get_text() for tick in stages.get_xticklabels()] == ["base", "after grpo"]
    for line in run.metrics_file.read_text().splitlines():
        json.loads(line)


# ---------------------------------------------------------------- episode classification


def _call(name, arguments):
    return {"name": name, "arguments": arguments}


_TRUTH = [_call("email_delete_email", {"email_id": "00000001"})]


@pytest.mark.parametrize(
    ("record", "label"),
    [
        ({"reward": 1.0, "tool_calls": _TRUTH, "ground_truth": _TRUTH}, "success"),
        ({"reward": 0.0, "parse_failures": 1, "tool_calls": [], "ground_truth": _TRUTH}, "parse_failure"),
        ({"reward": 0.0, "tool_errors": 1, "tool_calls": _TRUTH, "ground_truth": _TRUTH}, "tool_error"),
        ({"reward": 0.0, "tool_calls": [], "ground_truth": _TRUTH}, "no_call"),
        ({"reward": 0.0, "tool_calls": [_call("email_search_emails", {})], "ground_truth": _TRUTH},
         "wrong_tool"),
        ({"reward": 0.0, "tool_calls": [_call("email_delete_email", {"email_id": "2"})],
          "ground_truth": _TRUTH}, "wrong_arguments"),
        # right tool and arguments (given as a JSON string), yet not the ground truth's effect
        ({"reward": 0.0, "tool_calls": [_call("email_delete_email", '{"email_id": "00000001"}')],
          "ground_truth": _TRUTH}, "wrong_calls"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)  # fmt: skip
def test_classify_episode(record, label):
    assert classify_episode(record) == label


def test_trajectory_browser_names_the_step_or_evaluation():
    """Training episodes show their GRPO step; evaluation records (step -1) say "evaluation"."""
    from kit.notebook.trajectory_browser import episode_html, episode_text

    record = {"reward": 1.0, "tool_calls": _TRUTH, "ground_truth": _TRUTH, "task": {"tier": "easy"}}
    assert "step 3 " in episode_text({**record, "step": 3})
    assert "step 3 &middot;" in episode_html({**record, "step": 3})
    evaluation = {**record, "step": -1}  # what kit.run_folder.episode_records writes for evaluations
    assert "step -1" not in episode_html(evaluation)
    assert "evaluation &middot;" in episode_html(evaluation)
    assert episode_text(evaluation).startswith("evaluation ")
