"""`kit sky validate`: SkyPilot's own schema check (offline, in the launcher env) plus the kit's checks.

SkyPilot: `sky.Task.from_yaml` rejects unknown or misspelt fields and names the closest valid one
("Instead of 'acelerators', did you mean 'accelerators'?"). `sky launch --dryrun` is no use offline: it
fetches the clouds' catalogs.

The kit: the recipe in KIT_RECIPE exists and loads with KIT_OVERRIDES and the node entry's own overrides;
its dry-run plan has no problem for the trainer processes the layout gives; the GPUs split between
server and trainers (KIT_SERVER_GPUS, serve.tensor_parallel_size, num_nodes); `resources.ports` opens
neither the vLLM server's port nor its control port to the internet; WANDB_API_KEY and HF_TOKEN come
through `secrets:` with no inline value; `setup:` installs environment.yml; `run:` is the node entry.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kit.config.tree import DEFAULT_SERVER_PORT
from kit.sky.sky_venv import PROJECT_ROOT, LauncherNotFound, ParsedTask, parse_task_yamls

if TYPE_CHECKING:
    from kit.sky.node_entry import EntrySettings

REQUIRED_SECRETS = ("WANDB_API_KEY", "HF_TOKEN")
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


@dataclass
class Report:
    """The verdict on one task YAML."""

    path: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sky_seconds: float = 0.0
    kit_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors


def _gpus_per_node(task: ParsedTask, report: Report) -> int | None:
    counts = set()
    names = []
    for resources in task.resources:
        for name, count in resources["accelerators"].items():
            counts.add(count)
            names.append(f"{name}:{count:g}" if isinstance(count, float) else f"{name}:{count}")
    if not counts:
        report.errors.append("resources.accelerators is not set: the node entry needs GPUs on every node.")
        return None
    if len(counts) > 1:
        report.errors.append(
            f"The accelerator candidates {names} differ in count; the GPU split needs one count."
        )
        return None
    count = counts.pop()
    if count != int(count) or count < 1:
        report.errors.append(f"Accelerator count {count} is not a whole number of GPUs.")
        return None
    report.notes.append(f"{task.num_nodes} node(s) x {int(count)} GPUs ({' | '.join(names)})")
    return int(count)


def _check_secrets(task: ParsedTask, report: Report) -> None:
    for name in REQUIRED_SECRETS:
        if name not in task.secrets:
            report.errors.append(
                f"secrets: must declare {name} (null; passed with `--secret {name}` at launch)."
            )
        elif task.secrets[name] is not None:
            report.errors.append(
                f"secrets.{name} has an inline value: leave it null and pass `--secret {name}`."
            )
        if name in task.envs:
            report.errors.append(
                f"{name} is in envs: move it to secrets: (null) so its value is never in the YAML."
            )
    for name, value in task.envs.items():
        if _SECRET_NAME.search(name) and value and name not in REQUIRED_SECRETS:
            report.errors.append(
                f"envs.{name} looks like a secret with an inline value; declare it under secrets:."
            )


def _check_task_text(task: ParsedTask, report: Report) -> None:
    if "kit sky node-entry" not in task.run:
        report.errors.append("run: does not call `python -m kit sky node-entry`, which maps nodes to roles.")
    if "environment.yml" not in task.setup:
        report.errors.append("setup: does not install the GPU profile (environment.yml at the repo root).")
    elif not (PROJECT_ROOT / "environment.yml").is_file():
        report.warnings.append(f"setup: installs environment.yml, which is not at {PROJECT_ROOT} yet.")
    else:
        import yaml

        env_name = (yaml.safe_load((PROJECT_ROOT / "environment.yml").read_text()) or {}).get("name")
        for name in re.findall(r"conda activate (\S+)", task.setup + task.run):
            if env_name and name != env_name:
                report.errors.append(f"`conda activate {name}`: environment.yml creates '{env_name}'.")
    if task.workdir is None:
        report.errors.append("workdir: is not set; the nodes need the repo (workdir: .) to run the kit.")


def _opens(ports: list[str], port: int) -> bool:
    """Whether SkyPilot port specs ("8000", "8000-8010") include `port`."""
    for spec in ports:
        low, _, high = spec.partition("-")
        if int(low) <= port <= int(high or low):
            return True
    return False


def _check_ports(task: ParsedTask, settings: EntrySettings, report: Report) -> None:
    """`ports:` makes SkyPilot open a port to the internet; the server's endpoints must stay private."""
    guarded = {
        DEFAULT_SERVER_PORT: "the kit's default vLLM server port",
        settings.port: "the vLLM server's port, KIT_SERVER_PORT",
        settings.control_port: "the node entry's control port",
        **(
            {
                settings.user_model_port: "the user model's server port, KIT_USER_MODEL_PORT",
                settings.user_model_port + 1: "the user model node's control port",
            }
            if settings.user_model_node
            else {}
        ),
    }
    opened = [spec for resources in task.resources for spec in resources["ports"]]
    for port, what in sorted(guarded.items()):
        if _opens(opened, port):
            report.errors.append(
                f"{task.path}: resources.ports opens port {port} ({what}) to the internet, where anyone "
                "could overwrite the served weights or stop the server. Remove it from `ports:`: the "
                "nodes of one cluster reach each other on the private network without it; to reach the "
                "server yourself, forward it over SSH (`ssh -N -L PORT:SERVER_ADDRESS:PORT CLUSTER`)."
            )


def _check_kit(task: ParsedTask, report: Report) -> None:
    """The recipe, the layout and the plan, as the node entry would see them."""
    from kit.config.tree import ConfigError, load_config
    from kit.sky.layout import NodeEntryError, plan_layout, resolve_accelerate_config, trainer_config
    from kit.sky.node_entry import EntrySettings
    from kit.train.preflight import make_plan

    gpus = _gpus_per_node(task, report)
    try:
        settings = EntrySettings.from_env(task.envs)
        accelerate_config = resolve_accelerate_config(settings.accelerate_config)
    except NodeEntryError as error:
        report.errors.append(str(error))
        return
    _check_ports(task, settings, report)
    common = [
        *([f"run.output_dir={settings.output_dir}"] if settings.output_dir else []),
        *settings.overrides,
    ]
    try:
        cfg = load_config(settings.recipe, common)
    except ConfigError as error:
        report.errors.append(f"KIT_RECIPE={settings.recipe}: {error}")
        return
    if gpus is None:
        return
    try:
        layout = plan_layout(
            task.num_nodes,
            gpus,
            settings.server_gpus,
            cfg.serve.tensor_parallel_size,
            settings.user_model_node,
        )
    except NodeEntryError as error:
        report.errors.append(str(error))
        return
    report.notes.append(layout.describe())
    report.notes.append(
        f"trainer: accelerate launch --config_file {accelerate_config.relative_to(PROJECT_ROOT)}"
    )
    if not layout.colocate:
        if settings.port != cfg.serve.port and f"serve.port={settings.port}" not in common:
            report.notes.append(f"server port {settings.port} (KIT_SERVER_PORT) overrides serve.port")
        if cfg.serve.data_parallel_size != layout.data_parallel:
            report.warnings.append(
                f"The recipe's serve.data_parallel_size is {cfg.serve.data_parallel_size}; the node entry "
                f"runs {layout.data_parallel} ({layout.server_gpus} GPUs / tensor parallel "
                f"{cfg.serve.tensor_parallel_size})."
            )
    server_url = None if layout.colocate else f"http://node0:{settings.port}"
    try:
        cfg, _ = trainer_config(settings, layout, common, server_url, accelerate_config)
    except NodeEntryError as error:
        report.errors.append(str(error))
        return
    plan = make_plan(cfg, num_processes=layout.trainer_processes, on_gpu=not settings.cpu)
    report.errors += [f"recipe {settings.recipe}: {e}" for e in plan.errors]
    report.warnings += [f"recipe {settings.recipe}: {w}" for w in plan.warnings]
    for label, text in plan.items:
        if label in ("model", "batch", "sequence", "steps"):
            report.notes.append(f"{label}: {text}")
    if settings.output_dir and not any(
        settings.output_dir.startswith(m.rstrip("/") + "/") for m in task.mounts
    ):
        report.warnings.append(
            f"KIT_OUTPUT_DIR={settings.output_dir} is not under a file_mounts/volumes path: checkpoints stay "
            "on the nodes and go when the cluster does."
        )


def validate_files(paths: list[str | Path]) -> tuple[list[Report], str]:
    """Validate task YAMLs; returns the reports and a one-line timing summary."""
    started = time.perf_counter()
    result = parse_task_yamls(paths)
    sky_wall = time.perf_counter() - started
    reports = []
    for task, path in zip(result.tasks, paths, strict=True):
        report = Report(str(path), sky_seconds=task.seconds)
        if not task.ok:
            report.errors.append(f"SkyPilot: {task.error}")
        else:
            kit_started = time.perf_counter()
            _check_secrets(task, report)
            _check_task_text(task, report)
            _check_kit(task, report)
            report.kit_seconds = time.perf_counter() - kit_started
        reports.append(report)
    parse_total = sum(t.seconds for t in result.tasks)
    timing = (
        f"SkyPilot {result.sky_version} via {result.python}: import {result.import_seconds:.2f} s, "
        f"sky.Task.from_yaml {parse_total:.3f} s for {len(paths)} file(s), "
        f"launcher subprocess {sky_wall:.2f} s"
    )
    return reports, timing


def _shown(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def default_files() -> list[Path]:
    """Every task YAML shipped in the repo's sky/ folder."""
    return sorted((PROJECT_ROOT / "sky").glob("*.yaml"))


def validate_cli(files: list[str]) -> int:
    """`kit sky validate [FILES]`: 0 when every file is valid, 1 when one is not, 2 when nothing could be
    checked (no files, no launcher environment)."""
    paths: list[str | Path] = list(files) or list(default_files())
    if not paths:
        print("kit sky validate: no task YAMLs given and none in sky/.", file=sys.stderr)
        return 2
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        print(f"kit sky validate: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        reports, timing = validate_files(paths)
    except LauncherNotFound as error:
        print(f"kit sky validate: {error}", file=sys.stderr)
        return 2
    for report in reports:
        verdict = "OK" if report.ok else "INVALID"
        print(
            f"{_shown(report.path)}: {verdict} "
            f"(schema {report.sky_seconds:.3f} s, kit checks {report.kit_seconds:.1f} s)"
        )
        for note in report.notes:
            print(f"  {note}")
        for warning in report.warnings:
            print(f"  warning: {warning}")
        for error in report.errors:
            print(f"  error: {error}")
    print(timing)
    return 0 if all(r.ok for r in reports) else 1
