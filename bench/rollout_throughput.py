"""Rollout tokens/s: plain-transformers generation vs a vLLM server, same model, prompts and sampling.

    .venv/bin/python bench/rollout_throughput.py [--completions 16] [--max-tokens 64] [--recipe cpu_demo]

Both generators get the same token-id prompts (workplace tasks rendered with the recipe's template),
the same sampling (temperature 1.0) and a fixed number of new tokens per completion (ignore_eos on the
server, min_new_tokens locally), so tokens/s compare like for like. The server is started by the kit
(as `kit serve` would) and stopped at the end; its start-up time is printed but not counted.
Run it on an otherwise idle machine: the two sides share the same cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.episode import ToolMessageEncoder
from kit.generation.base import Sampling
from kit.generation.transformers_gen import TransformersGenerator
from kit.generation.vllm_process import VLLMServer
from kit.generation.vllm_server import VLLMServerClient, VLLMServerGenerator
from kit.models import load_policy, load_tokenizer, resolve_model
from kit.net import free_port


def measure(generator, prompts: list[list[int]], max_tokens: int, sampling: Sampling) -> tuple[float, int]:
    """Seconds and generated tokens for one batch."""
    started = time.perf_counter()
    completions = generator.generate(prompts, [max_tokens] * len(prompts), sampling)
    return time.perf_counter() - started, sum(len(c.token_ids) for c in completions)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", default="cpu_demo")
    parser.add_argument("--completions", type=int, default=16, help="completions per batch (>= 16)")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="timed batches per side (after one warm-up)")
    args = parser.parse_args()

    port = free_port()
    cfg = load_config(args.recipe, [f"serve.port={port}", f"generation.server_url=http://127.0.0.1:{port}"])
    model_dir = resolve_model(cfg.model.name_or_path)
    tokenizer = load_tokenizer(cfg.model, model_dir)
    tasks = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=args.completions)
    encoder = ToolMessageEncoder(tokenizer)
    prompts = [encoder.prompt_ids(tasks[i % len(tasks)]) for i in range(args.completions)]
    sampling = Sampling(temperature=1.0)
    print(
        f"model {model_dir}: {len(prompts)} completions x {args.max_tokens} tokens, "
        f"prompts {min(map(len, prompts))}-{max(map(len, prompts))} tokens"
    )

    model = load_policy(cfg.model, model_dir).eval()
    model.generation_config.min_new_tokens = args.max_tokens  # fixed length, like ignore_eos on the server
    local = TransformersGenerator.for_model(model, tokenizer, batch_size=args.completions)
    measure(local, prompts, args.max_tokens, sampling)
    runs = [measure(local, prompts, args.max_tokens, sampling) for _ in range(args.repeats)]
    local_rate = sum(t for _, t in runs) / sum(s for s, _ in runs)
    print(f"transformers generate: {local_rate:8.1f} tokens/s")
    del model, local

    started = time.perf_counter()
    with VLLMServer(cfg, Path("runs/bench/server.log")) as server:
        print(f"vLLM server up in {time.perf_counter() - started:.0f} s (not counted)")
        remote = VLLMServerGenerator(VLLMServerClient(server.url, extra_body={"ignore_eos": True}))
        measure(remote, prompts, args.max_tokens, sampling)
        runs = [measure(remote, prompts, args.max_tokens, sampling) for _ in range(args.repeats)]
    server_rate = sum(t for _, t in runs) / sum(s for s, _ in runs)
    print(f"vLLM server:           {server_rate:8.1f} tokens/s")
    print(f"ratio server / transformers: {server_rate / local_rate:.2f}x")


if __name__ == "__main__":
    main()
