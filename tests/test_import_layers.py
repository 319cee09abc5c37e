"""The rooms of `kit/` stand on each other, never beside: each imports only rooms of the layers below it.

A room is a package under `kit/` (`kit/train/`, ...); `base` is the modules directly in `kit/` (paths,
model loading, run folders, episode types, processes, ...) together with `config/`, the recipe types;
`cli` is `kit/cli.py` and `kit/__main__.py`. Imports inside functions count too: a lazy import is still
an arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import PROJECT_ROOT

KIT = PROJECT_ROOT / "kit"

LAYERS: list[set[str]] = [
    {"base"},
    {"tool_parsers"},
    {"generation"},
    {"envs"},
    {"rollout"},
    {"train"},
    {"serve", "notebook", "sky"},
    {"testing"},
    {"cli"},
]
LAYER_OF = {room: level for level, rooms in enumerate(LAYERS) for room in rooms}


def room_of_module(name: str) -> str:
    parts = name.split(".")
    if parts[0] != "kit" or len(parts) == 1:
        return "base"
    if parts[1] in ("cli", "__main__"):
        return "cli"
    if parts[1] == "config" or (KIT / f"{parts[1]}.py").is_file():
        return "base"
    return parts[1]


def room_of_file(path: Path) -> str:
    relative = path.relative_to(PROJECT_ROOT).with_suffix("")
    return room_of_module(".".join(relative.parts))


def kit_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "kit" or name.startswith("kit.")}


def test_every_room_has_a_layer() -> None:
    rooms = {room_of_file(path) for path in KIT.rglob("*.py")}
    assert rooms <= set(LAYER_OF), f"rooms without a layer in LAYERS: {rooms - set(LAYER_OF)}"


def test_no_room_imports_its_own_layer_or_one_above() -> None:
    arrows = []
    for path in sorted(KIT.rglob("*.py")):
        source = room_of_file(path)
        for name in sorted(kit_imports(path)):
            target = room_of_module(name)
            if target != source and LAYER_OF[target] >= LAYER_OF[source]:
                arrows.append(f"{path.relative_to(PROJECT_ROOT)} ({source}) imports {name} ({target})")
    assert not arrows, "imports that climb a layer or cross one:\n" + "\n".join(arrows)


def test_the_check_sees_an_arrow_back_up(tmp_path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from kit.train.job import TrainingJob\n")
    assert kit_imports(module) == {"kit.train.job"}
    assert LAYER_OF[room_of_module("kit.train.job")] > LAYER_OF[room_of_module("kit.models")]
