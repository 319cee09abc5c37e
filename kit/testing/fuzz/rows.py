"""Fuzzing task rows: NeMo-Gym rows with wrong types, missing fields, strings for lists and huge values,
and the check each must pass (`check_rows`): the rows load into tasks, or loading stops with a RowsError
or ConfigError whose message names the file and line, never another exception.

Used by tests/test_nemo_gym.py and bench/fuzz.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import strategies as st

from kit.config.tree import ConfigError, load_config
from kit.envs.environment import make_environment
from kit.envs.rows import RowsError
from kit.testing.fuzz.verdicts import Crash, Unclear, Wrong

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
messages = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "role": values | st.sampled_from(["user", "system", "developer"]),
            "content": values,
            "type": values,
        },
    ),  # fmt: skip
    max_size=3,
)
params = st.fixed_dictionaries(
    {}, optional={"input": values | messages, "tools": values, "parallel_tool_calls": values}
)
rows = st.fixed_dictionaries(
    {},
    optional={
        "responses_create_params": values | params,
        "ground_truth": values | st.text().map(json.dumps) | values.map(json.dumps),
        "category": values,
        "tier": values | st.sampled_from(["easy", "medium", "hard"]),
        "user_model_system_prompt": values,
        "verifier_metadata": values,
        "toolkits": values,
        "id": values,
    },
)
files = st.lists(rows | values, min_size=1, max_size=4)
_WHERE = re.compile(r"\.jsonl:\d+: |\.jsonl row \d+: |No task in ")


def check_rows(folder: Path, rows: list) -> None:
    """Load `rows` (written as one jsonl file in `folder`) with the workplace environment; raise a verdict
    when it crashes, refuses without naming where, or hands out a task the rollout could not use."""
    path = folder / "fuzz.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    env = make_environment(load_config(None, ["env.tiers=[]"]).env)
    try:
        tasks = env.load_tasks(str(path))
    except (RowsError, ConfigError) as error:
        if not _WHERE.search(str(error)):
            raise Unclear(f"{error} (for {rows!r:.300})") from None
        return
    except Exception as error:  # noqa: BLE001 - what the fuzz is here to find
        raise Crash(f"{type(error).__name__}: {error} (for {rows!r:.300})") from error
    for task in tasks:
        usable = task.messages and all(isinstance(m.get("content"), str) for m in task.messages)
        if not usable or not isinstance(task.ground_truth, list):
            raise Wrong(f"unusable task {task!r:.300} from {rows!r:.300}")
