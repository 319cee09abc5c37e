"""The repository root, and the one rule for relative paths.

A relative path in a recipe (data files, databases, a model folder, a chat template, a tool-parser
plugin) is looked up next to the recipe file first (`kit.config.tree` makes it absolute when it is there),
then in the current folder, then under the repository root: the shipped recipes name paths from the
root, as SkyPilot's `workdir: .` and the node entry see them, and notebooks run from notebooks/.
Paths given as command-line overrides start at the second step.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def resolve_path(path: str) -> str:
    """`path` as given when it exists or is absolute, else under the repository root when it exists
    there, else unchanged (a hub id, or a missing file the caller reports)."""
    if Path(path).exists() or Path(path).is_absolute():
        return path
    in_project = PROJECT_ROOT / path
    return str(in_project) if in_project.exists() else path


@contextlib.contextmanager
def at_project_root() -> Iterator[Path]:
    """Run a block from the repository root (as `python -m kit sky ...` and SkyPilot's `run:` do)."""
    previous = Path.cwd()
    os.chdir(PROJECT_ROOT)
    try:
        yield PROJECT_ROOT
    finally:
        os.chdir(previous)
