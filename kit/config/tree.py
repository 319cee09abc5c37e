"""One config tree for every kit command: dataclasses loaded from YAML recipes plus dotted overrides.

A recipe is a YAML file (or the name of one in `kit/recipes/`) with the sections below. The `grpo` and
`sft.args` sections are TRL's `GRPOConfig` / `SFTConfig` fields under TRL's own names, typed at load
(kit.config.trl_args: read with TRL's defaults for what the recipe leaves out); everything else is the kit's.
Every key and value is checked when the recipe loads: an unknown key, a value of the wrong type (against
the field's type hint, TRL's fields included) or an unreadable recipe is a ConfigError that names the key
or file, what was expected and the closest valid names.

    cfg = load_config("cpu_demo", ["grpo.max_steps=2", "generation.mode=server"])
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kit.config.recipe_files import check_names, read_recipe, resolve_recipe_path, where
from kit.config.trl_args import GRPOArgs, SFTArgs, TRLArgs, close_matches
from kit.config.value_types import ConfigError, problem
from kit.run_folder import write_atomic

DEMO_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_SERVER_PORT = 8000
"""Where `kit serve` listens and a server-mode trainer looks for it unless told otherwise."""


@dataclass
class LoraSettings:
    """LoRA adapters (peft) in place of full fine-tuning, for SFT and GRPO alike. The base weights stay
    frozen; a vLLM server gets the weights with the adapter merged in (kit.lora)."""

    enabled: bool = False
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    # peft's target_modules: "all-linear" (every linear layer but the output head) or module names.
    target_modules: str | list[str] = "all-linear"


@dataclass
class ModelConfig:
    """Which policy to train and how to render its prompts."""

    name_or_path: str = DEMO_MODEL
    # "kit": the kit's tool-calling ChatML template; "model": the tokenizer's own; or a path to a .jinja file.
    chat_template: str = "kit"
    # The training weights: "auto" = float32 master weights, bf16 autocast where the hardware has it
    # (TRL's default). "bfloat16" halves their memory but loses small updates (see models.torch_dtype).
    dtype: str = "auto"
    lora: LoraSettings = field(default_factory=LoraSettings)


@dataclass
class NeMoGymConfig:
    """NeMo-Gym's own servers (kit.envs.nemo_gym), run from its environment (`make gym-venv`): the
    resources server that `env.name: nemo_gym` acts on (`env.nemo_gym.*`)."""

    # Its folder under NeMo-Gym's resources_servers/ (workplace_assistant, example_session_state_mgmt, ...).
    resources_server: str = "workplace_assistant"
    # A NeMo-Gym resources server already running (http://host:port) instead of one the job starts.
    url: str | None = None
    # NeMo-Gym's agent (its folder under responses_api_agents/) that runs the episodes when
    # rollout.agent is nemo_gym.
    agent: str = "simple_agent"
    # Seconds NeMo-Gym's launcher may take to bring the servers up.
    start_timeout: float = 180.0
    # GiB the servers the job started may grow by (all their processes) before it restarts them, between
    # two batches, with no session open: NeMo-Gym 0.4.0's workplace server keeps every session's tables
    # (about 0.55 MB a session, 5.5 GB over 10,000 episodes). 0: never restart.
    max_memory_growth_gib: float = 2.0
    # Seconds one request to a NeMo-Gym server may take; a tool call past it becomes an error observation
    # and the episode goes on; a seed_session or verify past it fails the episode, reported with the
    # setting's name.
    request_timeout: float = 60.0


@dataclass
class EnvConfig:
    """The task environment and its data."""

    # "workplace": the kit's in-process workplace assistant; "nemo_gym": a NeMo-Gym resources server
    # (`env.nemo_gym` says which), over HTTP.
    name: str = "workplace"
    train_file: str = "data/workplace/train.jsonl"
    eval_file: str = "data/workplace/validation.jsonl"
    tiers: list[str] = field(default_factory=lambda: ["easy", "medium", "hard"])
    categories: list[str] | None = None
    max_train_rows: int | None = None
    # "all": every tool of the environment in the prompt; "task": only the toolkits the task needs.
    tools_in_prompt: str = "all"
    compact_tools: bool = False
    # NeMo-Gym's CSV layout (emails.csv, calendar_events.csv, ...): the databases tasks run against.
    # None: the kit's generated state (what data/workplace's tasks are generated for).
    databases: str | None = None
    # The workplace tools: "nemo_gym" behaves as NeMo-Gym's workplace server (the model reads its JSON
    # answer, e.g. {"output":"Task updated successfully."}; same checks, errors, state changes and reward);
    # "kit" uses the kit's earlier tools: stricter checks whose errors say what is valid, one-line
    # confirmations, and a reward that matches created rows by content.
    tool_messages: str = "nemo_gym"
    # Share of the loaded rows turned into ambiguous dialogue variants at load time (NeMo-Gym's three
    # ambiguity types, answered by user_model); 0 keeps the rows as they are. `kit env generate
    # --dialogue-share` writes such rows to files instead.
    dialogue_share: float = 0.0
    # Optional shaping rewards, each logged under its own name (outcome reward is always on).
    shaping_rewards: list[str] = field(default_factory=list)
    nemo_gym: NeMoGymConfig = field(default_factory=NeMoGymConfig)


@dataclass
class RolloutConfig:
    """The multi-turn loop: generate, parse tool calls, execute, feed results back."""

    # Model calls per policy turn (NeMo-Gym's max_steps_per_turn); a task without a simulated user is
    # one policy turn.
    max_turns: int = 4
    tool_parser: str = "kit"
    tool_parser_plugin: str | None = None
    # Who runs the episodes: "kit", the kit's own loop (any environment, any generation mode); or
    # "nemo_gym", NeMo-Gym's agent (env.nemo_gym.agent) against the policy's vLLM server, with the
    # token ids of each model call stitched into the episode (env.name nemo_gym, generation.mode server).
    agent: str = "kit"
    # Tool results longer than this are cut (with a note) so one observation cannot eat the context.
    max_tool_output_chars: int = 800


@dataclass
class UserModelConfig:
    """The simulated user of dialogue tasks: rows with a `user_model_system_prompt` (NeMo-Gym's
    multi_turn_agent). After each policy turn that ends in plain text, the user replies; its reply goes
    back to the policy as a user message, until the user says `stop_token` or `max_turns` policy turns.
    Rows without a user prompt run as one request, whatever is set here."""

    # "scripted": no model, answers from the row's original intent and stops once the state matches
    # (an upper bound on user quality); "endpoint": an OpenAI-compatible chat endpoint at base_url;
    # "served": a vLLM server for `model` that the job starts itself (serve.* settings, this port).
    kind: str = "scripted"
    base_url: str | None = None
    api_key: str | None = None
    # endpoint: the served model's name (None: the endpoint's first); served: a model path or hub id
    # (None: the policy's base model, frozen).
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 96
    # Seconds one user reply may take; past it the episode ends with reward 0 and the job goes on.
    timeout: float = 60.0
    max_turns: int = 5
    stop_token: str = "END_CONVERSATION"
    # served only: its port and its share of the GPU (beside the policy's server and trainer).
    port: int = 8100
    gpu_memory_utilization: float = 0.15


@dataclass
class GenerationConfig:
    """Where rollout tokens come from."""

    # "transformers": the trainer's own model.generate; "server": a vLLM server (kit serve);
    # "colocate": vLLM inside the trainer process (one GPU).
    mode: str = "transformers"
    server_url: str = f"http://127.0.0.1:{DEFAULT_SERVER_PORT}"
    api_key: str | None = None
    # Server mode only. "auto": reload on CPU; on a GPU, ipc for a server on this host (one trainer
    # process), else nccl. kit.generation.setup decides and explains.
    weight_sync: str = "auto"
    # Server mode: `kit train` starts `kit serve` itself on this machine (serve.host/port; on a GPU it
    # shares the trainer's GPU, so keep serve.gpu_memory_utilization low) and stops it at the end.
    start_server: bool = False
    server_timeout: float = 240.0
    request_timeout: float = 300.0
    # Sample every turn's whole token budget, past the end-of-sequence token (vLLM's ignore_eos,
    # transformers' min_new_tokens), so that every run samples the same number of tokens: for benchmarks
    # and dummy-weight models (kit.dummy_models), which rarely stop on their own. A turn that runs to
    # its budget ends the episode, so episodes are one turn and call no tool.
    ignore_eos: bool = False
    # Server mode: seed each GRPO rollout request from run.seed, the step and the episode's row in the
    # batch (vLLM's per-request seed), so that runs with the same weights and tasks sample the same
    # episodes (sync against async with grpo_async.max_lag=0, paired benchmarks). False: the server's own
    # random stream.
    seed_rollouts: bool = False


@dataclass
class ServeConfig:
    """How `kit serve` starts the vLLM OpenAI-compatible server."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_SERVER_PORT
    max_model_len: int = 4096
    enforce_eager: bool = False
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    # vLLM-CPU only: KV cache size in GiB.
    cpu_kvcache_gib: int = 2
    # More `vllm serve` arguments, e.g. [--max-num-seqs, 128]; numbers are passed as written.
    extra_args: list[str | int | float] = field(default_factory=list)


@dataclass
class SFTWarmupConfig:
    """Optional supervised warm-up on demonstrations generated from the tasks' ground truth."""

    enabled: bool = False
    num_examples: int = 72
    tiers: list[str] = field(default_factory=lambda: ["easy"])
    # TRL's SFTConfig fields under TRL's names.
    args: SFTArgs = field(default_factory=lambda: SFTArgs({}, "sft.args"))


@dataclass
class TaskSelectionConfig:
    """Which training tasks GRPO sees (kit.rollout.task_selection): after the warm-up, sample `samples`
    episodes of each of the first `probe_tasks` training tasks and keep those whose rewards differ.
    0: every task."""

    probe_tasks: int = 0
    samples: int = 4


@dataclass
class GRPOAsyncConfig:
    """One-step-ahead generation in server mode (kit.train.rollouts_ahead): while TRL trains on one batch,
    the vLLM server already generates the next with the weights before that step, so each batch TRL
    trains on is up to `max_lag` optimizer steps stale and TRL's importance-sampling correction
    (grpo.vllm_importance_sampling_*) reweights it. The tasks and their order are those of a
    synchronous run; the loss, advantages and optimizer stay TRL's."""

    enabled: bool = False
    # Optimizer steps a batch may be behind the weights it trains: 1 (generation one step ahead) or 0
    # (synchronous, through the same code path).
    max_lag: int = 1


@dataclass
class RunConfig:
    """Where the run folder goes and what is measured around training."""

    output_dir: str = "runs/default"
    seed: int = 0
    # How many validation tasks (env.eval_file) an evaluation takes: kit train's before and after
    # (0 skips them) and `kit eval`'s default (0: every task of the file).
    eval_tasks: int = 0
    # Episodes per task in each of those evaluations (`kit eval --repeats`). 1: one greedy episode, the
    # success rate. K > 1: K episodes sampled at grpo.temperature (seeded from run.seed and the repeat),
    # reported as pass^k and pass@k for k = 1..K besides the success rate (kit.train.success_rates).
    eval_repeats: int = 1
    # Also evaluate them every N GRPO steps (0: only before and after): the held-out curve.
    eval_every: int = 0
    # Continue the run in output_dir from its newest complete checkpoint (`kit train --resume`).
    resume: bool = False


@dataclass
class KitConfig:
    """The whole tree. `grpo` holds TRL GRPOConfig fields by their TRL names."""

    model: ModelConfig = field(default_factory=ModelConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    user_model: UserModelConfig = field(default_factory=UserModelConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    sft: SFTWarmupConfig = field(default_factory=SFTWarmupConfig)
    task_selection: TaskSelectionConfig = field(default_factory=TaskSelectionConfig)
    grpo_async: GRPOAsyncConfig = field(default_factory=GRPOAsyncConfig)
    run: RunConfig = field(default_factory=RunConfig)
    grpo: GRPOArgs = field(default_factory=lambda: GRPOArgs({}, "grpo"))
    recipe: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The tree as plain data; a TRL section holds only what the recipe sets."""
        return _plain(self)


def _plain(value: Any) -> Any:
    if isinstance(value, TRLArgs):
        return copy.deepcopy(value.given)
    if dataclasses.is_dataclass(value):
        return {spec.name: _plain(getattr(value, spec.name)) for spec in dataclasses.fields(value)}
    return copy.deepcopy(value)


_CHOICES = {
    ("generation", "mode"): ("transformers", "server", "colocate"),
    ("generation", "weight_sync"): ("auto", "nccl", "ipc", "reload"),
    ("env", "name"): ("workplace", "nemo_gym"),
    ("rollout", "agent"): ("kit", "nemo_gym"),
    ("env", "tools_in_prompt"): ("all", "task"),
    ("env", "tool_messages"): ("nemo_gym", "kit"),  # kit.envs.workplace.sandbox.TOOL_SETS
    ("user_model", "kind"): ("scripted", "endpoint", "served"),
}


# Keys that recipes once had, with where their meaning went.
_RETIRED = {
    ("env", "max_eval_rows"): "it was merged into run.eval_tasks, the one evaluation size (kit train's "
    "held-out evaluations and kit eval's default): set run.eval_tasks=N instead",
}


def _unknown(key: str, section: str, valid: list[str]) -> ConfigError:
    if (section, key) in _RETIRED:
        return ConfigError(f"'{section}.{key}' is no longer a key: {_RETIRED[section, key]}.")
    listing = "" if len(valid) > 40 else f" Valid keys: {', '.join(sorted(valid))}."
    return ConfigError(f"Unknown key '{key}' in {where(section)}.{close_matches(key, valid)}{listing}")


def _apply_override(data: dict[str, Any], override: str) -> None:
    if "=" not in override:
        raise ConfigError(f"Override '{override}' must look like section.key=value (e.g. grpo.max_steps=2).")
    dotted, raw = override.split("=", 1)
    parts = dotted.strip().split(".")
    if len(parts) < 2 or not all(parts):
        raise ConfigError(f"Override key '{dotted}' must name a section and a key, e.g. grpo.learning_rate.")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except (yaml.YAMLError, ValueError, RecursionError):  # not YAML: the text itself
        value = raw
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"Override '{override}': '{part}' is a value, not a section.")
    node[parts[-1]] = value


def _build_section(cls: type, section: str, values: Any) -> Any:
    if values is None:
        return cls()
    if not isinstance(values, dict):
        raise ConfigError(f"Section '{section}' must be a mapping, got {values!r}.")
    check_names(values, section)
    hints = typing.get_type_hints(cls)
    for key in values:
        if key not in hints:
            raise _unknown(key, section, list(hints))
    built = dict(values)
    for key, value in values.items():
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            built[key] = _build_section(hint, f"{section}.{key}", value)
            continue
        if isinstance(hint, type) and issubclass(hint, TRLArgs):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{section}.{key} must be a mapping of TRL {hint.trl_class} fields, got {value!r}."
                )
            check_names(value, f"{section}.{key}")
            built[key] = hint(value, f"{section}.{key}")
            continue
        if (why := problem(value, hint)) is not None:
            raise ConfigError(f"{section}.{key} {why}.")
        choices = _CHOICES.get((section, key))
        if choices and value not in choices:
            raise ConfigError(f"{section}.{key} is {value!r}; valid values: {', '.join(choices)}.")
    return cls(**built)


# The kit's own sections (grpo is TRL's GRPOConfig, checked against TRL's field types).
SECTIONS = {
    "model": ModelConfig,
    "env": EnvConfig,
    "rollout": RolloutConfig,
    "user_model": UserModelConfig,
    "generation": GenerationConfig,
    "serve": ServeConfig,
    "sft": SFTWarmupConfig,
    "task_selection": TaskSelectionConfig,
    "grpo_async": GRPOAsyncConfig,
    "run": RunConfig,
}


def _check_no_cycles(data: dict[str, Any]) -> None:
    """Refuse a value that contains itself (a YAML alias inside its own anchor): nothing could save it."""
    stack: list[tuple[Any, str, frozenset[int]]] = [(data, "", frozenset())]
    while stack:
        value, path, inside = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if id(value) in inside:
            raise ConfigError(f"'{path}' contains itself (a YAML alias inside its own anchor).")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            stack.append((item, f"{path}.{key}" if path else str(key), inside | {id(value)}))


def config_from_dict(data: dict[str, Any], recipe: str | None = None) -> KitConfig:
    """Validate a nested dict (a recipe after overrides) and build the config tree."""
    valid_top = [*SECTIONS, "grpo"]
    check_names(data, "")
    for key in data:
        if key not in valid_top:
            raise _unknown(key, "", valid_top)
    _check_no_cycles(data)
    sections = {name: _build_section(cls, name, data.get(name)) for name, cls in SECTIONS.items()}
    grpo = {} if data.get("grpo") is None else data["grpo"]
    if not isinstance(grpo, dict):
        raise ConfigError(f"Section 'grpo' must be a mapping of GRPOConfig fields, got {grpo!r}.")
    check_names(grpo, "grpo")
    selection = sections["task_selection"]
    if selection.probe_tasks < 0 or (selection.probe_tasks and selection.samples < 2):
        raise ConfigError(
            f"task_selection has probe_tasks {selection.probe_tasks} and samples {selection.samples}: "
            "probe_tasks must be 0 (off) or more, and samples at least 2 (outcomes can only differ among 2+)."
        )
    if not 0.0 <= sections["env"].dialogue_share <= 1.0:
        raise ConfigError(
            f"env.dialogue_share is {sections['env'].dialogue_share}; it must be between 0 and 1."
        )
    user = sections["user_model"]
    if user.kind == "endpoint" and not user.base_url:
        raise ConfigError(
            "user_model.kind is 'endpoint' but user_model.base_url is not set: give the OpenAI-compatible "
            "endpoint of the user model (e.g. user_model.base_url=http://127.0.0.1:8100), or use "
            "user_model.kind=served (the job starts one) or scripted (no model)."
        )
    gym = sections["env"].nemo_gym
    if gym.start_timeout <= 0 or gym.request_timeout <= 0 or gym.max_memory_growth_gib < 0:
        raise ConfigError(
            f"env.nemo_gym.start_timeout and env.nemo_gym.request_timeout must be above 0 and "
            f"env.nemo_gym.max_memory_growth_gib 0 or more; got {gym.start_timeout}, {gym.request_timeout} "
            f"and {gym.max_memory_growth_gib}."
        )
    if sections["rollout"].agent == "nemo_gym" and (
        sections["env"].name != "nemo_gym" or sections["generation"].mode != "server"
    ):
        raise ConfigError(
            "rollout.agent is 'nemo_gym': NeMo-Gym's agent runs episodes on a NeMo-Gym resources server "
            "against the policy's vLLM server, so it needs env.name=nemo_gym and generation.mode=server "
            f"(they are {sections['env'].name!r} and {sections['generation'].mode!r})."
        )
    if sections["generation"].ignore_eos and sections["rollout"].agent == "nemo_gym":
        raise ConfigError(
            "generation.ignore_eos with rollout.agent=nemo_gym: NeMo-Gym's agent sends its own sampling "
            "settings to the server, without ignore_eos. Use rollout.agent=kit or drop generation.ignore_eos."
        )
    if user.max_turns < 1 or user.timeout <= 0:
        raise ConfigError(
            f"user_model.max_turns must be 1 or more and user_model.timeout above 0; got {user.max_turns} "
            f"and {user.timeout}."
        )
    if sections["grpo_async"].max_lag not in (0, 1):
        raise ConfigError(
            f"grpo_async.max_lag is {sections['grpo_async'].max_lag}; it must be 1 (the next batch generated "
            "while this one trains) or 0 (synchronous): the kit generates at most one batch ahead."
        )
    grpo_args = GRPOArgs(grpo, "grpo")
    _check_eval_repeats(sections["run"].eval_repeats, grpo_args)
    return KitConfig(**sections, grpo=grpo_args, recipe=recipe)


def _check_eval_repeats(repeats: int, grpo: GRPOArgs) -> None:
    if repeats < 1:
        raise ConfigError(
            f"run.eval_repeats (kit eval --repeats) is {repeats}; it must be 1 (one greedy episode per task) "
            "or more (that many sampled episodes per task, for pass^k)."
        )
    if repeats > 1 and grpo.temperature <= 0:
        raise ConfigError(
            f"run.eval_repeats is {repeats} but grpo.temperature is {grpo.temperature}: the repeats sample "
            "at grpo.temperature, and greedy repeats would all be the same episode. Set grpo.temperature "
            "above 0, or run.eval_repeats=1."
        )


def load_config(recipe: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> KitConfig:
    """Load a recipe (path or shipped name; None = defaults) and apply dotted `key=value` overrides."""
    data: dict[str, Any] = {}
    recipe_name = None
    if recipe is not None:
        path = resolve_recipe_path(recipe)
        data = read_recipe(path)
        recipe_name = str(path)
    for override in overrides:
        _apply_override(data, override)
    return config_from_dict(data, recipe=recipe_name)


def save_config(cfg: KitConfig, path: Path) -> None:
    """Write the resolved config as YAML (the run folder's config.yaml; loadable as a recipe)."""
    data = cfg.to_dict()
    data.pop("recipe")
    write_atomic(
        path, f"# resolved from {cfg.recipe or 'defaults'}\n" + yaml.safe_dump(data, sort_keys=False)
    )
