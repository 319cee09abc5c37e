"""Model folders of real architectures with dummy weights, for measuring cost only.

`write_dummy_model("qwen3-4b", folder)` writes a folder with the published model's architecture (its
config.json dimensions), the demo model's tokenizer and chat template, `DUMMY_WEIGHTS.md` saying what it
is, and no weights. The kit recognises it by that file (`kit.models.is_dummy_model`):
- `kit serve` starts vLLM on it with `--load-format dummy` (random weights, nothing read from disk);
- `kit train` builds the policy from its config with freshly initialised weights, in the recipe's dtype.

Speed and memory depend on the architecture, not on the weights' values, so step time, throughput,
weight-sync time and memory measured on such a folder are those of the published model. Learning is not:
the policy's text is noise, it never calls a tool, and it rarely stops on its own, so runs on it pin the
generation length with `generation.ignore_eos=true` (every turn samples its whole token budget).

The vocabulary is the demo tokenizer's (49,152 tokens), so that every sampled id decodes; the published
models have bigger ones (Qwen3 151,936, Llama 3.2 128,256), so the embedding and LM head are smaller
here. DUMMY_WEIGHTS.md gives both parameter counts.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.config.tree import DEMO_MODEL
from kit.models import DUMMY_MARKER, ModelResolutionError, is_dummy_model, resolve_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Architecture:
    """A published model's architecture: its transformers model type and the dimensions of its config.json."""

    source: str  # the published model the dimensions are taken from
    model_type: str  # transformers' model_type
    architecture: str  # the model class, which vLLM picks its implementation by
    dimensions: dict[str, Any]
    vocab_size: int  # the published vocabulary, for the parameter count it would have
    tiny: dict[str, Any] | None = None  # test-size dimensions where TINY's do not fit the architecture


_QWEN3 = {"rope_theta": 1000000.0, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "head_dim": 128}

ARCHITECTURES: dict[str, Architecture] = {
    "qwen3-1.7b": Architecture("Qwen/Qwen3-1.7B", "qwen3", "Qwen3ForCausalLM", {
        **_QWEN3, "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28,
        "num_attention_heads": 16, "num_key_value_heads": 8, "tie_word_embeddings": True,
    }, 151936),
    "qwen3-4b": Architecture("Qwen/Qwen3-4B", "qwen3", "Qwen3ForCausalLM", {
        **_QWEN3, "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "tie_word_embeddings": True,
    }, 151936),
    "qwen3-8b": Architecture("Qwen/Qwen3-8B", "qwen3", "Qwen3ForCausalLM", {
        **_QWEN3, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "tie_word_embeddings": False,
    }, 151936),
    "llama-3.2-3b": Architecture("meta-llama/Llama-3.2-3B-Instruct", "llama", "LlamaForCausalLM", {
        "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28, "num_attention_heads": 24,
        "num_key_value_heads": 8, "head_dim": 128, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        "max_position_embeddings": 131072, "tie_word_embeddings": True, "rms_norm_eps": 1e-5,
    }, 128256),
    # Mamba-2 layers (M), four attention layers (*) and MLPs (-), 56 in all: the Nemotron recipe's model
    "nemotron-nano-9b-v2": Architecture(
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nemotron_h", "NemotronHForCausalLM", {
        "hidden_size": 4480, "intermediate_size": 15680, "mlp_hidden_act": "relu2",
        "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "mamba_num_heads": 128, "mamba_head_dim": 80, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
        "layer_norm_epsilon": 1e-5, "max_position_embeddings": 131072, "tie_word_embeddings": False,
    }, 131072, tiny={
        "hidden_size": 64, "intermediate_size": 128, "hybrid_override_pattern": "M*-",
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "mamba_num_heads": 4, "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 2,
    }),
}  # fmt: skip

TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,  # the smallest head vLLM-CPU's attention takes
}
"""The test size of an architecture (unless it names its own): everything else (model type, embeddings tied
or not, RoPE, norms, the ratio of query to key-value heads) stays the published model's."""


@functools.cache
def _demo_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(DEMO_MODEL))


def dummy_config(arch: str, tiny: bool = False, vocab_size: int | None = None):
    """The transformers config of `arch` (a key of ARCHITECTURES), at test size with `tiny`, with the demo
    tokenizer's special tokens; `vocab_size` None: the demo tokenizer's."""
    from transformers import AutoConfig

    if arch not in ARCHITECTURES:
        raise ModelResolutionError(f"Unknown architecture '{arch}'; known: {', '.join(ARCHITECTURES)}.")
    spec = ARCHITECTURES[arch]
    tokenizer = _demo_tokenizer()
    return AutoConfig.for_model(
        spec.model_type,
        **{**spec.dimensions, **((spec.tiny or TINY) if tiny else {})},
        architectures=[spec.architecture],
        vocab_size=vocab_size or len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def parameter_count(config) -> int:
    """Parameters of the model `config` describes (tied weights once), counted without allocating them."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def write_dummy_model(arch: str, target: Path, tiny: bool = False) -> Path:
    """Write the dummy-weight folder of `arch` (at test size with `tiny`) to `target`; returns `target`.

    A folder that holds anything but an earlier dummy-weight folder is refused: config.json would
    overwrite a real model's."""
    target = Path(target)
    if target.exists() and any(target.iterdir()) and not is_dummy_model(target):
        raise ModelResolutionError(
            f"'{target}' holds files that are not a dummy-weight model folder; give an empty or new folder."
        )
    config = dummy_config(arch, tiny)
    spec = ARCHITECTURES[arch]
    count = parameter_count(config)
    published = parameter_count(dummy_config(arch, tiny, vocab_size=spec.vocab_size))
    target.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(target)
    if "hybrid_override_pattern" in spec.dimensions:  # the published configs' key, which older readers need
        written = json.loads((target / "config.json").read_text())
        written["hybrid_override_pattern"] = config.hybrid_override_pattern
        (target / "config.json").write_text(json.dumps(written, indent=2) + "\n")
    _demo_tokenizer().save_pretrained(target)
    name = f"{arch} (tiny)" if tiny else arch
    (target / DUMMY_MARKER).write_text(
        f"""# Dummy weights: for measuring cost only

This folder holds the architecture of {spec.source} ({spec.architecture}{", at test size" if tiny else ""})
and no weights. `kit serve` starts vLLM on it with `--load-format dummy`; `kit train` builds the policy
from config.json with freshly initialised weights. Step time, throughput, weight-sync time and memory
measured with it are the architecture's. Learning is not: its text is noise and it never calls a tool.
Pin the generation length with `generation.ignore_eos=true`.

- architecture: {name}, the dimensions of {spec.source}'s config.json
- vocabulary: {config.vocab_size} (the tokenizer of {DEMO_MODEL}); published: {spec.vocab_size}
- parameters: {count:,}; with the published vocabulary: {published:,}
- written by: kit model dummy --arch {arch}{" --tiny" if tiny else ""} --out {target}
"""
    )
    log.warning("%s: %s with DUMMY weights (%s parameters), for measuring cost only; learning cannot be "
                "measured with it.", target, name, f"{count:,}")  # fmt: skip
    return target
