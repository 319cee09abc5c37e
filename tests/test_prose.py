"""Prose that cannot drift: every dotted `kit.…` name and every `kit <command>` in the README, the docs and
the notebooks exists in the code."""

from __future__ import annotations

import argparse
import importlib
import json
import re
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from kit.cli import build_parser

PROSE = [
    PROJECT_ROOT / "README.md",
    *sorted((PROJECT_ROOT / "docs").glob("*.md")),
    *sorted((PROJECT_ROOT / "notebooks").glob("*.ipynb")),
]
DOTTED = re.compile(r"(?<![\w/.-])kit(?:\.[A-Za-z_]\w*)+")
FILE_SUFFIXES = (".py", ".yaml", ".jinja", ".md", ".json", ".jsonl", ".ipynb")
INLINE_COMMAND = re.compile(r"`kit ([a-z][a-z-]*)")
# In code: `kit` opening a line (after `$ ` or a notebook's `!`).
CODE_COMMAND = re.compile(r"^[ \t]*(?:\$ |!)?kit ([a-z][a-z-]*)", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def text_of(path: Path) -> str:
    """A markdown file's text; a notebook's cell sources (not its JSON, where every line opens a string)."""
    if path.suffix != ".ipynb":
        return path.read_text()
    return "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])


def code_of(path: Path) -> str:
    """The fenced blocks of a markdown file; a notebook's code cells and the fenced blocks of the rest."""
    if path.suffix != ".ipynb":
        return "\n".join(FENCE.findall(path.read_text()))
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return "\n".join(code + [block for c in cells for block in FENCE.findall("".join(c["source"]))])


def commands_in(path: Path) -> set[str]:
    inline = {m.group(1) for m in INLINE_COMMAND.finditer(text_of(path))}
    return inline | {m.group(1) for m in CODE_COMMAND.finditer(code_of(path))}


def resolves(name: str) -> bool:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def command_exists(word: str) -> bool:
    """Whether `kit WORD` is one of the CLI's commands."""
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return any(word in action.choices for action in actions)


@pytest.mark.parametrize("path", PROSE, ids=lambda p: p.name)
def test_every_dotted_kit_name_exists(path: Path) -> None:
    names = {m.group(0).rstrip(".") for m in DOTTED.finditer(text_of(path))}
    missing = sorted(n for n in names if not n.endswith(FILE_SUFFIXES) and not resolves(n))
    assert not missing, f"{path.name} names what the code does not have: {missing}"


@pytest.mark.parametrize("path", PROSE, ids=lambda p: p.name)
def test_every_kit_command_exists(path: Path) -> None:
    missing = sorted(c for c in commands_in(path) if not command_exists(c))
    assert not missing, f"{path.name} shows `kit` commands that do not exist: {missing}"


def test_the_checks_catch_drift(tmp_path) -> None:
    assert resolves("kit.models.load_policy") and not resolves("kit.train.models.load_policy")
    assert command_exists("train") and not command_exists("fit")
    sample = tmp_path / "sample.md"
    sample.write_text("Run `kit serve --config x`.\nThe kit\nkit loads rows.\n```bash\n$ kit eval\n```\n")
    assert commands_in(sample) == {"serve", "eval"}
