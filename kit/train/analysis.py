"""What the notebooks and reports compute from runs: success tables, failure classes, token segments,
rollout timings. Pure functions over reports, trajectory records and episodes; `kit.notebook.display`
shows them.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from kit.episode import is_success


def success_table(reports: dict[str, dict[str, Any]]) -> Any:
    """One DataFrame: success rate overall, per category and per tier, one column per report."""
    import pandas as pd

    rows: dict[tuple[str, str], dict[str, str]] = {}
    for label, report in reports.items():
        if not report:
            continue
        groups = [("all", {"all": report})]
        groups += [("category", report.get("by_category", {})), ("tier", report.get("by_tier", {}))]
        for group, entries in groups:
            for key, entry in entries.items():
                rows.setdefault((group, key), {})[label] = f"{entry['success_rate']:.0%} (n={entry['n']})"
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["group", "value"])
    return frame.fillna("-")


def _arguments(call: dict[str, Any]) -> Any:
    """A call's arguments as an object (NeMo-Gym rows give them as a JSON string)."""
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return arguments


def _normalised_calls(calls: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (call.get("name", ""), json.dumps(_arguments(call), sort_keys=True, default=str)) for call in calls
    ]


def call_text(call: dict[str, Any]) -> str:
    """A call as `name({...})`, its arguments as plain JSON whether they came as an object or a string."""
    return f"{call.get('name', '')}({json.dumps(_arguments(call), ensure_ascii=False, default=str)})"


def classify_episode(record: dict[str, Any]) -> str:
    """One label per episode: success, user_error (its simulated user broke down or broke a rule, or
    its environment failed), parse_failure, tool_error, no_call, wrong_tool, wrong_arguments, or
    wrong_calls (right tools and arguments but not the ground truth's effect, e.g. order or count)."""
    if record.get("failure") or record.get("user_breaks"):
        return "user_error"
    if is_success(record.get("reward") or 0.0):
        return "success"
    if record.get("parse_failures"):
        return "parse_failure"
    if record.get("tool_errors"):
        return "tool_error"
    calls = _normalised_calls(record.get("tool_calls", []))
    truth = _normalised_calls(record.get("ground_truth", []))
    if not calls:
        return "no_call"
    if {name for name, _ in calls} != {name for name, _ in truth}:
        return "wrong_tool"
    if sorted(calls) != sorted(truth):
        return "wrong_arguments"
    return "wrong_calls"


def failure_counts(records: Sequence[dict[str, Any]], by: str | None = None) -> Any:
    """A DataFrame counting `classify_episode` labels, overall or split by a task field (category, tier)."""
    import pandas as pd

    if by is None:
        counts = Counter(classify_episode(r) for r in records)
        frame = pd.DataFrame({"episodes": counts}).sort_values("episodes", ascending=False)
        frame["share"] = (frame["episodes"] / max(len(records), 1)).map("{:.0%}".format)
        return frame
    table: dict[str, Counter] = {}
    for record in records:
        table.setdefault(str(record.get("task", {}).get(by)), Counter())[classify_episode(record)] += 1
    return pd.DataFrame(table).fillna(0).astype(int).T.sort_index()


def token_segments(episode, tokenizer) -> list[dict[str, Any]]:
    """The completion of a token-exact episode cut into runs of sampled (loss) and tool (masked) ids."""
    segments: list[dict[str, Any]] = []
    for token, mask in zip(episode.completion_ids, episode.env_mask, strict=True):
        source = "sampled by the policy (loss)" if mask else "tool result (masked)"
        if segments and segments[-1]["source"] == source:
            segments[-1]["ids"].append(token)
        else:
            segments.append({"source": source, "ids": [token]})
    return [
        {"source": s["source"], "tokens": len(s["ids"]), "text": tokenizer.decode(s["ids"])} for s in segments
    ]


def time_rollouts(cfg, generator, tokenizer, env, tasks, max_tokens: int, label: str) -> dict[str, Any]:
    """Greedy rollouts of `tasks` with one generator (an evaluation), timed: episodes/s and tokens/s."""
    from kit.train.evaluate import evaluate_with_generator

    started = time.perf_counter()
    episodes = evaluate_with_generator(cfg, generator, tokenizer, env, tasks, max_tokens).episodes
    seconds = time.perf_counter() - started
    tokens = sum(e.generated_tokens for e in episodes)
    return {
        "generator": label,
        "episodes": len(episodes),
        "generated_tokens": tokens,
        "seconds": round(seconds, 2),
        "episodes_per_s": round(len(episodes) / seconds, 2),
        "tokens_per_s": round(tokens / seconds, 1),
    }
