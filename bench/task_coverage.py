"""The workplace task families NeMo-Gym publishes against the kit's templates and tasks.

    python bench/task_coverage.py [--out bench/results/task_coverage.json]

For each family (kit.envs.workplace.templates.families: NeMo-Gym's 28 `common_multi_step_patterns`,
then the kit's two): the templates that stand for it, its rows in data/workplace (train + validation),
and how many of them can be made ambiguous in each of NeMo-Gym's three ambiguity types (a dialogue
variant of that type applies). Prints a Markdown table; writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from kit.envs.rows import load_rows
from kit.envs.workplace.dialogue_variants import AMBIGUITY_TYPES, _candidates
from kit.envs.workplace.templates import TEMPLATES
from kit.envs.workplace.templates.families import FAMILIES, NEMO_GYM_FAMILIES
from kit.paths import PROJECT_ROOT

SHORT = {
    "referential_ambiguity": "referential",
    "missing_constraint": "missing",
    "user_preference_ambiguity": "preference",
}


def coverage() -> dict[str, dict]:
    templates = defaultdict(list)
    for (category, tier), functions in TEMPLATES.items():
        for function in functions:
            templates[function.family].append(f"{function.__name__} ({category}, {tier})")
    rows = [
        row
        for split in ("train", "validation")
        for row in load_rows(PROJECT_ROOT / "data" / "workplace" / f"{split}.jsonl")
    ]
    counts, ambiguous = Counter(), defaultdict(Counter)
    for row in rows:
        counts[row["family"]] += 1
        request = row["responses_create_params"]["input"][-1]["content"]
        for kind in {candidate[0] for candidate in _candidates(request, row["ground_truth"])}:
            ambiguous[row["family"]][kind] += 1
    return {
        family: {
            "description": description,
            "nemo_gym": family in NEMO_GYM_FAMILIES,
            "templates": templates[family],
            "rows": counts[family],
            "ambiguity": {kind: ambiguous[family][kind] for kind in AMBIGUITY_TYPES},
        }
        for family, description in FAMILIES.items()
    }


def table(figures: dict[str, dict]) -> str:
    lines = [
        "| family | templates | rows | " + " | ".join(SHORT.values()) + " |",
        "|---|---|---|---|---|---|",
    ]
    for family, f in figures.items():
        name = family if f["nemo_gym"] else f"{family} (kit)"
        kinds = " | ".join(str(f["ambiguity"][k]) for k in AMBIGUITY_TYPES)
        lines.append(f"| {name} | {len(f['templates'])} | {f['rows']} | {kinds} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "bench" / "results" / "task_coverage.json")
    args = parser.parse_args()
    figures = coverage()
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(table(figures))


if __name__ == "__main__":
    main()
