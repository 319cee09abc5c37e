"""Loading and building models: float32 training weights by default (bf16 weights drop GRPO-sized
updates), and model folders that several processes build at once."""

from __future__ import annotations

import logging

import pytest
import torch

from kit.config.tree import ModelConfig
from kit.models import load_policy


def changed_fraction(model, learning_rate: float, steps: int = 2) -> float:
    """Share of weights that AdamW moves at `learning_rate` on a language-modelling loss."""
    torch.manual_seed(0)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    ids = torch.randint(0, 1000, (2, 32))
    for _ in range(steps):
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    changed = sum((p.detach() != b).sum().item() for p, b in zip(model.parameters(), before, strict=True))
    return changed / sum(p.numel() for p in model.parameters())


def test_auto_dtype_keeps_float32_weights_that_take_small_updates(tiny_model_dir):
    model = load_policy(ModelConfig(name_or_path=tiny_model_dir, dtype="auto"), tiny_model_dir)
    assert model.dtype == torch.float32
    assert changed_fraction(model, 5e-6) > 0.99


def test_bfloat16_weights_are_loaded_with_a_warning_naming_the_fix(tiny_model_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="kit.models"):
        model = load_policy(ModelConfig(name_or_path=tiny_model_dir, dtype="bfloat16"), tiny_model_dir)
    assert model.dtype == torch.bfloat16
    assert "model.dtype=auto" in caplog.text
    # What the warning is about: most bf16 weights do not move at a GRPO learning rate.
    assert changed_fraction(model, 5e-6) < 0.5


def test_unknown_dtype_is_named(tiny_model_dir):
    from kit.models import ModelResolutionError

    with pytest.raises(ModelResolutionError, match="'float33' is not a torch dtype"):
        load_policy(ModelConfig(name_or_path=tiny_model_dir, dtype="float33"), tiny_model_dir)


def test_processes_building_one_model_folder_at_once_all_get_it(demo_model_dir, tmp_path):
    """Three jobs started together on a fresh machine each rebuild the cached model: one builds it, the
    others wait and use it (before: 'Directory not empty' for all but the first)."""
    import subprocess
    import sys

    target = tmp_path / "models" / "tiny"
    code = f"import pathlib, kit.models as m; m.build_tiny_model(pathlib.Path({str(target)!r}))"
    builders = [
        subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    errors = [b.stderr.read() for b in builders]
    assert [b.wait() for b in builders] == [0, 0, 0], errors
    assert (target / "config.json").is_file() and (target / "model.safetensors").is_file()
    assert not list(target.parent.glob("tiny.partial*"))
