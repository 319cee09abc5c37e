"""Fuzz the kit's five input surfaces and count what breaks: the built-in tool parsers, the workplace
sandbox's tool calls, the config loader, task rows, and requests to a running `kit serve` (vLLM on CPU).

The generators and checks are the test suite's (kit/testing/fuzz/, run by tests/test_*_fuzz.py), run at a
larger size and counted instead of stopping at the first finding. Run from the repository root:

    python3 -m bench.fuzz [--outputs 3000] [--calls 3000] [--configs 2500] [--rows 3000] [--requests 2000]

Prints one row per target: cases, crashes (an exception, a tool or parser failing inside, a 5xx, a dead
server), hangs (over the target's time limit), errors without a message that names the problem, and wrong
results (a refused call that changed state, a stream that differs from the parse, a config that does not
load back). The first finding of each kind goes to stderr. Exits 1 when any count is not zero.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kit.testing.fuzz.verdicts import Crash, Hang, Unclear, Wrong

KINDS = {Crash: "crashes", Hang: "hangs", Unclear: "errors without a clear message", Wrong: "wrong results"}


@dataclass
class Tally:
    """Cases run against one target, and what they found by kind."""

    target: str
    limit_s: float  # a case slower than this is a hang
    cases: int = 0
    found: Counter[str] = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def note(self, kind: str, detail: str) -> None:
        self.found[kind] += 1
        self.first.setdefault(kind, detail[:600])

    def run(self, check: Callable[..., Any], *args: Any, cases: int = 1) -> None:
        started = time.monotonic()
        try:
            check(*args)
        except (Crash, Hang, Unclear, Wrong) as verdict:
            self.note(KINDS[type(verdict)], str(verdict))
        else:
            if time.monotonic() - started > self.limit_s:
                self.note("hangs", f"{time.monotonic() - started:.1f} s for {args!r:.300}")
        self.cases += cases
        self.seconds += time.monotonic() - started


def drive(strategy: st.SearchStrategy, body: Callable[[Any], None], examples: int) -> None:
    """Run ``body`` on ``examples`` generated values; findings are counted by ``body``, never raised."""

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(value: Any) -> None:
        body(value)

    run()


def fuzz_parsers(outputs: int) -> Tally:
    from kit.testing.fuzz import tool_parsers as fuzz

    tally = Tally("tool parsers (kit, hermes, json): parse, truncations, stream", limit_s=10.0)

    def check(document: str, truncations: list[int], cuts: list[int]) -> None:
        for text in [document] + [document[: cut % (len(document) + 1)] for cut in truncations]:
            fuzz.check_parse(text)
        fuzz.check_stream(document, cuts)

    integers = st.integers(min_value=0)
    cases = st.tuples(
        fuzz.model_outputs, st.lists(integers, min_size=2, max_size=2), st.lists(integers, max_size=12)
    )
    drive(cases, lambda case: tally.run(check, *case), outputs)
    return tally


def fuzz_sandbox(calls: int) -> Tally:
    from kit.testing.fuzz import workplace as fuzz

    tally = Tally("workplace sandbox tool calls", limit_s=10.0)
    sequences = -(-calls // fuzz.CALLS_PER_EXAMPLE)
    drive(fuzz.calls, lambda sequence: tally.run(fuzz.check_calls, sequence, cases=len(sequence)), sequences)
    return tally


def fuzz_configs(configs: int) -> Tally:
    from kit.testing.fuzz import config as fuzz

    tally = Tally("config loader: recipes and overrides", limit_s=10.0)
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        drive(
            st.tuples(fuzz.any_recipe, fuzz.overrides),
            lambda case: tally.run(
                lambda r, o: fuzz.check_load(fuzz.write_recipe(where, r), o, where), *case
            ),
            configs // 2,
        )
        drive(
            st.tuples(fuzz.targets, fuzz.wrong_values, fuzz.faults, st.booleans()),
            lambda case: tally.run(fuzz.check_mutation, where, *case),
            configs - configs // 2,
        )
    return tally


def fuzz_server(requests: int) -> Tally:
    from kit.config.tree import DEMO_MODEL
    from kit.models import resolve_model
    from kit.testing.fuzz import server as fuzz

    tally = Tally("kit serve requests (vLLM CPU, API key set)", limit_s=fuzz.TIMEOUT)
    with (
        tempfile.TemporaryDirectory() as folder,
        fuzz.fuzz_server(resolve_model(DEMO_MODEL), Path(folder)) as server,
    ):
        drive(fuzz.cases, lambda case: tally.run(fuzz.send, server.url, case), requests)
        try:
            fuzz.assert_alive(server)
        except Crash as crash:
            tally.note("crashes", str(crash))
    return tally


def fuzz_rows(rows: int) -> Tally:
    from kit.testing.fuzz import rows as fuzz

    tally = Tally("task rows (NeMo-Gym format) loaded into tasks", limit_s=10.0)
    with tempfile.TemporaryDirectory() as folder:
        drive(
            fuzz.files,
            lambda case: tally.run(fuzz.check_rows, Path(folder), case, cases=len(case)),
            rows // 2,
        )
    return tally


def table(tallies: list[Tally]) -> str:
    header = "| target | cases | " + " | ".join(KINDS.values()) + " | seconds |"
    rows = [header, "|" + "---|" * (len(KINDS) + 3)]
    for tally in tallies:
        counts = " | ".join(str(tally.found[kind]) for kind in KINDS.values())
        rows.append(f"| {tally.target} | {tally.cases:,} | {counts} | {tally.seconds:.0f} |")
    total = sum(t.cases for t in tallies)
    counts = " | ".join(str(sum(t.found[kind] for t in tallies)) for kind in KINDS.values())
    rows.append(f"| all | {total:,} | {counts} | {sum(t.seconds for t in tallies):.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=3000, help="model outputs for the parsers (3000)")
    parser.add_argument("--calls", type=int, default=3000, help="sandbox tool calls, 10 per sequence (3000)")
    parser.add_argument("--configs", type=int, default=2500, help="recipes and mutations to load (2500)")
    parser.add_argument("--requests", type=int, default=2000, help="requests to kit serve; 0 skips (2000)")
    parser.add_argument("--rows", type=int, default=3000, help="task rows, about 2 per file (3000)")
    args = parser.parse_args(argv)

    # The server first: when it cannot start, say so before minutes go to the others.
    tallies = [fuzz_server(args.requests)] if args.requests else []
    tallies += [fuzz_parsers(args.outputs), fuzz_sandbox(args.calls), fuzz_configs(args.configs)]
    tallies.append(fuzz_rows(args.rows))
    for tally in tallies:
        for kind, detail in tally.first.items():
            print(f"{tally.target}: first of {tally.found[kind]} {kind}: {detail}", file=sys.stderr)
    print(table(tallies))
    return 1 if any(tally.found for tally in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
