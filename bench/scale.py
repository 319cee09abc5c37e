"""Cost of a GRPO step at the sizes users train, on one GPU: Qwen3 1.7B, 4B and 8B with dummy weights.

    python bench/scale.py [--sizes 1.7b 4b 8b] [--only '4b-*' ...] [--steps 4] [--episodes 64]
                          [--completion-tokens 1024] [--gpu-memory-utilization 0.3] [--tag NAME]
                          [--out bench/results/scale_h200.json] [recipe overrides ...]
    python bench/scale.py --sizes tiny --steps 2 --episodes 8 --completion-tokens 32 \
                          --out /tmp/scale_cpu.json --only 'tiny-server-*'        # CPU smoke check

Each size (`kit model dummy`: the published architecture, the demo tokenizer, dummy weights) runs with
full weights and with LoRA, in server mode (`kit serve` on the same GPU, CUDA IPC sync) and colocated
(vLLM in the trainer process). A run is `kit train --config single_gpu` in its own process, so that an out
of memory ends that run only: no SFT, no evaluation, `--steps` GRPO steps of `--episodes` episodes (8
tasks x 8) of exactly `--completion-tokens` sampled tokens (`generation.ignore_eos`; a dummy model's text
never calls a tool, so every episode is one turn), micro-batches of 8 with gradient checkpointing.
Runs are named SIZE-MODE-WEIGHTS (e.g. 4b-server-lora, plus `-TAG` with `--tag`); `--only` takes
shell patterns of those names. Each finished run is merged into `--out` at once, so results of several
calls (each within a time limit) accumulate in one file; a run of the same name is replaced.

What a run records, from the kit's own logs (the first step, with vLLM's warm-up, is left out):
- seconds a step: TRL's `step_time` in metrics.jsonl (generation, scoring, loss and backward of the step's
  micro-batches; the optimizer step is outside it), and the GRPO stage's wall time over all steps;
- generation: `rollout/seconds` and `rollout/sampled_tokens_per_second` in metrics.jsonl;
- weight sync: the kit's `weight sync (ipc): S s` log lines (server mode; colocated, TRL syncs in-process
  and the kit does not time it), and its share of the step;
- memory: the trainer's peak (torch, summary.json: colocated, it includes vLLM's weights and KV cache),
  vLLM's weights and KV cache from its log, and the GPU's peak use from nvidia-smi (every second, by process);
- whether it fit: ok, oom (with the error), refused (the kit's config check), error or timeout.

Dummy weights: learning cannot be measured, cost can. The vocabulary is the demo tokenizer's (49,152), not
Qwen3's (151,936): the embedding and LM head are a third of the published ones (the parameter counts of
both are in each record).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from kit.device import machine_description
from kit.dummy_models import ARCHITECTURES, dummy_config, parameter_count, write_dummy_model
from kit.net import free_port
from kit.paths import PROJECT_ROOT as ROOT

SIZES = {
    "tiny": ("qwen3-4b", True),
    "1.7b": ("qwen3-1.7b", False),
    "4b": ("qwen3-4b", False),
    "8b": ("qwen3-8b", False),
    "llama-3b": ("llama-3.2-3b", False),
}
MODES = ("server", "colocate")
WEIGHTS = {"full": [], "lora": ["model.lora.enabled=true"]}
BENCH_OVERRIDES = [
    "sft.enabled=false",
    "run.eval_tasks=0",
    "run.eval_every=0",
    "task_selection.probe_tasks=0",
    "generation.ignore_eos=true",
    "grpo.num_generations=8",
    "grpo.gradient_checkpointing=true",
    "grpo.save_strategy='no'",
    "grpo.logging_steps=1",
]
OOM = re.compile(
    r"CUDA out of memory|OutOfMemoryError|No available memory for the cache blocks|"
    r"larger than the available KV cache memory|insufficient memory|Cannot allocate memory"
)


def mode_overrides(mode: str, share: float, context: int) -> list[str]:
    if mode == "server":
        port = free_port()
        return ["generation.mode=server", "generation.start_server=true", f"serve.port={port}",
                f"generation.server_url=http://127.0.0.1:{port}", f"serve.gpu_memory_utilization={share}",
                f"serve.max_model_len={context}"]  # fmt: skip
    return ["generation.mode=colocate", f"grpo.vllm_gpu_memory_utilization={share}",
            f"grpo.vllm_max_model_length={context}"]  # fmt: skip


class GPUMemory:
    """Peak GPU memory in GiB, sampled from nvidia-smi every second while a run goes: the whole GPU's,
    and each process's (summed at each sample: the trainer, the others)."""

    def __init__(self, trainer_pid: int) -> None:
        self.trainer_pid = trainer_pid
        self.peaks = {"gpu_used": 0.0, "trainer_process": 0.0, "other_processes": 0.0}
        self.available = shutil.which("nvidia-smi") is not None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> GPUMemory:
        if self.available:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self.available:
            self._thread.join()

    def _query(self, what: str) -> list[list[str]]:
        done = subprocess.run(["nvidia-smi", f"--query-{what}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True)  # fmt: skip
        return [[f.strip() for f in line.split(",")] for line in done.stdout.splitlines() if line.strip()]

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            used = self._query("gpu=memory.used")
            apps = self._query("compute-apps=pid,used_memory")
            if used:
                self._keep("gpu_used", float(used[0][0]) / 1024)
            mine = sum(float(mib) for pid, mib in apps if pid == str(self.trainer_pid))
            others = sum(float(mib) for pid, mib in apps if pid != str(self.trainer_pid))
            self._keep("trainer_process", mine / 1024)
            self._keep("other_processes", others / 1024)

    def _keep(self, key: str, gib: float) -> None:
        self.peaks[key] = max(self.peaks[key], round(gib, 2))


def one_run(name: str, model_dir: Path, mode: str, weights: str, args, work: Path) -> dict:
    """`kit train` of one configuration in its own process group; what its logs say it cost."""
    run_dir = work / name
    shutil.rmtree(run_dir, ignore_errors=True)
    overrides = [
        *BENCH_OVERRIDES, f"model.name_or_path={model_dir}", f"run.output_dir={run_dir}",
        f"grpo.max_steps={args.steps}", f"grpo.max_completion_length={args.completion_tokens}",
        f"grpo.per_device_train_batch_size={args.micro_batch}",
        f"grpo.gradient_accumulation_steps={args.episodes // args.micro_batch}",
        *mode_overrides(mode, args.gpu_memory_utilization, args.context), *WEIGHTS[weights], *args.overrides,
    ]  # fmt: skip
    command = [sys.executable, "-m", "kit", "train", "--config", "single_gpu", *overrides]
    log_file = work / f"{name}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")  # as bench/gpu_jobs.sh
    started = time.perf_counter()
    with open(log_file, "w") as log, subprocess.Popen(
        command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    ) as process, GPUMemory(process.pid) as memory:  # fmt: skip
        try:
            code = process.wait(timeout=args.run_timeout or None)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    record = {
        "command": " ".join(["kit", *command[3:]]),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "log": str(log_file),
    }
    output = log_file.read_text(errors="replace")
    server_log = run_dir / "server.log"
    vllm_log = output + (server_log.read_text(errors="replace") if server_log.is_file() else "")
    record.update(status(code, output), **vllm_memory(vllm_log))
    record["gpu_memory_peak_gib"] = memory.peaks if memory.available else None
    record.update(from_run_folder(run_dir, output, args.episodes))
    shutil.rmtree(run_dir / "weights_sync", ignore_errors=True)  # file sync (CPU): a copy of the weights
    return record


def status(code: int | None, output: str) -> dict:
    """ok, or why not: oom, refused (the kit's config check), timeout, error; with the telling lines."""
    if code == 0:
        return {"status": "ok", "fits": True}
    lines = output.splitlines()
    if code is None:
        return {"status": "timeout", "fits": None, "error": "\n".join(lines[-20:])}
    oom = [line for line in lines if OOM.search(line)]
    if oom:
        return {"status": "oom", "fits": False, "error": "\n".join([*oom[:3], *lines[-15:]])}
    refused = [line for line in lines if "config error" in line]
    if code == 2 and refused:
        return {"status": "refused", "fits": None, "error": "\n".join(lines[lines.index(refused[0]) :])}
    return {"status": "error", "fits": None, "error": "\n".join(lines[-30:])}


def vllm_memory(log: str) -> dict:
    """vLLM's own figures from its log: GiB its weights took, GiB it gave the KV cache."""
    weights = re.findall(r"Model loading took ([\d.]+) GiB", log)
    cache = re.findall(r"Available KV cache memory: ([\d.]+) GiB", log)
    return {
        "vllm_weights_gib": float(weights[-1]) if weights else None,
        "vllm_kv_cache_gib": float(cache[-1]) if cache else None,
    }


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def from_run_folder(run_dir: Path, output: str, episodes: int) -> dict:
    """Step time, generation, sync and the trainer's peak memory, from the run's metrics and summary."""
    steps = [m for m in _read_jsonl(run_dir / "metrics.jsonl") if "step_time" in m]
    summary_file = run_dir / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    syncs = [float(s) for s in re.findall(r"weight sync \(\w+\): ([\d.]+) s", output)]
    later = steps[1:]  # the first step warms vLLM up

    def median_of(key: str) -> float | None:
        return _median([m[key] for m in later if key in m])

    step_seconds = median_of("step_time")
    sync_seconds = _median(syncs[1:])
    return {
        "steps_done": len(steps),
        "step_seconds": [round(m["step_time"], 3) for m in steps],
        "median_step_seconds": step_seconds,
        "median_rollout_seconds": median_of("rollout/seconds"),
        "median_sampled_tokens_per_second": median_of("rollout/sampled_tokens_per_second"),
        "sampled_tokens_per_step": [round(m["episode/completion_tokens"] * episodes) for m in steps],
        "weight_sync_seconds": [round(s, 3) for s in syncs],
        "median_weight_sync_seconds": sync_seconds,
        "weight_sync_share_of_step": round(sync_seconds / step_seconds, 4)
        if sync_seconds and step_seconds
        else None,
        "trainer_peak_gpu_memory_gib": summary.get("grpo_peak_gpu_memory_gb"),
        "grpo_seconds": summary.get("seconds", {}).get("grpo"),
        "generation": summary.get("generation"),
        "versions": summary.get("versions"),
    }


def largest_fitting(runs: dict) -> dict:
    """Per mode and weights: the largest size whose run fit (sizes in SIZES order)."""
    best: dict[str, str | None] = {}
    for mode in MODES:
        for weights in WEIGHTS:
            fitting = [s for s in SIZES if runs.get(f"{s}-{mode}-{weights}", {}).get("status") == "ok"]
            best[f"{mode}-{weights}"] = fitting[-1] if fitting else None
    return best


def merge(out: Path, name: str, record: dict) -> dict:
    """Add one run to `out` (replacing one of the same name) and rewrite it."""
    result = json.loads(out.read_text()) if out.is_file() else {"about": __doc__.split("\n\n")[0], "runs": {}}
    result["runs"][name] = record
    result["largest_size_that_fits"] = largest_fitting(result["runs"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(out)
    return result


def print_table(result: dict) -> None:
    def fmt(value, spec: str = ".2f") -> str:
        return "-" if value is None else format(value, spec)

    print(f"{'run':28} {'status':8} {'s/step':>7} {'tok/s':>8} {'sync s':>7} {'sync %':>6} "
          f"{'trainer GiB':>11} {'vLLM w+kv GiB':>13} {'GPU GiB':>8}")  # fmt: skip
    for name, r in result["runs"].items():
        share = r.get("weight_sync_share_of_step")
        vllm = [r.get("vllm_weights_gib"), r.get("vllm_kv_cache_gib")]
        gpu = (r.get("gpu_memory_peak_gib") or {}).get("gpu_used")
        print(f"{name:28} {r['status']:8} {fmt(r.get('median_step_seconds')):>7} "
              f"{fmt(r.get('median_sampled_tokens_per_second'), '.0f'):>8} "
              f"{fmt(r.get('median_weight_sync_seconds'), '.3f'):>7} {fmt(share and 100 * share, '.1f'):>6} "
              f"{fmt(r.get('trainer_peak_gpu_memory_gib')):>11} "
              f"{'+'.join(fmt(v, '.1f') for v in vllm):>13} {fmt(gpu, '.1f'):>8}")  # fmt: skip
    print("largest size that fits:", json.dumps(result["largest_size_that_fits"]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=["1.7b", "4b", "8b"])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--weights", nargs="+", choices=list(WEIGHTS), default=list(WEIGHTS))
    parser.add_argument("--only", nargs="+", help="run only these names (shell patterns, e.g. '8b-*')")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps a run (the first is left out)")
    parser.add_argument("--episodes", type=int, default=64, help="episodes a step (a multiple of 8)")
    parser.add_argument("--completion-tokens", type=int, default=1024, help="sampled tokens an episode")
    parser.add_argument("--micro-batch", type=int, default=8, help="grpo.per_device_train_batch_size")
    parser.add_argument("--context", type=int, default=4096, help="vLLM's max model length")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3, help="vLLM's share of the GPU")
    parser.add_argument("--run-timeout", type=int, default=0, help="seconds a run may take (0: no limit)")
    parser.add_argument("--tag", help="appended to each run's name (runs with other overrides)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kit-bench-scale"), help="run folders, logs")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scale_h200.json")
    parser.add_argument("overrides", nargs="*", help="more recipe overrides for every run")
    args = parser.parse_args()
    if args.episodes % 8 or args.episodes % args.micro_batch:
        parser.error("--episodes must be a multiple of 8 (tasks x 8 episodes) and of --micro-batch")
    args.work.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    where = machine_description()
    result = None
    for size in args.sizes:
        names = [(f"{size}-{mode}-{weights}" + (f"-{args.tag}" if args.tag else ""), mode, weights)
                 for weights in args.weights for mode in args.modes]  # fmt: skip
        names = [n for n in names if not args.only or any(fnmatch.fnmatch(n[0], p) for p in args.only)]
        if not names:
            continue
        arch, tiny = SIZES[size]
        model_dir = write_dummy_model(arch, args.work / "models" / f"{arch}{'-tiny' if tiny else ''}", tiny)
        parameters = {
            "here": parameter_count(dummy_config(arch, tiny)),
            "published_vocabulary": parameter_count(dummy_config(arch, tiny, ARCHITECTURES[arch].vocab_size)),
        }
        for name, mode, weights in names:
            print(f"{name}: running (log {args.work / name}.log)", flush=True)
            record = {
                "size": size, "architecture": arch, "tiny": tiny, "parameters": parameters, "mode": mode,
                "weights": weights, "commit": commit, "date": time.strftime("%Y-%m-%d", time.gmtime()),
                "machine": where, "steps": args.steps, "episodes_per_step": args.episodes,
                "completion_tokens_per_episode": args.completion_tokens, "micro_batch": args.micro_batch,
                "gpu_memory_utilization": args.gpu_memory_utilization, "context": args.context,
                "extra_overrides": args.overrides,
                **one_run(name, model_dir, mode, weights, args, args.work),
            }  # fmt: skip
            result = merge(args.out, name, record)
            print(f"{name}: {record['status']}, {record['median_step_seconds']} s a step "
                  f"({record['wall_seconds']} s in all)", flush=True)  # fmt: skip
    if result is None:
        parser.error("no run matches --sizes, --modes, --weights and --only")
    print_table(result)


if __name__ == "__main__":
    main()
