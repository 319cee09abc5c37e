"""Weight sync by file for vLLM servers that cannot join an NCCL group (vLLM-CPU).

vLLM's weight-transfer engine is CUDA-only, and TRL's `init_communicator` raises
`NotImplementedError` without a GPU. This fallback writes the trainer's weights as safetensors into a
folder the server can read and asks the server (dev-mode `/collective_rpc`) to `reload_weights` from
it. Measured on 2 CPU cores: about 1 s for a 135M model.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from kit.generation.vllm_server import VLLMServerClient

log = logging.getLogger(__name__)


class ReloadWeightSync:
    """Has the same `sync_weights()` entry point as TRL's `VLLMGeneration`, so GRPOTrainer can call it."""

    def __init__(self, model, accelerator, client: VLLMServerClient, folder: Path) -> None:
        self.model = model
        self.accelerator = accelerator
        self.client = client
        self.folder = folder
        self.seconds: list[float] = []

    def sync_weights(self) -> None:
        from safetensors.torch import save_file

        start = time.perf_counter()
        # Collective under FSDP / DeepSpeed: every rank must call it.
        state = self.accelerator.get_state_dict(self.model)
        if self.accelerator.is_main_process:
            unwrapped = self.accelerator.unwrap_model(self.model)
            if getattr(unwrapped.config, "tie_word_embeddings", False):
                state.pop("lm_head.weight", None)  # shares storage with the embeddings; vLLM ties it itself
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / "model.safetensors.tmp"
            save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(tmp))
            tmp.replace(self.folder / "model.safetensors")
            self.client.reload_weights(self.folder)
        self.accelerator.wait_for_everyone()
        self.seconds.append(time.perf_counter() - start)
        log.info("weight sync (reload from %s): %.2f s", self.folder, self.seconds[-1])
