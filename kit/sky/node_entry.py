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

import json
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kit.config import ConfigError
from kit.processes import interrupt_on_sigterm, stop_process_group

ACCELERATE_DIR = Path(__file__).resolve().parent.parent / "accelerate"


class NodeEntryError(ConfigError):
    """The SkyPilot environment or the KIT_* settings do not describe a runnable layout."""


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
    port: int = 8000
    control_port: int = 8001
    trainer_port: int = 29500
    accelerate_config: str = "fsdp"
    cpu: bool = False
    health_timeout: float = 3600.0

    @classmethod
    def from_env(cls, env: Mapping[str, str], **given) -> EntrySettings:
        """Settings from the task's envs; keyword arguments that are not None win (the CLI flags)."""
        values = {
            "recipe": env.get("KIT_RECIPE", "").strip(),
            "overrides": shlex.split(env.get("KIT_OVERRIDES", "")),
            "output_dir": env.get("KIT_OUTPUT_DIR", "").strip() or None,
            "server_gpus": _int(env, "KIT_SERVER_GPUS", 0),
            "port": _int(env, "KIT_SERVER_PORT", 8000),
            "trainer_port": _int(env, "KIT_TRAINER_PORT", 29500),
            "accelerate_config": env.get("KIT_ACCELERATE_CONFIG", "").strip() or None,
            "cpu": env.get("KIT_SKY_CPU", "") in ("1", "true", "True"),
            "health_timeout": float(env.get("KIT_HEALTH_TIMEOUT", "") or 3600),
        }
        extra_overrides = given.pop("overrides", None) or []
        values.update({k: v for k, v in given.items() if v is not None and v is not False})
        values["overrides"] = [*values["overrides"], *extra_overrides]
        if not values["recipe"]:
            raise NodeEntryError("No recipe: set KIT_RECIPE in the task's envs (or pass --config).")
        if values["accelerate_config"] is None:
            values["accelerate_config"] = "cpu_multi" if values["cpu"] else "fsdp"
        values["control_port"] = _int(env, "KIT_CONTROL_PORT", values["port"] + 1)
        return cls(**values)


@dataclass
class Layout:
    """Who does what: the server's GPUs and the trainer processes (also checked by `kit sky validate`)."""

    num_nodes: int
    gpus_per_node: int
    server_gpus: int  # on node 0; 0 = vLLM colocated in the trainer
    data_parallel: int
    trainer_machines: int
    trainer_processes: int

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
        trainers = "node 1" if self.num_nodes == 2 else f"nodes 1-{self.num_nodes - 1}"
        return (
            f"{self.num_nodes} nodes x {self.gpus_per_node} GPUs: node 0 serves with vLLM (data parallel "
            f"{self.data_parallel}); {trainers} train{'s' if self.num_nodes == 2 else ''} "
            f"({self.trainer_processes} processes)"
        )


def plan_layout(num_nodes: int, gpus_per_node: int, server_gpus: int, tensor_parallel: int = 1) -> Layout:
    """Split the cluster between the vLLM server and the trainers; raises NodeEntryError when it cannot."""
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
        machines = num_nodes - 1
        trainer = machines * gpus_per_node
    if server_gpus % tensor_parallel:
        raise NodeEntryError(
            f"The server's {server_gpus} GPUs are not a multiple of "
            f"serve.tensor_parallel_size={tensor_parallel}."
        )
    return Layout(num_nodes, gpus_per_node, server_gpus, server_gpus // tensor_parallel, machines, trainer)


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
    wait_url: str | None = None
    trainer: Command | None = None
    notify_url: str | None = None
    control_port: int | None = None  # rank 0 of a multi-node task: listen here for the trainers' "done"
    control_host: str = "127.0.0.1"  # the control port's address (rank 0: its private IP)

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
        if self.wait_url:
            out.append(f"wait: {self.wait_url}")
        if self.trainer:
            out.append(f"trainer: {self.trainer.shell()}")
        if self.server and self.trainer:
            out.append("stop: server")
        if self.notify_url:
            out.append(f"notify: {self.notify_url}")
        return out


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
):
    """The trainer's config on this layout and the overrides it adds to the task's own, checked by the
    generation resolver. The layout never changes the recipe's generation mode: a recipe that does not
    fit the layout is an error naming both."""
    from kit.config import load_config
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


def plan_node(cluster: Cluster, settings: EntrySettings, env: Mapping[str, str] | None = None) -> NodePlan:
    """The commands this node runs (pure: nothing is started). Loads the recipe to check it and read its
    serve.tensor_parallel_size."""
    from kit.config import load_config

    env = os.environ if env is None else env
    common = [
        *([f"run.output_dir={settings.output_dir}"] if settings.output_dir else []),
        *settings.overrides,
    ]
    cfg = load_config(settings.recipe, common)
    tp = 1 if settings.cpu else cfg.serve.tensor_parallel_size
    layout = plan_layout(cluster.num_nodes, cluster.gpus_per_node, settings.server_gpus, tp)
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
        argv = [*launch, "-m", "kit", "train", *kit_config, *reporting, *common, *extra]
        extra = (
            {"ACCELERATE_USE_CPU": "true"} if settings.cpu else gpu_env(ids) if cluster.num_nodes == 1 else {}
        )
        return Command("trainer", argv, extra)

    gpus = list(range(cluster.gpus_per_node))
    if cluster.num_nodes == 1:
        if layout.colocate:
            plan.trainer = trainer(None, 0, None, gpus)
        else:
            plan.server = server("127.0.0.1", gpus[: layout.server_gpus])
            plan.wait_url = f"http://127.0.0.1:{settings.port}/health"
            plan.trainer = trainer(f"http://127.0.0.1:{settings.port}", 0, None, gpus[layout.server_gpus :])
        return plan
    head, first_trainer = cluster.ips[0], cluster.ips[1]
    if cluster.rank == 0:
        plan.server = server(head, gpus)
        plan.control_port, plan.control_host = settings.control_port, head
        return plan
    plan.wait_url = f"http://{head}:{settings.port}/health"
    plan.trainer = trainer(f"http://{head}:{settings.port}", cluster.rank - 1, first_trainer, gpus)
    if cluster.rank == 1:
        plan.notify_url = f"http://{head}:{settings.control_port}/done"
    return plan


# ---------------------------------------------------------------- running a plan


def _say(message: str) -> None:
    print(f"[kit node-entry] {message}", flush=True)


def _start(command: Command) -> subprocess.Popen:
    _say(f"{command.role}: {command.shell()}")
    return subprocess.Popen(command.argv, env={**os.environ, **command.env}, start_new_session=True)


def wait_for_health(url: str, timeout: float, alive=lambda: True, interval: float = 2.0) -> None:
    """Poll `url` until it answers 200; raise NodeEntryError on timeout or when `alive()` turns False."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if not alive():
            raise NodeEntryError(f"The vLLM server exited before {url} answered; see its log.")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as error:
            last = str(error)
        time.sleep(interval)
    raise NodeEntryError(f"{url} did not answer within {timeout:.0f} s (last: {last}).")


def _notify_done(url: str, code: int) -> None:
    body = json.dumps({"rc": code}).encode()
    for attempt in range(5):
        try:
            request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10):
                _say(f"told the server node that training finished (exit {code})")
                return
        except (urllib.error.URLError, OSError) as error:
            _say(f"could not reach {url} ({error}); retry {attempt + 1}/5")
            time.sleep(3)


class _DoneListener:
    """A tiny HTTP endpoint on rank 0: the trainers' leader POSTs {"rc": N} to /done when training ends."""

    def __init__(self, host: str, port: int) -> None:
        self.event = threading.Event()
        self.code = 0
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    listener.code = int(json.loads(self.rfile.read(length) or b"{}").get("rc", 0))
                except (ValueError, AttributeError):
                    listener.code = 1
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok\n")
                listener.event.set()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_plan(plan: NodePlan, health_timeout: float) -> int:
    """Run the node's plan; every child runs in its own process group and is stopped on the way out."""
    if threading.current_thread() is threading.main_thread():
        interrupt_on_sigterm()  # SkyPilot cancels a job with SIGTERM: stop the children
    server = trainer = None
    listener = None
    try:
        if plan.control_port is not None:
            listener = _DoneListener(plan.control_host, plan.control_port)
        if plan.server:
            server = _start(plan.server)
        if plan.wait_url:
            _say(f"waiting for the vLLM server: {plan.wait_url}")
            wait_for_health(
                plan.wait_url, health_timeout, alive=lambda: server is None or server.poll() is None
            )
            _say(f"vLLM server is up: {plan.wait_url}")
        if plan.trainer is None:  # rank 0 of a multi-node task: serve until the trainers are done
            assert server is not None and listener is not None
            while not listener.event.wait(timeout=5):
                if server.poll() is not None:
                    _say(f"the vLLM server exited with code {server.returncode} before training finished")
                    return 1
            _say(f"the trainers finished (exit {listener.code}); stopping the vLLM server")
            return 0 if listener.code == 0 else 1
        trainer = _start(plan.trainer)
        code = trainer.wait()
        _say(f"trainer exited with code {code}")
        if plan.notify_url:
            _notify_done(plan.notify_url, code)
        return code
    except NodeEntryError as error:
        _say(f"error: {error}")
        if plan.notify_url:
            _notify_done(plan.notify_url, 1)
        return 1
    except KeyboardInterrupt:
        _say("interrupted; stopping")
        return 130
    finally:
        stop_process_group(trainer, grace=30.0)
        stop_process_group(server, grace=30.0)
        if listener is not None:
            listener.close()


def node_entry_cli(args) -> int:
    """`kit sky node-entry`: plan this node's role from the environment, then print or run it."""
    env = dict(os.environ)
    if args.cpu:
        env["KIT_SKY_CPU"] = "1"
    settings = EntrySettings.from_env(
        env,
        recipe=args.config,
        overrides=args.overrides,
        server_gpus=args.server_gpus,
        port=args.port,
        accelerate_config=args.accelerate_config,
    )
    plan = plan_node(Cluster.from_env(env), settings, env)
    if args.print_only:
        print("\n".join(plan.lines()))
        return 0
    for line in plan.summary:
        _say(line)
    return run_plan(plan, settings.health_timeout)
