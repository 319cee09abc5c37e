"""Base -> SFT -> GRPO success of `kit train` run folders, and the median gain of each variant.

A run folder named ``<variant>_seed<S>`` belongs to ``<variant>``; the median is over its seeds.
    python bench/summarize_runs.py runs/gpu_demo_sweep/*/summary.json
    python bench/summarize_runs.py --json results/demo_sweep.json runs/gpu_demo_sweep/*/summary.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path


def run_rows(paths: list[str]) -> list[dict]:
    """One row per run folder: its variant, seed, the three success rates (%) and the job's seconds."""
    rows = []
    for path in sorted(paths):
        summary = json.loads(Path(path).read_text())
        name = Path(path).parent.name
        named = re.fullmatch(r"(.*)_seed(\d+)", name)
        row: dict = {
            "run": name,
            "variant": named[1] if named else name,
            "seed": int(named[2]) if named else None,
        }
        if summary.get("after_grpo") is not None:
            base, sft, grpo = (100 * summary[k]["success_rate"] for k in ("base", "after_sft", "after_grpo"))
            row.update(base=base, sft=sft, grpo=grpo, gain=round(grpo - sft, 1), n=summary["after_grpo"]["n"])
            row["job_seconds"] = summary.get("seconds", {}).get("total")
        rows.append(row)
    return rows


def variant_medians(rows: list[dict]) -> dict[str, dict]:
    """Per variant: the median gain over its seeds and each seed's gain."""
    gains: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if "gain" in row:
            gains[row["variant"]].append(row["gain"])
    return {v: {"median_gain": statistics.median(g), "gains": g} for v, g in sorted(gains.items())}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("summaries", nargs="+", help="summary.json files of run folders")
    parser.add_argument("--json", help="also write the rows and the medians to this file")
    args = parser.parse_args()
    rows = run_rows(args.summaries)
    print(f"{'run':32} {'base':>6} {'SFT':>6} {'GRPO':>6} {'gain':>6} {'job s':>7}")
    for row in rows:
        if "gain" not in row:
            print(f"{row['run']:32} (no GRPO evaluation)")
            continue
        seconds = row["job_seconds"] if row["job_seconds"] is not None else float("nan")
        print(f"{row['run']:32} {row['base']:6.1f} {row['sft']:6.1f} {row['grpo']:6.1f} {row['gain']:+6.1f} "
              f"{seconds:7.0f}")  # fmt: skip
    medians = variant_medians(rows)
    for variant, m in medians.items():
        spread = ", ".join(f"{g:+.1f}" for g in m["gains"])
        print(f"{variant}: median gain {m['median_gain']:+.1f} over {len(m['gains'])} seeds ({spread})")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": rows, "variants": medians}, indent=1) + "\n")


if __name__ == "__main__":
    main()
