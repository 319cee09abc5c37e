"""Does a recipe's longest prompt plus its completion budget fit the generator's context?

The dry-run answers this before any GPU is held: it renders the recipe's own tasks with the
configured chat template and tools and counts tokens with the policy's tokenizer when that is on
this machine (a local folder, the hub cache, or the offline demo model), else estimates with the
demo model's tokenizer and says so. The rollout caps every request at the same context at run
time (`kit.rollout.loop.token_budget`); this check catches a recipe that could never fit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from kit.config.tree import DEMO_MODEL, KitConfig

SAMPLED_TASKS = 400


@dataclass(frozen=True)
class PromptLengths:
    """Token counts of the recipe's prompts, and how they were counted."""

    longest: int
    tasks: int
    counted_with: str  # which tokenizer
    exact: bool  # False: estimated with another model's tokenizer


def _local_folder(name_or_path: str) -> str | None:
    """A local folder holding the model's tokenizer, without downloading or building anything."""
    from kit.models import cache_dir

    path = Path(name_or_path).expanduser()
    if (path / "config.json").is_file():
        return str(path)
    if name_or_path == DEMO_MODEL:
        built = cache_dir() / "models" / DEMO_MODEL.split("/")[-1]
        return str(built) if (built / "config.json").is_file() else None
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name_or_path, local_files_only=True)
    except Exception:  # not in the hub cache
        return None


def _tokenizer(cfg: KitConfig):
    """(tokenizer, folder, exact): the policy's own when local, else the cached demo model's."""
    from kit.models import load_tokenizer

    folder = _local_folder(cfg.model.name_or_path)
    if folder is not None:
        return load_tokenizer(cfg.model, folder), folder, True
    demo = _local_folder(DEMO_MODEL)
    if demo is None:
        return None, None, False
    # The model's own template is not here either: estimate with the kit's template.
    model = (
        dataclasses.replace(cfg.model, chat_template="kit")
        if cfg.model.chat_template == "model"
        else cfg.model
    )
    return load_tokenizer(model, demo), demo, False


def measure_prompts(cfg: KitConfig) -> PromptLengths | None:
    """Count the tokens of up to SAMPLED_TASKS training and evaluation prompts; None when no tokenizer
    is on this machine."""
    from kit.envs.environment import make_environment
    from kit.episode import ToolMessageEncoder

    tokenizer, folder, exact = _tokenizer(cfg)
    if tokenizer is None:
        return None
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.train_file, limit=SAMPLED_TASKS)
    if cfg.run.eval_tasks:
        tasks += env.load_tasks(cfg.env.eval_file, limit=min(cfg.run.eval_tasks, SAMPLED_TASKS))
    encoder = ToolMessageEncoder(tokenizer)
    longest = max(len(encoder.prompt_ids(task)) for task in tasks)
    return PromptLengths(longest, len(tasks), folder, exact)


def model_context(cfg: KitConfig) -> int | None:
    """The model's own context (max_position_embeddings) when its config is on this machine."""
    folder = _local_folder(cfg.model.name_or_path)
    if folder is None:
        return None
    from transformers import AutoConfig

    return getattr(AutoConfig.from_pretrained(folder), "max_position_embeddings", None)


def generator_context(cfg: KitConfig) -> tuple[int | None, str]:
    """The context the run's generator will have, and the setting it comes from."""
    mode = cfg.generation.mode
    if mode == "server":
        return cfg.serve.max_model_len, "serve.max_model_len"
    if mode == "colocate" and cfg.grpo.vllm_max_model_length:
        return cfg.grpo.vllm_max_model_length, "grpo.vllm_max_model_length"
    return model_context(cfg), "the model's max_position_embeddings"


def fit_problem(lengths: PromptLengths, completion: int, context: int, source: str) -> str | None:
    """The error message when the longest prompt plus `completion` tokens exceed `context`, else None."""
    need = lengths.longest + completion
    if need <= context:
        return None
    how = "" if lengths.exact else " (estimated with the demo model's tokenizer and the kit's template)"
    return (
        f"the longest prompt is {lengths.longest} tokens{how} and grpo.max_completion_length is "
        f"{completion}: {need} tokens do not fit in {source}={context}. Raise {source}, lower "
        "grpo.max_completion_length, or shorten prompts (env.tools_in_prompt=task, env.compact_tools=true)."
    )
