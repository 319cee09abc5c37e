"""Workplace rows that every path renders alike, for comparing the in-process environment with NeMo-Gym's
server and agent (tests and benchmarks): tasks whose ground truth applies to NeMo-Gym's databases, each
carrying the compact schemas of its task's toolkits, which is what the in-process environment shows with
`env.tools_in_prompt: task` and `env.compact_tools: true` (the cpu_demo recipe)."""

from __future__ import annotations

from pathlib import Path

from kit.envs.rows import load_rows
from kit.envs.workplace.reward import ground_truth_problem
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import flat_schemas
from kit.envs.workplace.tasks import row_toolkits, write_rows
from kit.paths import PROJECT_ROOT

NEMO_GYM_DATABASES = PROJECT_ROOT.parent / "shared" / "reference" / "workplace_assistant" / "databases"


def comparable_rows(
    out: Path,
    source: Path,
    count: int,
    databases: Path = NEMO_GYM_DATABASES,
    tier: str = "easy",
    categories: tuple[str, ...] = (),
) -> Path:
    """Write to `out` the first `count` rows of `source` of `tier` (and `categories`, when given) whose
    ground truth applies to `databases`, each with its toolkits' compact tool schemas."""
    base = WorkplaceSandbox.from_csv_dir(databases)
    rows = []
    for row in load_rows(source):
        if row.get("tier") != tier or (categories and row.get("category") not in categories):
            continue
        if ground_truth_problem(row["ground_truth"], base) is None:
            row["responses_create_params"]["tools"] = flat_schemas(row_toolkits(row), compact=True)
            rows.append(row)
        if len(rows) == count:
            break
    return write_rows(out, rows)
