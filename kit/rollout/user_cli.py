"""``kit user check``: how well a simulated user keeps its rules (kit.rollout.user_check), printed as a
table, and with --out written as JSON."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import Any

DEFAULT_RECIPE = "gpu_dialogue"
"""The recipe whose `user_model` and dialogue rows are checked when --config is not given."""


def check(args: argparse.Namespace) -> int:
    """Run the check of the recipe's `user_model` on the dialogue rows of --tasks (default: the recipe's
    env.eval_file); exit 2 when the rows hold no dialogue row."""
    from kit.config.tree import ConfigError, load_config
    from kit.envs.environment import make_environment
    from kit.progress import Progress
    from kit.rollout.user_check import check_user, report_table
    from kit.rollout.user_simulators import open_user_simulator

    cfg = load_config(args.config or DEFAULT_RECIPE, args.overrides)
    source = args.tasks or cfg.env.eval_file
    log_dir = Path(args.out).parent if args.out else Path(cfg.run.output_dir)
    env = make_environment(cfg.env, log_dir / "nemo_gym")
    with contextlib.closing(env):
        tasks = [t for t in env.load_tasks(source) if t.is_dialogue][: args.limit or None]
        if not tasks:
            raise ConfigError(
                f"{source} holds no dialogue row (a row with a user_model_system_prompt) in env.tiers "
                f"{cfg.env.tiers}. Pass --tasks with NeMo-Gym dialogue rows, or make some with "
                "`kit env generate --dialogue-share 1.0 --out DIR`."
            )
        with (
            open_user_simulator(cfg, env.outcome, log_dir) as user,
            Progress(len(tasks), "row", "check") as bar,
        ):
            report = check_user(user, tasks, progress=bar.done)
    report["tasks"] = str(source)
    print(report_table(report))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def register(subparsers: Any) -> None:
    """Add ``check`` to an argparse sub-parsers object."""
    chk = subparsers.add_parser(
        "check",
        help="drive the recipe's user model through written policy turns and report how it keeps its rules",
        description="Drive the recipe's user_model (scripted, endpoint or served) through written policy "
        "turns on dialogue rows: a clarifying question, a question the intent has no answer to, a completion "
        "after the ground-truth calls, and a 'done' before any call. Reports, with 95 %% intervals, answers "
        "that carry the asked detail, unasked reveals, invented details, 'I don't know', ending on time, "
        "role adherence and reply length.",
    )
    chk.add_argument("--config", help=f"recipe: a YAML path or a shipped name (default: {DEFAULT_RECIPE})")
    chk.add_argument(
        "overrides", nargs="*", help="dotted overrides, e.g. user_model.kind=served user_model.model=ID"
    )
    chk.add_argument(
        "--tasks", help="dialogue rows, NeMo-Gym format (jsonl; default: the recipe's env.eval_file)"
    )
    chk.add_argument("--limit", type=int, default=0, help="check at most N dialogue rows (default: all)")
    chk.add_argument("--out", help="write the JSON report here")
    chk.set_defaults(func=check)
