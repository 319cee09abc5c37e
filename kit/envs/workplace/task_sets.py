"""The generated task sets that shipped recipes read but git does not hold: each one is remade from its
seed on first use (byte-identical every time), so `kit train --config single_gpu` works on a fresh clone."""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kit.paths import PROJECT_ROOT


@dataclass(frozen=True)
class TaskSet:
    """`kit env generate` arguments for one folder of train.jsonl and validation.jsonl."""

    folder: str
    seed: int
    train: int
    validation: int
    dialogue_share: float = 0.0

    def command(self) -> str:
        """The `kit env generate` command that writes this set."""
        share = f" --dialogue-share {self.dialogue_share}" if self.dialogue_share else ""
        return (
            f"kit env generate --seed {self.seed} --train {self.train} --validation {self.validation}"
            f"{share} --out {self.folder}"
        )


TASK_SETS = (
    TaskSet("data/workplace_large", seed=1, train=3000, validation=1000),  # single_gpu: 300 medium tasks
    TaskSet("data/workplace_dialogue", seed=2, train=3000, validation=600, dialogue_share=1.0),
)


def task_set_for(source: str) -> TaskSet | None:
    """The known set whose folder holds `source` (a path as a recipe writes it), else None."""
    path = Path(source)
    if path.name not in ("train.jsonl", "validation.jsonl"):
        return None
    folder = path.parent.resolve() if path.is_absolute() else (PROJECT_ROOT / path.parent).resolve()
    for task_set in TASK_SETS:
        if folder == (PROJECT_ROOT / task_set.folder).resolve():
            return task_set
    return None


def ensure_task_set(source: str) -> None:
    """Write the known set that `source` belongs to when its files are missing; other sources are left
    for the loader to read or report."""
    from kit.envs.workplace.tasks import write_splits

    task_set = task_set_for(source)
    if task_set is None or (PROJECT_ROOT / task_set.folder / Path(source).name).is_file():
        return
    print(f"[kit] {source} is missing: making it ({task_set.command()})", file=sys.stderr, flush=True)
    folder = PROJECT_ROOT / task_set.folder
    folder.mkdir(parents=True, exist_ok=True)
    # Each trainer process of a multi-process launch may get here: each writes its own copy and moves it
    # in whole, so no process reads a half-written file (the copies are byte-identical).
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        written = write_splits(
            scratch, task_set.seed, task_set.train, task_set.validation, task_set.dialogue_share
        )
        for path in written.values():
            os.replace(path, folder / path.name)
