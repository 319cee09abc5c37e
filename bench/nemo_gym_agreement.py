"""The same rewards three ways: the kit's in-process workplace environment, the kit's loop on NeMo-Gym's own
workplace_assistant server, and NeMo-Gym's own agent driving `kit serve`, on the same rows, model and
databases, greedy.

    python bench/nemo_gym_agreement.py [--rows 100] [--out bench/results/nemo_gym_agreement.json]

The policy is the demo model after 8 SFT steps on easy workplace tasks (kit.testing.warm_models), served
by `kit serve` on CPU. The rows are the kit's easy validation tasks whose ground truth applies to NeMo-Gym's
databases, each carrying the compact schemas of its task's toolkits, so that every path renders the same
prompt; the in-process environment runs on NeMo-Gym's CSVs (`env.databases`). The token budget is one no
episode reaches (NeMo-Gym's agent limits calls, not tokens). Prints and saves each path's success, the rows
where all three rewards agree, and the rows where the three episodes are the same tokens.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from kit.config.tree import DEMO_MODEL, load_config
from kit.device import machine_description
from kit.envs.environment import make_environment
from kit.generation.base import Sampling
from kit.generation.vllm_process import VLLMServer
from kit.generation.vllm_server import VLLMServerGenerator, connect_to_server
from kit.models import load_tokenizer, resolve_model
from kit.net import free_port
from kit.paths import PROJECT_ROOT
from kit.rollout.loop import Rollouts
from kit.testing.gym_rows import NEMO_GYM_DATABASES, comparable_rows
from kit.testing.warm_models import warmed_up

PATHS = {
    "in_process": [f"env.databases={NEMO_GYM_DATABASES}"],
    "nemo_gym": ["env.name=nemo_gym"],
    "nemo_gym_agent": ["env.name=nemo_gym", "rollout.agent=nemo_gym"],
}
BUDGET = 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument(
        "--out", type=Path, default=PROJECT_ROOT / "bench" / "results" / "nemo_gym_agreement.json"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kit-bench-agreement-"))
    model = warmed_up("smollm2-tool-caller-workplace-easy", resolve_model(DEMO_MODEL), "cpu_demo",
                      ["sft.num_examples=64", "sft.tiers=[easy]"])  # fmt: skip
    rows = comparable_rows(
        work / "rows.jsonl", PROJECT_ROOT / "data" / "workplace" / "validation.jsonl", args.rows
    )
    common = [
        "generation.mode=server",
        f"env.eval_file={rows}",
        "env.tiers=[easy]",
        f"serve.port={free_port(2)}",
    ]
    base_cfg = load_config("cpu_demo", common)
    episodes, started = {}, time.perf_counter()
    with VLLMServer(base_cfg, work / "server.log", model=model) as server:
        for name, overrides in PATHS.items():
            cfg = load_config("cpu_demo", [*common, f"generation.server_url={server.url}", *overrides])
            env = make_environment(cfg.env, work / name)
            tokenizer = load_tokenizer(cfg.model, model)
            generator = VLLMServerGenerator(connect_to_server(cfg.generation, work / "server.log"))
            try:
                tasks = env.load_tasks(str(rows))
                episodes[name] = Rollouts.from_config(cfg, tokenizer, env).run(
                    tasks, generator, Sampling(0.0), BUDGET
                )
            finally:
                env.close()
    names = list(PATHS)
    per_row = list(zip(*(episodes[n] for n in names), strict=True))
    tokens = lambda e: e.prompt_ids + e.completion_ids  # noqa: E731
    result = {
        "command": "python bench/nemo_gym_agreement.py --rows " + str(args.rows),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "machine": machine_description(),
        "rows": len(per_row),
        "success": {n: sum(e.reward for e in episodes[n]) / len(per_row) for n in names},
        "same_reward_all_three": sum(len({e.reward for e in row}) == 1 for row in per_row),
        "same_tokens_all_three": sum(len({tuple(tokens(e)) for e in row}) == 1 for row in per_row),
        "prefix_replacements": sum(e.prefix_replacements for e in episodes["nemo_gym_agent"]),
        "differing_rows": [
            {
                "row": i,
                **{n: {"reward": e.reward, "calls": e.tool_calls} for n, e in zip(names, row, strict=True)},
            }
            for i, row in enumerate(per_row)
            if len({e.reward for e in row}) > 1
        ][:10],
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "differing_rows"}, indent=1))


if __name__ == "__main__":
    main()
