"""Run by the SkyPilot launcher interpreter (not the kit's): parse task YAMLs, print one JSON line.

    .venv-sky/bin/python kit/sky/_sky_probe.py sky/a.yaml sky/b.yaml

Uses only SkyPilot and PyYAML (which SkyPilot depends on), so it runs in an environment without the kit.
`sky.Task.from_yaml` checks the schema offline and names misspelt fields.
"""

import json
import sys
import time


def _task_info(path):
    import yaml

    import sky

    started = time.perf_counter()
    try:
        task = sky.Task.from_yaml(path)
    except Exception as error:  # SkyPilot's own message is the point
        message = str(error).strip() or type(error).__name__
        return {
            "path": path,
            "ok": False,
            "error": f"{type(error).__name__}: {message}",
            "seconds": time.perf_counter() - started,
        }
    seconds = time.perf_counter() - started
    with open(path) as handle:
        raw = yaml.safe_load(handle) or {}
    raw_secrets = raw.get("secrets") or {}
    if isinstance(raw_secrets, list):
        raw_secrets = {str(name): None for name in raw_secrets}
    resources = []
    for res in task.resources:
        accelerators = res.accelerators or {}
        resources.append(
            {
                "accelerators": {str(k): v for k, v in accelerators.items()},
                "ports": [str(p) for p in (res.ports or [])],
            }
        )
    mounts = sorted(
        {*(task.file_mounts or {}), *(task.storage_mounts or {}), *(getattr(task, "volumes", None) or {})}
    )
    return {
        "path": path,
        "ok": True,
        "seconds": seconds,
        "name": task.name,
        "num_nodes": task.num_nodes,
        "envs": {k: ("" if v is None else str(v)) for k, v in (task.envs or {}).items()},
        "secrets": {str(k): (None if v is None else "<inline value>") for k, v in raw_secrets.items()},
        "resources": resources,
        "setup": task.setup or "",
        "run": task.run if isinstance(task.run, str) else "",
        "workdir": task.workdir
        if isinstance(task.workdir, str)
        else (None if task.workdir is None else "<git>"),
        "mounts": [str(m) for m in mounts],
    }


def main(paths):
    started = time.perf_counter()
    import sky

    import_seconds = time.perf_counter() - started
    tasks = [_task_info(path) for path in paths]
    print(json.dumps({"sky_version": sky.__version__, "import_seconds": import_seconds, "tasks": tasks}))


if __name__ == "__main__":
    main(sys.argv[1:])
