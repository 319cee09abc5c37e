"""model.lora: adapters in place of full fine-tuning, through the whole job (transformers mode here; the
server path: test_server_mode.py::test_a_lora_policy_reaches_the_server_merged_under_the_base_names)."""

from __future__ import annotations

import json

import torch
from safetensors import safe_open

from kit.config.tree import load_config
from kit.lora import is_peft_model
from kit.train.job import TrainingJob


def test_sft_and_grpo_train_adapters_and_the_run_saves_adapter_and_merged_model(tiny_model_dir, tmp_path):
    cfg = load_config(
        "cpu_demo",
        [
            f"model.name_or_path={tiny_model_dir}",
            "model.lora.enabled=true",
            "model.lora.r=4",
            "generation.mode=transformers",
            "sft.num_examples=4",
            "sft.args.max_steps=1",
            "grpo.max_steps=1",
            "grpo.num_generations=2",
            "grpo.per_device_train_batch_size=2",
            "grpo.max_completion_length=16",
            "grpo.save_strategy='no'",
            "run.eval_tasks=0",
            f"run.output_dir={tmp_path / 'run'}",
        ],
    )
    job = TrainingJob(cfg)
    before = {name: p.detach().clone() for name, p in job.model.named_parameters()}
    job.sft()
    assert not is_peft_model(job.model)  # the warm-up's adapter is merged in
    changed = [name for name, p in job.model.named_parameters() if not torch.equal(p, before[name])]
    assert changed and all(name.endswith("weight") for name in changed)
    warmed = {name: p.detach().clone() for name, p in job.model.named_parameters()}
    trainer = job.grpo()
    assert is_peft_model(trainer.model)
    frozen = [n for n, p in trainer.model.named_parameters() if "lora_" not in n and p.requires_grad]
    assert not frozen, f"base weights train under LoRA: {frozen[:3]}"
    job.finish()

    final = job.run.final_model
    adapter = json.loads((final / "adapter" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and (final / "adapter" / "adapter_model.safetensors").is_file()
    with safe_open(str(final / "model.safetensors"), "pt") as saved:
        names = set(saved.keys())
        assert not [n for n in names if "lora_" in n or "base_layer" in n]
        assert names <= set(warmed) | {"lm_head.weight"} and len(names) >= len(warmed) - 1
