"""Weight sync to a `kit serve` vLLM server that TRL does not drive itself.

TRL syncs a vLLM server only over NCCL (its `VLLMGeneration.sync_weights`), which needs the server on
other GPUs (NCCL refuses two ranks on one device) and CUDA in the trainer. The kit adds two methods
with the same `sync_weights()` entry point, so GRPOTrainer calls them before every rollout:

- `ReloadWeightSync` (CPU, any device): safetensors into a folder the server reads, then the server's
  `reload_weights` (dev-mode `/collective_rpc`, through the kit's worker extension, which also reloads a
  server of dummy weights). About 1 s for 135M parameters on 2 CPU cores.
- `IPCWeightSync` (a server on the trainer's own GPU): CUDA IPC handles of the trainer's parameters go
  to the kit's vLLM worker extension (`kit.generation.ipc_receiver`), which copies them in on the GPU.

Every rank waits until the push and the prefix-cache reset are done, so no rank generates with old
or half-loaded weights. A LoRA policy is pushed merged (`kit.lora.merged_parameters`): the server
gets plain weights under the base model's names.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from kit.generation.vllm_server import VLLMServerClient
from kit.lora import is_peft_model, merged_parameters

log = logging.getLogger(__name__)


class ServerWeightSync:
    """Shared `sync_weights()`: push (main process), reset the prefix cache, then a barrier."""

    method = "?"

    def __init__(self, model, accelerator, client: VLLMServerClient) -> None:
        self.model = model
        self.accelerator = accelerator
        self.client = client
        self.seconds: list[float] = []

    def _push(self) -> None:
        raise NotImplementedError

    def sync_weights(self) -> None:
        start = time.perf_counter()
        self._push()
        if self.accelerator.is_main_process:
            self.client.reset_prefix_cache()
        self.accelerator.wait_for_everyone()
        self.seconds.append(time.perf_counter() - start)
        log.info("weight sync (%s): %.3f s", self.method, self.seconds[-1])


class ReloadWeightSync(ServerWeightSync):
    """Weights by file: safetensors in `folder`, then the server's `reload_weights` from it."""

    method = "reload"

    def __init__(self, model, accelerator, client: VLLMServerClient, folder: Path) -> None:
        super().__init__(model, accelerator, client)
        self.folder = folder

    def _push(self) -> None:
        unwrapped = self.accelerator.unwrap_model(self.model)
        if is_peft_model(unwrapped):
            if self.accelerator.is_main_process:
                with merged_parameters(unwrapped) as parameters:
                    self._write_and_reload(dict(parameters))
            return
        # Collective under FSDP / DeepSpeed: every rank must call it.
        state = self.accelerator.get_state_dict(self.model)
        if not self.accelerator.is_main_process:
            return
        if getattr(unwrapped.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)  # shares storage with the embeddings; vLLM ties it itself
        self._write_and_reload(state)

    def _write_and_reload(self, state: dict) -> None:
        from safetensors.torch import save_file

        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / "model.safetensors.tmp"
        save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(tmp))
        tmp.replace(self.folder / "model.safetensors")
        self.client.collective_rpc("kit_reload_weights", {"weights_path": str(self.folder)})


class IPCWeightSync(ServerWeightSync):
    """Weights by CUDA IPC: the server (same GPU) reads the trainer's parameters in place.

    One trainer process only (the resolver refuses more); the parameters are the live training
    tensors, so nothing is copied on the trainer's side.
    """

    method = "ipc"

    def _push(self) -> None:
        unwrapped = self.accelerator.unwrap_model(self.model)
        if is_peft_model(unwrapped):
            with merged_parameters(unwrapped) as tensors:  # the server copies them before the unmerge
                self._send(tensors)
            return
        # named_parameters() lists a tied lm_head once, under the embeddings; vLLM ties it itself.
        self._send([(name, param.detach()) for name, param in unwrapped.named_parameters()])

    def _send(self, tensors: list) -> None:
        import torch

        from kit.generation.ipc_receiver import encode_tensor_handle

        torch.cuda.synchronize()  # the optimizer step must have landed before the server reads
        payload = [[name, encode_tensor_handle(t)] for name, t in tensors]
        loaded = self.client.collective_rpc("kit_load_ipc_weights", {"weights": payload})
        if any(int(count) != len(payload) for count in loaded):  # the endpoint returns them as text
            raise RuntimeError(f"weight sync (ipc): the server loaded {loaded} of {len(payload)} tensors.")
        torch.cuda.ipc_collect()


class OneProcess:
    """What the syncs use of accelerate's `Accelerator`, for a model outside any trainer (evaluation)."""

    is_main_process = True

    def wait_for_everyone(self) -> None:
        pass

    def get_state_dict(self, model):
        return model.state_dict()

    def unwrap_model(self, model):
        return model


def server_sync(method: str, model, accelerator, client: VLLMServerClient, folder: Path) -> ServerWeightSync:
    """The kit's sync for `method` ('reload' or 'ipc'); `accelerator` None for a model outside a trainer."""
    accelerator = accelerator or OneProcess()
    if method == "reload":
        return ReloadWeightSync(model, accelerator, client, folder)
    if method == "ipc":
        return IPCWeightSync(model, accelerator, client)
    raise ValueError(f"the kit syncs a server by 'reload' or 'ipc', not {method!r} (TRL drives 'nccl').")
