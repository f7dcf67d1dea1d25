"""The house's floors (ARCHITECTURE.md): every import between two rooms of poly_epo_trl goes to a lower floor, so
there are no cycles, the loader and the tasks sit below the trainer, and the demo and entry points are on top."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "poly_epo_trl"
FLOORS = {
    "constants": 0,
    "registry": 0,
    "checks": 0,
    "text": 0,
    "files": 0,
    "vllm_cpu": 0,
    "models": 1,
    "advantages": 1,
    "data": 2,
    "environments": 2,
    "rewards": 2,
    "judges": 2,
    "evaluation": 3,
    "trainer": 4,
    "tasks": 4,
    "assembly": 5,
    "train": 6,
    "eval": 6,
    "plot": 6,
    "demo": 7,
    "agreement": 7,
    "cli": 7,
}


def room(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_rooms(path: Path) -> set[str]:
    """The rooms a module imports from (absolute ``poly_epo_trl.x`` or relative), anywhere in the module."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    rooms = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                parts = base + (node.module.split(".") if node.module else [])
                if len(parts) == 1:  # `from .. import x`: the rooms are the names
                    rooms |= {alias.name for alias in node.names}
                    continue
            elif node.module and node.module.startswith("poly_epo_trl."):
                parts = node.module.split(".")
            else:
                continue
            rooms.add(parts[1])
        elif isinstance(node, ast.Import):
            rooms |= {a.name.split(".")[1] for a in node.names if a.name.startswith("poly_epo_trl.")}
    return rooms


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def test_every_room_has_a_floor():
    rooms = {room(p) for p in MODULES}
    assert rooms == set(FLOORS), rooms ^ set(FLOORS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down(path):
    here = room(path)
    for other in imported_rooms(path) - {here}:
        assert FLOORS[other] < FLOORS[here], f"{path.relative_to(PACKAGE)} ({here}) imports {other}, not below it"


def test_only_shared_data_reads_the_folder_beside_the_clone():
    """A user's clone has no ../shared: every test that reads it goes through tests/shared_data.py, whose marker
    ``make test-clone`` runs without it."""
    tests = Path(__file__).resolve().parent
    readers = [
        path.name
        for path in sorted(tests.glob("*.py"))
        if path.name not in ("shared_data.py", Path(__file__).name) and '"shared"' in path.read_text()
    ]
    assert readers == []
