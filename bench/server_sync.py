"""Server mode on one machine: GRPO step time, weight-sync time per method, and proof the sync landed.

    python bench/server_sync.py --model DIR [--steps 6] [--methods ipc reload] [--out FILE] [overrides]

Starts `kit serve` for the single_gpu recipe (on a GPU it shares the trainer's GPU:
serve.gpu_memory_utilization 0.3), then for each weight-sync method trains `--steps` GRPO steps
against it. After each run the trained weights are pushed once more and the server's greedy
continuation of a few prompts is compared with the trainer's own: equal ids mean the server really
holds the trainer's weights. Prints per method: median step time, median sync time and its share.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from gpu_step_time import BENCH_OVERRIDES, StepTimer

from kit.net import free_port


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="model folder (e.g. an SFT'd demo model)")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--methods", nargs="+", default=["ipc", "reload"])
    parser.add_argument("--out", default="bench/results/server_sync.json")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()

    from kit.config.tree import load_config
    from kit.envs.environment import make_environment
    from kit.episode import ToolMessageEncoder
    from kit.generation.base import Sampling
    from kit.generation.transformers_gen import TransformersGenerator
    from kit.generation.vllm_process import VLLMServer
    from kit.generation.vllm_server import VLLMServerClient
    from kit.models import load_policy, load_tokenizer
    from kit.run_folder import RunFolder
    from kit.train.grpo_trainer import build_trainer
    from kit.versions import versions

    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="server_sync_"))
    base = [
        *BENCH_OVERRIDES, f"model.name_or_path={args.model}", "generation.mode=server",
        f"generation.server_url=http://127.0.0.1:{port}", f"serve.port={port}",
        "serve.gpu_memory_utilization=0.3", f"grpo.max_steps={args.steps}", *args.overrides,
    ]  # fmt: skip
    results = {
        "versions": versions(),
        "steps_per_run": args.steps,
        "overrides": args.overrides,
        "methods": {},
    }
    server_cfg = load_config("single_gpu", [*base, f"run.output_dir={work}"])
    with VLLMServer(server_cfg, work / "server.log") as server:
        client = VLLMServerClient(server.url)
        for method in args.methods:
            cfg = load_config(
                "single_gpu", [*base, f"generation.weight_sync={method}", f"run.output_dir={work / method}"]
            )
            run = RunFolder(cfg.run.output_dir).create()
            client.reload_weights(args.model)  # every method starts from the same served weights
            tokenizer = load_tokenizer(cfg.model, args.model)
            env = make_environment(cfg.env)
            tasks = env.load_tasks(cfg.env.train_file)
            trainer = build_trainer(cfg, load_policy(cfg.model, args.model), tokenizer, env, tasks, run)
            timer = StepTimer()
            trainer.add_callback(timer)
            trainer.train()
            sync = trainer.vllm_generation
            sync.sync_weights()  # the weights after the last optimizer step
            prompts = [ToolMessageEncoder(tokenizer).prompt_ids(t) for t in tasks[:4]]
            greedy = Sampling(temperature=0.0)
            served = [client.complete(p, 16, greedy).token_ids for p in prompts]
            trainer.model.eval()
            local = TransformersGenerator.for_model(trainer.model, tokenizer).generate(
                prompts, [16] * 4, greedy
            )
            same = sum(s[:8] == c.token_ids[:8] for s, c in zip(served, local, strict=True))
            steps = [b - a for a, b in zip(timer.ends, timer.ends[1:], strict=False)]
            step, seconds = statistics.median(steps), statistics.median(sync.seconds[1:])
            results["methods"][method] = {
                "step_seconds": steps,
                "sync_seconds": sync.seconds,
                "median_step_seconds": step,
                "median_sync_seconds": seconds,
                "sync_share_of_step": seconds / step,
                "greedy_prompts_matching_trainer": f"{same}/{len(prompts)}",
            }
            print(
                f"{method}: {step:.2f} s/step, sync {seconds:.3f} s ({100 * seconds / step:.1f} % of step), "
                f"server greedy = trainer greedy on {same}/{len(prompts)} prompts",
                flush=True,
            )
            del trainer
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
