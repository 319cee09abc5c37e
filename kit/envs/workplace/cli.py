"""``kit env`` subcommands for the workplace environment: generate, verify, show.

Each handler takes the parsed arguments and returns an exit code: 0 ok, 2 bad input (with a message on
stderr naming the file or line).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from typing import Any

from kit.envs.rows import RowsError, ground_truth_calls, load_rows, raw_rows
from kit.envs.workplace.reward import outcome_reward, replay
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import flat_schemas
from kit.envs.workplace.state import state_diff
from kit.envs.workplace.tasks import (
    DEFAULT_TRAIN,
    DEFAULT_VALIDATION,
    predicted_calls,
    row_toolkits,
    write_splits,
)


class InputError(Exception):
    """Bad command-line input; the message says what to fix."""


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _base(databases: str | None) -> WorkplaceSandbox | None:
    if databases is None:
        return None
    try:
        return WorkplaceSandbox.from_csv_dir(databases)
    except (OSError, ValueError) as error:
        raise InputError(f"--databases: {error}") from None


def _ground_truth(row: dict[str, Any], where: str) -> list[Any]:
    if "ground_truth" not in row:
        raise InputError(f"{where}: the row has no 'ground_truth' (the list of calls that solve it)")
    try:
        return ground_truth_calls(row["ground_truth"])
    except RowsError as error:
        raise InputError(f"{where}: {error}") from None


def _handler(body: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn InputError / RowsError into a message on stderr and exit code 2."""

    @functools.wraps(body)
    def handler(args: argparse.Namespace) -> int:
        try:
            return body(args)
        except (InputError, RowsError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2

    return handler


@_handler
def generate(args: argparse.Namespace) -> int:
    """Write train.jsonl and validation.jsonl for a seed."""
    try:
        paths = write_splits(args.out, args.seed, args.train, args.validation, args.dialogue_share)
    except OSError as error:
        raise InputError(f"--out {args.out}: {error}") from None
    except RuntimeError as error:
        raise InputError(f"cannot generate that many distinct tasks: {error}") from None
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


@_handler
def verify(args: argparse.Namespace) -> int:
    """Print ``{"index", "reward"}`` per row: the outcome reward of the row's predicted calls."""
    base = _base(args.databases)
    for index, row in enumerate(raw_rows(args.rows)):
        where = f"{args.rows} row {index}"
        try:
            predicted = predicted_calls(row)
        except RowsError as error:
            raise InputError(f"{where}: {error}") from None
        reward = outcome_reward(predicted, _ground_truth(row, where), base)
        print(json.dumps({"index": index, "reward": reward}))
    return 0


@_handler
def show(args: argparse.Namespace) -> int:
    """Print one row's request, its tools and the state change its ground truth makes."""
    rows = load_rows(args.rows)
    if not 0 <= args.index < len(rows):
        raise InputError(f"--index {args.index}: {args.rows} has rows 0 to {len(rows) - 1}")
    row = rows[args.index]
    truth = _ground_truth(row, f"{args.rows} row {args.index}")
    print(f"row {args.index}: {row.get('category')} ({row.get('tier', 'no tier')})")
    metadata = row.get("verifier_metadata")
    if isinstance(metadata, dict) and "ambiguity_type" in metadata:
        print(
            f"dialogue: {metadata['ambiguity_type']}; original intent: {metadata.get('original_user_query')}"
        )
    params = row.get("responses_create_params")
    for message in params.get("input", []) if isinstance(params, dict) else []:
        if isinstance(message, dict):
            print(f"[{message.get('role')}] {message.get('content')}")
    toolkits = row_toolkits(row)
    names = [schema["name"] for schema in flat_schemas(toolkits)]
    print(f"tools ({', '.join(toolkits)}): {', '.join(names)}")
    for title, calls in (("solution", row.get("solution")), ("ground truth", truth)):
        if calls is None:
            continue
        print(f"{title}:")
        for call in calls:
            shown = f"{call.get('name')}({call.get('arguments')})" if isinstance(call, dict) else repr(call)
            print(f"  {shown}")
    base = _base(args.databases) or WorkplaceSandbox()
    print("state change:")
    for line in state_diff(base.state, replay(truth, base).state) or ["(none)"]:
        print(f"  {line}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``generate``, ``verify`` and ``show`` to an argparse sub-parsers object."""
    gen = subparsers.add_parser("generate", help="write train.jsonl and validation.jsonl of generated tasks")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument("--out", required=True, help="output directory")
    gen.add_argument(
        "--train", type=_count, default=DEFAULT_TRAIN, help=f"train rows (default {DEFAULT_TRAIN})"
    )
    gen.add_argument(
        "--validation",
        type=_count,
        default=DEFAULT_VALIDATION,
        help=f"validation rows (default {DEFAULT_VALIDATION})",
    )
    gen.add_argument(
        "--dialogue-share",
        type=_share,
        default=0.0,
        help="share of each split (0 to 1) made ambiguous dialogue rows with a simulated user (default 0)",
    )
    gen.set_defaults(func=generate)

    ver = subparsers.add_parser(
        "verify",
        help="outcome reward per row of NeMo-Gym rows with model calls (response.output or predicted)",
    )
    ver.add_argument("--rows", required=True, help="jsonl rows holding ground_truth and the model's calls")
    ver.add_argument("--databases", help="CSV directory in NeMo-Gym's layout (default: the kit's state)")
    ver.set_defaults(func=verify)

    sho = subparsers.add_parser(
        "show", help="print a task, its tools and the state change of its ground truth"
    )
    sho.add_argument("--rows", required=True, help="jsonl rows")
    sho.add_argument("--index", type=int, required=True, help="row index, from 0")
    sho.add_argument("--databases", help="CSV directory in NeMo-Gym's layout (default: the kit's state)")
    sho.set_defaults(func=show)
