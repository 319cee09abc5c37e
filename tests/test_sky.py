"""SkyPilot support: task YAMLs parsed by the real SkyPilot (launcher env), node roles, launch lines, plans.

The SkyPilot checks run in the launcher environment that `make sky-venv` builds (`make test` builds it
first); without it these tests fail and say so, they do not skip.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import KIT, PROJECT_ROOT

from kit.generation.vllm_server import VLLMServerClient
from kit.sky.node_entry import Command, Layout, NodePlan, plan_layout
from kit.sky.node_run import run_plan
from kit.sky.sky_venv import LauncherNotFound, launcher_python

SKY_DIR = PROJECT_ROOT / "sky"
SINGLE = SKY_DIR / "grpo-single-node.yaml"
MULTI = SKY_DIR / "grpo-multi-node.yaml"
RECIPES = sorted((PROJECT_ROOT / "kit" / "recipes").glob("*.yaml"))
IPS = "10.0.0.1\n10.0.0.2\n10.0.0.3"


@pytest.fixture(scope="module")
def sky_python() -> str:
    try:
        return launcher_python()
    except LauncherNotFound as error:
        pytest.fail(f"{error}")


def kit(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """The real `kit` CLI in a subprocess."""
    return subprocess.run(
        [*KIT, *args], capture_output=True, text=True, cwd=PROJECT_ROOT, env={**os.environ, **(env or {})},
        timeout=timeout,
    )  # fmt: skip


# ---------------------------------------------------------------- kit sky validate


def test_every_shipped_task_yaml_validates(sky_python):
    assert {SINGLE, MULTI} <= set(SKY_DIR.glob("*.yaml"))
    done = kit("sky", "validate")
    assert done.returncode == 0, done.stdout + done.stderr
    for path in SKY_DIR.glob("*.yaml"):
        assert f"sky/{path.name}: OK" in done.stdout
    assert "SkyPilot 0.14.1" in done.stdout
    assert "64 prompts x 16 generations = 1024 episodes per step" in done.stdout


def test_node_env_is_what_skypilot_parsed_plus_its_node_variables(sky_python):
    """Notebook 05 plans each node from this: the envs SkyPilot itself parsed, the SKYPILOT_* it adds."""
    from kit.sky.node_entry import Cluster, EntrySettings
    from kit.sky.sky_venv import parse_task_yamls

    multi = next(task for task in parse_task_yamls([MULTI]).tasks if task.ok)
    env = multi.node_env(2)
    cluster, settings = Cluster.from_env(env), EntrySettings.from_env(env)
    assert (cluster.rank, cluster.num_nodes, cluster.gpus_per_node) == (2, 3, 8)
    assert cluster.ips == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert settings.recipe == "nemotron_nano_9b_multinode" and env["NCCL_IB_DISABLE"] == "0"
    with pytest.raises(ValueError, match="3 node.s. need as many IPs .got 1."):
        multi.node_env(0, ips=["10.0.0.1"])


def test_misspelt_field_fails_with_skypilots_message(sky_python, tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text(SINGLE.read_text().replace("accelerators:", "acelerators:"))
    done = kit("sky", "validate", str(bad))
    assert done.returncode == 1
    assert "Instead of 'acelerators', did you mean 'accelerators'?" in done.stdout


def _variant(tmp_path: Path, source: Path, edit) -> Path:
    data = yaml.safe_load(source.read_text())
    edit(data)
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["envs"].update(KIT_SERVER_GPUS=8), "leaves no GPU for the trainer"),
        (lambda d: d["envs"].update(KIT_RECIPE="no_such_recipe"), "Recipe 'no_such_recipe' not found"),
        (lambda d: d["resources"].update(ports=8000), "resources.ports opens port 8000"),
        (lambda d: d["secrets"].update(HF_TOKEN="hf_inline"), "secrets.HF_TOKEN has an inline value"),
        (
            lambda d: d["envs"].update(KIT_OVERRIDES="grpo.num_generations=3"),
            "not a multiple of num_generations 3",
        ),
        (lambda d: d.update(run="python train.py"), "does not call `python -m kit sky node-entry`"),
    ],
    ids=["gpu-split", "recipe", "port", "secret", "batch", "run"],
)
def test_kit_checks_name_the_problem(sky_python, cli, tmp_path, edit, message):
    done = cli("sky", "validate", str(_variant(tmp_path, SINGLE, edit)))
    assert done.returncode == 1
    assert message in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("source", "ports", "port"),
    [(MULTI, 8000, 8000), (MULTI, "8001", 8001), (SINGLE, "7990-8010", 8000), (SINGLE, [443, 9000], 9000)],
    ids=["server", "control", "range", "moved-server-port"],
)
def test_validate_refuses_opening_the_server_port(sky_python, cli, tmp_path, source, ports, port):
    def edit(data: dict) -> None:
        data["resources"]["ports"] = ports
        if port == 9000:
            data["envs"]["KIT_SERVER_PORT"] = 9000

    path = _variant(tmp_path, source, edit)
    done = cli("sky", "validate", str(path))
    assert done.returncode == 1
    assert f"{path}: resources.ports opens port {port}" in done.stdout, done.stdout
    assert "Remove it from `ports:`" in done.stdout


def test_validate_accepts_unrelated_ports(sky_python, cli, tmp_path):
    path = _variant(tmp_path, SINGLE, lambda d: d["resources"].update(ports=[443, "9000-9010"]))
    done = cli("sky", "validate", str(path))
    assert done.returncode == 0, done.stdout


def test_shipped_task_yamls_open_no_port():
    for path in (SINGLE, MULTI):
        assert "ports" not in yaml.safe_load(path.read_text())["resources"], path


def test_multi_node_split_must_divide_by_tensor_parallel(sky_python, cli, tmp_path):
    path = _variant(tmp_path, MULTI, lambda d: d["envs"].update(KIT_OVERRIDES="serve.tensor_parallel_size=3"))
    done = cli("sky", "validate", str(path))
    assert done.returncode == 1
    assert "not a multiple of serve.tensor_parallel_size=3" in done.stdout


def test_missing_launcher_env_says_make_sky_venv(tmp_path):
    done = kit("sky", "validate", env={"KIT_SKY_PYTHON": str(tmp_path / "nope" / "python")})
    assert done.returncode == 2
    assert "KIT_SKY_PYTHON" in done.stderr
    # and without any launcher at all, the message names the make target
    code = (
        "import kit.sky.sky_venv as l, pathlib, importlib.util as u\n"
        "l.SKY_VENV = pathlib.Path('/nonexistent'); u.find_spec = lambda name: None\n"
        "try:\n    l.launcher_python()\nexcept l.LauncherNotFound as e:\n    print(e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KIT_SKY_PYTHON"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT
    )
    assert "make sky-venv" in out.stdout


# ---------------------------------------------------------------- kit sky node-entry


def _entry(run, rank: int, nodes: int, gpus: int, *args: str, **envs: str) -> list[str]:
    env = {
        "SKYPILOT_NODE_RANK": str(rank),
        "SKYPILOT_NODE_IPS": "\n".join(IPS.splitlines()[:nodes]),
        "SKYPILOT_NUM_NODES": str(nodes),
        "SKYPILOT_NUM_GPUS_PER_NODE": str(gpus),
        "WANDB_API_KEY": "",
        **envs,
    }
    done = run("sky", "node-entry", "--print-only", *args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _step(lines: list[str], role: str) -> list[str] | str | None:
    found = [line.split(": ", 1)[1] for line in lines if line.startswith(f"{role}: ")]
    if not found:
        return None
    return shlex.split(found[0]) if role in ("server", "trainer") else found[0]


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


MULTI_ENV = {"KIT_RECIPE": "nemotron_nano_9b_multinode", "KIT_OUTPUT_DIR": "/checkpoints/run"}


def test_node_entry_rank0_serves_on_all_gpus_until_done(cli):
    lines = _entry(cli, 0, 3, 8, **MULTI_ENV)
    server = _step(lines, "server")
    assert server[1:6] == ["-m", "kit", "serve", "--config", "nemotron_nano_9b_multinode"]
    assert _after(server, "--host") == "10.0.0.1" and _after(server, "--port") == "8000"
    assert "serve.data_parallel_size=8" in server and "run.output_dir=/checkpoints/run" in server
    assert not any(a.startswith("CUDA_VISIBLE_DEVICES") for a in server)
    assert _step(lines, "control").startswith("listen on 10.0.0.1:8001")
    assert _step(lines, "trainer") is None and _step(lines, "wait") is None


def test_node_entry_binds_the_private_address_never_every_interface(cli):
    multi = _entry(cli, 0, 3, 8, **MULTI_ENV)
    single = _entry(cli, 0, 1, 8, KIT_RECIPE="qwen3_4b_8gpu", KIT_SERVER_GPUS="4")
    assert _after(_step(multi, "server"), "--host") == IPS.splitlines()[0]
    assert _after(_step(single, "server"), "--host") == "127.0.0.1"
    assert not any("0.0.0.0" in line for line in [*multi, *single])


def test_control_listener_binds_the_plan_address(tmp_path):
    """Rank 0's "done" endpoint listens on the plan's address only: here 127.0.0.2, not 127.0.0.1."""
    from kit.net import free_port

    port = free_port(span=2)
    layout = Layout(2, 1, 1, 1, 1, 1)
    rank0 = NodePlan(["rank 0"], layout, server=_http_server(tmp_path, port), control_port=port + 1,
                     control_host="127.0.0.2")  # fmt: skip
    serving = threading.Thread(target=lambda: run_plan(rank0, 60), daemon=True)
    serving.start()
    VLLMServerClient(f"http://127.0.0.1:{port}").wait_until_healthy(30)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port + 1), timeout=5).close()
    request = urllib.request.Request(f"http://127.0.0.2:{port + 1}/done", data=b'{"rc": 0}')
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    serving.join(timeout=60)
    assert not serving.is_alive()


@pytest.mark.parametrize("rank", [1, 2])
def test_node_entry_trainer_ranks_join_one_accelerate_run(rank):
    lines = _entry(kit, rank, 3, 8, **MULTI_ENV)  # the command itself, in a subprocess
    assert _step(lines, "wait") == "http://10.0.0.1:8000/health"
    trainer = _step(lines, "trainer")
    launch = trainer[: trainer.index("kit")]
    assert launch[1:3] == ["-m", "accelerate.commands.launch"]
    assert _after(launch, "--config_file").endswith("kit/accelerate/fsdp.yaml")
    assert _after(launch, "--num_machines") == "2"
    assert _after(launch, "--machine_rank") == str(rank - 1)
    assert _after(launch, "--main_process_ip") == "10.0.0.2"
    assert _after(launch, "--num_processes") == "16"
    assert _after(launch, "--main_process_port") == "29500"
    train = trainer[trainer.index("kit") - 1 :]
    assert train[:5] == ["-m", "kit", "train", "--config", "nemotron_nano_9b_multinode"]
    # The recipe's own mode (server); the layout adds the URL, and NCCL for a server on other GPUs.
    assert train[-2:] == ["generation.server_url=http://10.0.0.1:8000", "generation.weight_sync=nccl"]
    assert "run.output_dir=/checkpoints/run" in train
    assert (_step(lines, "notify") == "http://10.0.0.1:8001/done") == (rank == 1)


FOUR_IPS = "10.0.0.1\n10.0.0.2\n10.0.0.3\n10.0.0.4"
USER_NODE_ENV = {**MULTI_ENV, "KIT_USER_MODEL_NODE": "1", "SKYPILOT_NODE_IPS": FOUR_IPS}


def test_node_entry_user_model_node_serves_the_user_and_the_trainers_reach_it(cli):
    """KIT_USER_MODEL_NODE=1: the last node serves the simulated user's model (the policy's base model,
    frozen, by default); the trainers wait for it too, talk to it as an endpoint, and tell it when done."""
    user_node = _entry(cli, 3, 4, 8, **USER_NODE_ENV)
    server = _step(user_node, "server")
    assert _after(server, "--model") == "nvidia/NVIDIA-Nemotron-Nano-9B-v2"
    assert _after(server, "--host") == "10.0.0.4" and _after(server, "--port") == "8002"
    assert _step(user_node, "control").startswith("listen on 10.0.0.4:8003")
    assert _step(user_node, "trainer") is None
    first = _entry(cli, 1, 4, 8, **USER_NODE_ENV)
    assert [line for line in first if line.startswith("wait: ")] == [
        "wait: http://10.0.0.1:8000/health", "wait: http://10.0.0.4:8002/health"]  # fmt: skip
    trainer = _step(first, "trainer")
    assert _after(trainer, "--num_machines") == "2" and _after(trainer, "--num_processes") == "16"
    assert trainer[-2:] == ["user_model.kind=endpoint", "user_model.base_url=http://10.0.0.4:8002"]
    assert [line for line in first if line.startswith("notify: ")] == [
        "notify: http://10.0.0.1:8001/done", "notify: http://10.0.0.4:8003/done"]  # fmt: skip
    assert "node 3 serves the simulated user's model" in first[1]


def test_node_entry_user_model_node_needs_three_nodes(cli):
    env = {
        "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2", "SKYPILOT_NUM_NODES": "2",
        "SKYPILOT_NUM_GPUS_PER_NODE": "8", **MULTI_ENV, "KIT_USER_MODEL_NODE": "1",
    }  # fmt: skip
    done = cli("sky", "node-entry", "--print-only", env=env)
    assert done.returncode != 0 and "KIT_USER_MODEL_NODE=1 needs 3 nodes or more" in done.stderr


def test_node_entry_single_node_splits_the_gpus(cli):
    lines = _entry(cli, 0, 1, 8, KIT_RECIPE="qwen3_4b_8gpu", KIT_SERVER_GPUS="4", WANDB_API_KEY="set")
    server, trainer = _step(lines, "server"), _step(lines, "trainer")
    assert server[0] == "CUDA_VISIBLE_DEVICES=0,1,2,3" and "serve.data_parallel_size=4" in server
    assert trainer[0] == "CUDA_VISIBLE_DEVICES=4,5,6,7"
    assert _after(trainer, "--num_processes") == "4" and _after(trainer, "--num_machines") == "1"
    assert "generation.server_url=http://127.0.0.1:8000" in trainer
    assert "grpo.report_to=wandb" in trainer  # WANDB_API_KEY given through secrets
    assert _step(lines, "wait") == "http://127.0.0.1:8000/health" and "stop: server" in lines


def test_node_entry_colocate_uses_every_gpu_for_the_trainer(cli):
    lines = _entry(
        cli, 0, 1, 8, "--server-gpus", "0", "--accelerate-config", "zero3", KIT_RECIPE="qwen3_4b_8gpu",
        KIT_OVERRIDES="generation.mode=colocate",
    )  # fmt: skip
    trainer = _step(lines, "trainer")
    assert _step(lines, "server") is None
    assert _after(trainer, "--num_processes") == "8" and trainer[-1] == "generation.mode=colocate"
    assert not any(arg.startswith("generation.server_url") for arg in trainer)
    assert _after(trainer, "--config_file").endswith("kit/accelerate/zero3.yaml")


@pytest.mark.parametrize(
    ("args", "envs", "message"),
    [
        (("--server-gpus", "0"), {"KIT_RECIPE": "qwen3_4b_8gpu"},
         "has generation.mode=server, but KIT_SERVER_GPUS=0"),
        ((), {"KIT_RECIPE": "single_gpu", "KIT_OVERRIDES": "generation.mode=colocate",
              "KIT_SERVER_GPUS": "4"},
         "has generation.mode=colocate, but this layout"),
        (("--server-gpus", "0", "--accelerate-config", "zero3"),
         {"KIT_RECIPE": "qwen3_4b_8gpu", "KIT_OVERRIDES": "generation.mode=transformers"}, "under ZeRO-3"),
    ],
    ids=["server-recipe-no-server", "colocate-recipe-with-server", "sharded-transformers"],
)  # fmt: skip
def test_node_entry_refuses_a_recipe_that_does_not_fit_the_layout(cli, args, envs, message):
    env = {"SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": "10.0.0.1", "SKYPILOT_NUM_NODES": "1",
           "SKYPILOT_NUM_GPUS_PER_NODE": "8", **envs}  # fmt: skip
    done = cli("sky", "node-entry", "--print-only", *args, env=env)
    assert done.returncode != 0 and message in done.stderr, done.stdout + done.stderr


def test_node_entry_rejects_inconsistent_skypilot_env(cli):
    env = {"SKYPILOT_NODE_RANK": "3", "SKYPILOT_NODE_IPS": IPS, "SKYPILOT_NUM_NODES": "3",
           "SKYPILOT_NUM_GPUS_PER_NODE": "8", "KIT_RECIPE": "cpu_demo"}  # fmt: skip
    done = cli("sky", "node-entry", "--print-only", env=env)
    assert done.returncode == 2 and "SKYPILOT_NODE_RANK is 3, outside 0..2" in done.stderr


def test_layout_arithmetic():
    assert plan_layout(1, 8, 2) == Layout(1, 8, 2, 2, 1, 6)
    assert plan_layout(3, 8, 0, tensor_parallel=2) == Layout(3, 8, 8, 4, 2, 16)
    assert plan_layout(1, 8, 0).colocate


def _http_server(folder: Path, port: int) -> Command:
    (folder / "health").write_text("ok")
    return Command("server", [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                              "--directory", str(folder)])  # fmt: skip


def test_run_plan_orchestrates_real_processes(tmp_path):
    """The rank-0 / rank-1 hand-off with stand-in processes: serve, wait, train, notify, stop."""
    from kit.net import free_port

    port = free_port(span=2)
    layout = Layout(2, 1, 1, 1, 1, 1)
    rank0 = NodePlan(["rank 0"], layout, server=_http_server(tmp_path, port), control_port=port + 1)
    results: dict[str, int] = {}
    serving = threading.Thread(target=lambda: results.update(rank0=run_plan(rank0, 60)))
    serving.start()
    marker = tmp_path / "trained"
    trainer = Command("trainer", [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('1')"])
    rank1 = NodePlan(["rank 1"], layout, wait_servers=[f"http://127.0.0.1:{port}"], trainer=trainer,
                     notify_urls=[f"http://127.0.0.1:{port + 1}/done"])  # fmt: skip
    assert run_plan(rank1, 60) == 0
    serving.join(timeout=60)
    assert marker.exists() and results == {"rank0": 0}


# ---------------------------------------------------------------- kit sky launch-command


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "sky launch -c gym-grpo-single-node sky/grpo-single-node.yaml"),
        (["--cloud", "aws"], "sky launch -c gym-grpo-single-node --infra aws sky/grpo-single-node.yaml"),
        (["--infra", "k8s", "--cluster", "grpo"], "sky launch -c grpo --infra k8s sky/grpo-single-node.yaml"),
        (
            ["--infra", "ssh/lab-pool"],
            "sky launch -c gym-grpo-single-node --infra ssh/lab-pool sky/grpo-single-node.yaml",
        ),
    ],
    ids=["default", "cloud", "k8s", "ssh"],
)
def test_launch_command_lines(sky_python, args, expected):
    done = kit(
        "sky",
        "launch-command",
        "--yaml",
        "sky/grpo-single-node.yaml",
        *args,
        "--env",
        "KIT_OVERRIDES=grpo.max_steps=5",
    )
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line == f"{expected} --secret WANDB_API_KEY --secret HF_TOKEN --env KIT_OVERRIDES=grpo.max_steps=5"
    # SkyPilot 0.14's own CLI accepts exactly these flags (parsed, not run)
    check = (
        "import sys\nfrom sky.client.cli import command\n"
        "ctx = command.launch.make_context('launch', sys.argv[1:])\n"
        "print(ctx.params['secret'], ctx.params['entrypoint'], ctx.params['infra'])\n"
    )
    parsed = subprocess.run(
        [sky_python, "-c", check, *shlex.split(line)[2:]], capture_output=True, text=True, cwd=PROJECT_ROOT,
        env={**os.environ, "WANDB_API_KEY": "w", "HF_TOKEN": "h"},
    )  # fmt: skip
    assert parsed.returncode == 0, parsed.stderr
    assert "('WANDB_API_KEY', 'w'), ('HF_TOKEN', 'h')" in parsed.stdout
    assert "sky/grpo-single-node.yaml" in parsed.stdout


def test_launch_command_rejects_a_pool_without_name():
    done = kit("sky", "launch-command", "--yaml", "sky/grpo-multi-node.yaml", "--infra", "ssh")
    assert done.returncode == 2 and "ssh/POOL" in done.stderr


# ---------------------------------------------------------------- kit train --dry-run


@pytest.mark.parametrize("recipe", [p.stem for p in RECIPES])
def test_dry_run_plan_passes_for_every_shipped_recipe(recipe):
    """On a fresh clone too: a recipe's git-ignored task set is made by the dry run itself."""
    done = kit("train", "--config", recipe, "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    for label in ("model:", "generation:", "layout:", "batch:", "sequence:", "steps:"):
        assert label in done.stdout
    assert "no weights were loaded" in done.stdout


def test_dry_run_counts_the_trainer_processes(cli):
    done = cli("train", "--config", "qwen3_4b_8gpu", "--dry-run", env={"KIT_NUM_PROCESSES": "4"})
    assert "64 prompts x 16 generations = 1024 episodes per step" in done.stdout


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["rollout.tool_parser_plugin=missing/plugin.py"],
            "rollout.tool_parser_plugin 'missing/plugin.py' not found",
        ),
        (["env.train_file=data/none.jsonl"], "env.train_file 'data/none.jsonl' not found"),
        (["model.chat_template=none.jinja"], "model.chat_template 'none.jinja' is not 'kit', 'model' or"),
        (["grpo.max_completion_length=13000"], "leaves no room for the prompt in serve.max_model_len 12288"),
        (
            ["grpo.steps_per_generation=2", "grpo.generation_batch_size=64"],
            "TRL's GRPOConfig rejects the grpo",
        ),
    ],
    ids=["plugin", "data", "template", "length", "trl"],
)
def test_dry_run_reports_problems_with_exit_2(cli, overrides, message):
    done = cli("train", "--config", "nemotron_nano_9b_multinode", *overrides, "--dry-run")
    assert done.returncode == 2
    assert message in done.stdout


def test_dry_run_states_the_precision_this_machine_will_train_in(cli):
    from kit.models import mixed_precision_args

    expected = "bf16 autocast" if mixed_precision_args()["bf16"] else "float32"
    done = cli("train", "--config", "cpu_demo", "--dry-run")
    assert f"compute {expected} on this machine" in done.stdout
    forced = cli("train", "--config", "cpu_demo", "grpo.bf16=false", "--dry-run")
    assert "compute float32 on this machine" in forced.stdout


def test_dry_run_checks_the_tool_parser_name(cli):
    done = cli("train", "--config", "cpu_demo", "rollout.tool_parser=nemotron_toolcall", "--dry-run")
    assert done.returncode == 2 and "not registered" in done.stdout


# ---------------------------------------------------------------- accelerate configs


@pytest.mark.parametrize(
    ("name", "kind"), [("fsdp", "FSDP"), ("zero3", "DEEPSPEED"), ("cpu_multi", "MULTI_GPU")]
)
def test_accelerate_configs_load(name, kind):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(PROJECT_ROOT / "kit" / "accelerate" / f"{name}.yaml"))
    assert str(config.distributed_type).endswith(kind)
    if name == "fsdp":
        assert config.fsdp_config["fsdp_version"] == 2 and config.mixed_precision == "bf16"
