"""`kit sky node-entry`: one node's role in a SkyPilot cluster, from SkyPilot's environment.

One node (`num_nodes: 1`), G GPUs:
    KIT_SERVER_GPUS=K > 0: `kit serve` on GPUs 0..K-1 (vLLM data parallel K / tensor_parallel_size),
        then `accelerate launch` of `kit train` on GPUs K..G-1 in server mode; the server stops after.
    KIT_SERVER_GPUS=0: `accelerate launch` of `kit train` on all G GPUs with vLLM colocated.
Several nodes (N >= 2):
    rank 0: `kit serve --host <IP of node 0>` on all its GPUs, until the trainers report done on the
        control port (KIT_SERVER_PORT + 1, same address) or the server dies;
    rank r >= 1: wait for rank 0's /health, then `accelerate launch --num_machines N-1 --machine_rank r-1
        --main_process_ip <IP of node 1> --num_processes (N-1)*G -m kit train ... generation.mode=server
        generation.server_url=http://<IP of node 0>:PORT`; rank 1 reports done to rank 0 afterwards.

Settings come from the task's envs (flags override them): KIT_RECIPE, KIT_OVERRIDES (space-separated
dotted overrides), KIT_OUTPUT_DIR, KIT_SERVER_GPUS, KIT_SERVER_PORT, KIT_ACCELERATE_CONFIG (fsdp, zero3,
cpu_multi or a path), KIT_TRAINER_PORT (accelerate's main process port, 29500), KIT_HEALTH_TIMEOUT.
When WANDB_API_KEY is set, the trainer reports to W&B (`grpo.report_to=wandb`, overridable).

Binding: the single-node server listens on 127.0.0.1; rank 0 of a multi-node task binds the server and
the control port to its own address from SKYPILOT_NODE_IPS (the cluster's private network), never to
every interface, so only the cluster's nodes reach them.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from kit.config.tree import DEFAULT_SERVER_PORT
from kit.sky.layout import (
    Layout,
    NodeEntryError,
    plan_layout,
    resolve_accelerate_config,
    trainer_config,
)


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = env.get(name, "")
    if raw.strip() == "":
        if default is None:
            raise NodeEntryError(
                f"${name} is not set; SkyPilot sets it on every node (or set it yourself to test)."
            )
        return default
    try:
        return int(raw)
    except ValueError:
        raise NodeEntryError(f"${name} is {raw!r}, not an integer.") from None


@dataclass
class Cluster:
    """The node's view of the cluster, as SkyPilot describes it."""

    rank: int
    ips: list[str]
    num_nodes: int
    gpus_per_node: int

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Cluster:
        """Read SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS (one per line), SKYPILOT_NUM_NODES and
        SKYPILOT_NUM_GPUS_PER_NODE."""
        ips = [line.strip() for line in env.get("SKYPILOT_NODE_IPS", "").splitlines() if line.strip()]
        num_nodes = _int(env, "SKYPILOT_NUM_NODES", len(ips) or None)
        rank = _int(env, "SKYPILOT_NODE_RANK")
        gpus = _int(env, "SKYPILOT_NUM_GPUS_PER_NODE")
        if len(ips) != num_nodes:
            raise NodeEntryError(
                f"$SKYPILOT_NODE_IPS lists {len(ips)} IPs but $SKYPILOT_NUM_NODES is {num_nodes}."
            )
        if not 0 <= rank < num_nodes:
            raise NodeEntryError(f"$SKYPILOT_NODE_RANK is {rank}, outside 0..{num_nodes - 1}.")
        if gpus < 1:
            raise NodeEntryError(
                f"$SKYPILOT_NUM_GPUS_PER_NODE is {gpus}: the task needs accelerators (for CPU processes "
                "set it to the number of processes per node and pass --cpu)."
            )
        return cls(rank, ips, num_nodes, gpus)


@dataclass
class EntrySettings:
    """The kit's side of the task: recipe, overrides, ports and the GPU split (from KIT_* envs)."""

    recipe: str
    overrides: list[str] = field(default_factory=list)
    output_dir: str | None = None
    server_gpus: int = 0
    port: int = DEFAULT_SERVER_PORT
    control_port: int = 8001
    trainer_port: int = 29500
    accelerate_config: str = "fsdp"
    cpu: bool = False
    health_timeout: float = 3600.0
    # The last node serves the simulated user's model (user_model.model, else the policy's base model,
    # frozen) on user_model_port; the trainers reach it as user_model.kind=endpoint.
    user_model_node: bool = False
    user_model_port: int = 8002

    @classmethod
    def from_env(cls, env: Mapping[str, str], **given) -> EntrySettings:
        """Settings from the task's envs; keyword arguments that are not None win (the CLI flags)."""
        values = {
            "recipe": env.get("KIT_RECIPE", "").strip(),
            "overrides": shlex.split(env.get("KIT_OVERRIDES", "")),
            "output_dir": env.get("KIT_OUTPUT_DIR", "").strip() or None,
            "server_gpus": _int(env, "KIT_SERVER_GPUS", 0),
            "port": _int(env, "KIT_SERVER_PORT", DEFAULT_SERVER_PORT),
            "trainer_port": _int(env, "KIT_TRAINER_PORT", 29500),
            "accelerate_config": env.get("KIT_ACCELERATE_CONFIG", "").strip() or None,
            "cpu": env.get("KIT_SKY_CPU", "") in ("1", "true", "True"),
            "health_timeout": float(env.get("KIT_HEALTH_TIMEOUT", "") or 3600),
            "user_model_node": env.get("KIT_USER_MODEL_NODE", "") in ("1", "true", "True"),
        }
        extra_overrides = given.pop("overrides", None) or []
        values.update({k: v for k, v in given.items() if v is not None and v is not False})
        values["overrides"] = [*values["overrides"], *extra_overrides]
        if not values["recipe"]:
            raise NodeEntryError("No recipe: set KIT_RECIPE in the task's envs (or pass --config).")
        if values["accelerate_config"] is None:
            values["accelerate_config"] = "cpu_multi" if values["cpu"] else "fsdp"
        values["control_port"] = _int(env, "KIT_CONTROL_PORT", values["port"] + 1)
        values["user_model_port"] = _int(env, "KIT_USER_MODEL_PORT", values["port"] + 2)
        return cls(**values)


@dataclass
class Command:
    """One process the node runs: its argv and the environment variables it adds."""

    role: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def shell(self) -> str:
        assignments = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        return " ".join([*assignments, shlex.join(self.argv)])


@dataclass
class NodePlan:
    """What one node runs, in order: [server] -> [wait for health] -> [trainer] -> [notify done]."""

    summary: list[str]
    layout: Layout
    server: Command | None = None
    wait_servers: list[str] = field(default_factory=list)  # vLLM servers whose /health must answer first
    trainer: Command | None = None
    notify_urls: list[str] = field(default_factory=list)  # told "done" when the trainer exits
    control_port: int | None = None  # a serving node of a multi-node task: the trainers' "done" comes here
    control_host: str = "127.0.0.1"  # the control port's address (its private IP)

    def lines(self) -> list[str]:
        """The plan as printed by --print-only: comments, then one `role: ...` line per step."""
        out = [f"# {line}" for line in self.summary]
        if self.server:
            out.append(f"server: {self.server.shell()}")
        if self.control_port is not None:
            out.append(
                f"control: listen on {self.control_host}:{self.control_port}, stop the server when the "
                "trainers are done"
            )
        out += [f"wait: {url}/health" for url in self.wait_servers]
        if self.trainer:
            out.append(f"trainer: {self.trainer.shell()}")
        if self.server and self.trainer:
            out.append("stop: server")
        out += [f"notify: {url}" for url in self.notify_urls]
        return out


def plan_node(cluster: Cluster, settings: EntrySettings, env: Mapping[str, str] | None = None) -> NodePlan:
    """The commands this node runs (pure: nothing is started). Loads the recipe to check it and read its
    serve.tensor_parallel_size."""
    from kit.config.tree import load_config

    env = os.environ if env is None else env
    common = [
        *([f"run.output_dir={settings.output_dir}"] if settings.output_dir else []),
        *settings.overrides,
    ]
    cfg = load_config(settings.recipe, common)
    tp = 1 if settings.cpu else cfg.serve.tensor_parallel_size
    layout = plan_layout(
        cluster.num_nodes, cluster.gpus_per_node, settings.server_gpus, tp, settings.user_model_node
    )
    accelerate_config = resolve_accelerate_config(settings.accelerate_config)
    py = sys.executable
    kit_config = ["--config", settings.recipe]
    summary = [
        f"kit sky node-entry: rank {cluster.rank} of {cluster.num_nodes} node(s) "
        f"(IPs {' '.join(cluster.ips)}), {cluster.gpus_per_node} "
        f"{'CPU process' if settings.cpu else 'GPU'}(s) per node",
        f"layout: {layout.describe()}",
        f"recipe: {settings.recipe}; accelerate config: {accelerate_config}",
    ]
    plan = NodePlan(summary, layout)
    gpu_env = (
        (lambda ids: {}) if settings.cpu else (lambda ids: {"CUDA_VISIBLE_DEVICES": ",".join(map(str, ids))})
    )

    def server(host: str, ids: list[int]) -> Command:
        dp = [] if settings.cpu else [f"serve.data_parallel_size={layout.data_parallel}"]
        argv = [
            py,
            "-m",
            "kit",
            "serve",
            *kit_config,
            "--host",
            host,
            "--port",
            str(settings.port),
            *common,
            *dp,
        ]
        return Command("server", argv, gpu_env(ids) if cluster.num_nodes == 1 else {})

    def user_model_server(host: str) -> Command:
        model = cfg.user_model.model or cfg.model.name_or_path
        argv = [
            py, "-m", "kit", "serve", *kit_config, "--model", model, "--host", host,
            "--port", str(settings.user_model_port), *common, "serve.gpu_memory_utilization=0.9",
        ]  # fmt: skip
        return Command("user model server", argv)

    def trainer(server_url: str | None, machine_rank: int, main_ip: str | None, ids: list[int]) -> Command:
        launch = [
            py, "-m", "accelerate.commands.launch", "--config_file", str(accelerate_config),
            "--num_machines", str(layout.trainer_machines), "--machine_rank", str(machine_rank),
            "--num_processes", str(layout.trainer_processes),
            "--main_process_port", str(settings.trainer_port),
        ]  # fmt: skip
        if main_ip is not None:
            launch += ["--main_process_ip", main_ip]
        trained, extra = trainer_config(settings, layout, common, server_url, accelerate_config)
        reporting = (
            ["grpo.report_to=wandb"] if env.get("WANDB_API_KEY") and "report_to" not in trained.grpo else []
        )
        argv = [*launch, "-m", "kit", "train", *kit_config, *reporting, *common, *extra, *user_overrides]
        extra = (
            {"ACCELERATE_USE_CPU": "true"} if settings.cpu else gpu_env(ids) if cluster.num_nodes == 1 else {}
        )
        return Command("trainer", argv, extra)

    user_url = f"http://{cluster.ips[-1]}:{settings.user_model_port}" if layout.user_model_node else None
    user_overrides = ["user_model.kind=endpoint", f"user_model.base_url={user_url}"] if user_url else []
    gpus = list(range(cluster.gpus_per_node))
    if cluster.num_nodes == 1:
        if layout.colocate:
            plan.trainer = trainer(None, 0, None, gpus)
        else:
            plan.server = server("127.0.0.1", gpus[: layout.server_gpus])
            plan.wait_servers = [f"http://127.0.0.1:{settings.port}"]
            plan.trainer = trainer(f"http://127.0.0.1:{settings.port}", 0, None, gpus[layout.server_gpus :])
        return plan
    head, first_trainer = cluster.ips[0], cluster.ips[1]
    if cluster.rank == 0:
        plan.server = server(head, gpus)
        plan.control_port, plan.control_host = settings.control_port, head
        return plan
    if user_url and cluster.rank == cluster.num_nodes - 1:
        last = cluster.ips[-1]
        plan.server = user_model_server(last)
        plan.control_port, plan.control_host = settings.user_model_port + 1, last
        return plan
    plan.wait_servers = [f"http://{head}:{settings.port}", *([user_url] if user_url else [])]
    plan.trainer = trainer(f"http://{head}:{settings.port}", cluster.rank - 1, first_trainer, gpus)
    if cluster.rank == 1:
        plan.notify_urls = [f"http://{head}:{settings.control_port}/done"]
        if user_url:
            plan.notify_urls.append(f"http://{cluster.ips[-1]}:{settings.user_model_port + 1}/done")
    return plan
