"""Does what the kit's tasks teach carry over to NeMo-Gym's own workplace rows? A recipe's stages (base,
after the SFT warm-up, after GRPO), each evaluated on NeMo-Gym's rows with NeMo-Gym's own databases.

    python bench/nemo_gym_transfer.py --rows NEMO_GYM_VALIDATION.jsonl --recipe cpu_demo [--grpo]
                                      [--seed 0] [--out bench/results/nemo_gym_transfer.json] [k=v ...]

`--rows` is NeMo-Gym's multi-turn workplace validation set (`resources_servers/workplace_assistant/data/
validation.jsonl` in NeMo-Gym's repository, 51 rows; not shipped with the kit). It is used for evaluation
only: nothing is trained, tuned or selected on it. Its rows are dialogues, answered by the recipe's
simulated user (`user_model`, scripted by default: it reveals the row's original request). Each stage's
report has `free` (rows that score 1 whatever the policy does) and `earned` (success on the others).
Greedy, through the recipe's generation (its vLLM server, on CPU too). Without `--grpo` the job stops
after the warm-up. The results file keeps one entry per recipe and seed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from kit.config.tree import load_config
from kit.device import machine_description
from kit.envs.environment import make_environment
from kit.paths import PROJECT_ROOT
from kit.rollout.user_simulators import open_user_simulator
from kit.testing.gym_rows import NEMO_GYM_DATABASES
from kit.train.evaluate import evaluate_with_generator
from kit.train.job import TrainingJob

KEPT = ("n", "success_rate", "interval95", "invalid", "free", "earned", "by_ambiguity_type", "dialogue")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=Path, required=True, help="NeMo-Gym's workplace validation rows")
    parser.add_argument("--recipe", default="cpu_demo")
    parser.add_argument("--grpo", action="store_true", help="also train GRPO and evaluate after it")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--databases", type=Path, default=NEMO_GYM_DATABASES)
    parser.add_argument(
        "--out", type=Path, default=PROJECT_ROOT / "bench" / "results" / "nemo_gym_transfer.json"
    )
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    out_dir = Path(f"/tmp/kit-transfer/{Path(args.recipe).stem}-seed{args.seed}")
    cfg = load_config(args.recipe, [f"run.seed={args.seed}", f"run.output_dir={out_dir}", *args.overrides])
    nemo_gym = make_environment(load_config(args.recipe, [f"env.databases={args.databases}"]).env)
    rows = nemo_gym.load_tasks(str(args.rows))
    started, stages = time.perf_counter(), {}
    job = TrainingJob(cfg)
    with open_user_simulator(cfg, nemo_gym.outcome, job.run.path) as user:

        def evaluate(stage: str) -> None:
            job.evaluate(stage)  # the kit's own validation tasks (run.eval_tasks), into summary.json
            generator = job.served_generator()
            evaluation = evaluate_with_generator(
                cfg, generator, job.tokenizer, nemo_gym, rows, cfg.grpo.max_completion_length, user
            )
            stages[stage] = {key: evaluation.report[key] for key in KEPT if key in evaluation.report}
            print(stage, json.dumps(stages[stage]["earned"]), flush=True)

        evaluate("base")
        if cfg.sft.enabled:
            job.sft()
            evaluate("after_sft")
        if args.grpo:
            job.select_tasks()
            job.grpo()
            evaluate("after_grpo")
    job.finish()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous[f"{Path(args.recipe).stem}-seed{args.seed}"] = {
        "command": "python bench/nemo_gym_transfer.py --rows ROWS --recipe "
        + args.recipe
        + (" --grpo" if args.grpo else "")
        + f" --seed {args.seed} "
        + " ".join(args.overrides),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": commit,
        "machine": machine_description(),
        "rows": str(args.rows.name),
        "seconds": round(time.perf_counter() - started),
        "stages": stages,
        "kit_validation": {
            stage: {key: job.summary[stage][key] for key in ("n", "success_rate", "interval95")}
            for stage in stages
            if stage in job.summary
        },
    }
    args.out.write_text(json.dumps(previous, indent=1) + "\n")


if __name__ == "__main__":
    main()
