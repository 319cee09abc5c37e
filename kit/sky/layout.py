"""Who does what on a cluster, and whether a recipe fits it.

`plan_layout` splits the nodes and GPUs between the vLLM server and the trainers;
`trainer_config` loads the recipe as the trainers will run it there and checks it with the
generation resolver (`kit.generation.setup`). `kit sky node-entry` and `kit sky validate` both use
them, so a layout is judged the same way before launch and on the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kit.config.tree import ConfigError

if TYPE_CHECKING:
    from kit.config.tree import KitConfig
    from kit.sky.node_entry import EntrySettings

ACCELERATE_DIR = Path(__file__).resolve().parent.parent / "accelerate"


class NodeEntryError(ConfigError):
    """The SkyPilot environment or the KIT_* settings do not describe a runnable layout."""


@dataclass
class Layout:
    """Who does what: the server's GPUs and the trainer processes (also checked by `kit sky validate`)."""

    num_nodes: int
    gpus_per_node: int
    server_gpus: int  # on node 0; 0 = vLLM colocated in the trainer
    data_parallel: int
    trainer_machines: int
    trainer_processes: int
    user_model_node: bool = False  # the last node serves the simulated user's model (dialogue tasks)

    @property
    def colocate(self) -> bool:
        return self.server_gpus == 0

    def describe(self) -> str:
        if self.colocate:
            return (
                f"1 node x {self.gpus_per_node} GPUs: trainer on all of them, vLLM colocated in each process"
            )
        if self.num_nodes == 1:
            return (
                f"1 node x {self.gpus_per_node} GPUs: vLLM on GPUs 0-{self.server_gpus - 1} (data parallel "
                f"{self.data_parallel}), trainer on GPUs {self.server_gpus}-{self.gpus_per_node - 1} "
                f"({self.trainer_processes} processes)"
            )
        last = self.trainer_machines
        trainers = "node 1" if last == 1 else f"nodes 1-{last}"
        user = f"; node {last + 1} serves the simulated user's model" if self.user_model_node else ""
        return (
            f"{self.num_nodes} nodes x {self.gpus_per_node} GPUs: node 0 serves with vLLM (data parallel "
            f"{self.data_parallel}); {trainers} train{'s' if last == 1 else ''} "
            f"({self.trainer_processes} processes){user}"
        )


def plan_layout(
    num_nodes: int,
    gpus_per_node: int,
    server_gpus: int,
    tensor_parallel: int = 1,
    user_model_node: bool = False,
) -> Layout:
    """Split the cluster between the vLLM server, the trainers and (`user_model_node`) a last node that
    serves the simulated user's model; raises NodeEntryError when it cannot."""
    if user_model_node and num_nodes < 3:
        raise NodeEntryError(
            f"KIT_USER_MODEL_NODE=1 needs 3 nodes or more (the policy's server, trainers, the user model's "
            f"server); this task has {num_nodes}. Raise num_nodes, or serve the user model elsewhere "
            "(user_model.kind=endpoint) or beside the policy (user_model.kind=served)."
        )
    if num_nodes < 1 or gpus_per_node < 1:
        raise NodeEntryError(
            f"A cluster of {num_nodes} node(s) x {gpus_per_node} GPU(s) has nothing to run on."
        )
    if num_nodes == 1:
        if server_gpus < 0 or server_gpus >= gpus_per_node:
            raise NodeEntryError(
                f"KIT_SERVER_GPUS={server_gpus} on one node of {gpus_per_node} GPUs leaves no GPU for the "
                "trainer: "
                f"use 1..{gpus_per_node - 1} for a vLLM server beside the trainer, or 0 to colocate vLLM."
            )
        trainer = gpus_per_node - server_gpus
        machines = 1
    else:
        if server_gpus not in (0, gpus_per_node):
            raise NodeEntryError(
                f"KIT_SERVER_GPUS={server_gpus}: on {num_nodes} nodes, node 0 serves with all its "
                f"{gpus_per_node} GPUs and the other nodes train; leave KIT_SERVER_GPUS unset (or 0) for "
                "multi-node tasks."
            )
        server_gpus = gpus_per_node
        machines = num_nodes - 1 - int(user_model_node)
        trainer = machines * gpus_per_node
    if server_gpus % tensor_parallel:
        raise NodeEntryError(
            f"The server's {server_gpus} GPUs are not a multiple of "
            f"serve.tensor_parallel_size={tensor_parallel}."
        )
    return Layout(
        num_nodes,
        gpus_per_node,
        server_gpus,
        server_gpus // tensor_parallel,
        machines,
        trainer,
        user_model_node,
    )


def resolve_accelerate_config(name: str) -> Path:
    """A path, or the name of a config shipped in kit/accelerate/ (fsdp, zero3, cpu_multi)."""
    path = Path(name)
    if path.is_file():
        return path
    shipped = ACCELERATE_DIR / (path.name if path.suffix == ".yaml" else f"{path.name}.yaml")
    if shipped.is_file():
        return shipped
    names = sorted(p.stem for p in ACCELERATE_DIR.glob("*.yaml"))
    raise NodeEntryError(
        f"Accelerate config {name!r} not found: not a file, and not one of the shipped {names}."
    )


def sharding_of(accelerate_config: Path) -> str | None:
    """'FSDP' or 'ZeRO-3' when the accelerate config shards the model across processes, else None."""
    import yaml

    config = yaml.safe_load(accelerate_config.read_text()) or {}
    kind = config.get("distributed_type")
    if kind == "FSDP":
        return "FSDP"
    if kind == "DEEPSPEED" and (config.get("deepspeed_config") or {}).get("zero_stage") == 3:
        return "ZeRO-3"
    return None


def trainer_config(
    settings: EntrySettings,
    layout: Layout,
    common: list[str],
    server_url: str | None,
    accelerate_config: Path,
) -> tuple[KitConfig, list[str]]:
    """The trainer's config on this layout and the overrides it adds to the task's own, checked by the
    generation resolver. The layout never changes the recipe's generation mode: a recipe that does not
    fit the layout is an error naming both."""
    from kit.config.tree import load_config
    from kit.generation.setup import resolve_generation

    extra = [f"generation.server_url={server_url}"] if server_url else []
    cfg = load_config(settings.recipe, [*common, *extra])
    if server_url and not settings.cpu and cfg.generation.weight_sync == "auto":
        # The layout puts the server on GPUs of its own; CUDA IPC, auto's choice for a server on this
        # host, needs it on the trainer's GPU, so auto means NCCL here.
        extra.append("generation.weight_sync=nccl")
        cfg = load_config(settings.recipe, [*common, *extra])
    mode = cfg.generation.mode
    if not layout.colocate and mode != "server":
        raise NodeEntryError(
            f"The recipe {settings.recipe} has generation.mode={mode}, but this layout runs a vLLM server "
            f"({layout.describe()}). Add generation.mode=server to KIT_OVERRIDES, or use one node with "
            f"KIT_SERVER_GPUS=0 for a {mode} run."
        )
    if layout.colocate and mode == "server":
        raise NodeEntryError(
            f"The recipe {settings.recipe} has generation.mode=server, but KIT_SERVER_GPUS=0 starts no "
            f"server ({layout.describe()}). Set KIT_SERVER_GPUS to the GPUs vLLM should serve on, or add "
            "generation.mode=colocate to KIT_OVERRIDES."
        )
    setup = resolve_generation(
        cfg,
        on_gpu=not settings.cpu,
        num_processes=layout.trainer_processes,
        sharding=sharding_of(accelerate_config),
    )
    if setup.problems:
        raise NodeEntryError(f"The recipe {settings.recipe} on this layout: " + " ".join(setup.problems))
    return cfg, extra
