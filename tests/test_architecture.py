"""The house's floors (ARCHITECTURE.md): every import between two rooms of poly_epo_trl goes to a lower floor, no two
modules import each other (lazy imports included), the top level holds only leaves, the package face and one
entry-point package, and the trainer's collaborators are handed what they use instead of reaching each other
through the trainer."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "poly_epo_trl"
FLOORS = {
    "constants": 0,
    "registry": 0,
    "recipe": 0,
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
    "methods": 3,
    "trainer": 4,
    "tasks": 4,
    "assembly": 5,
    "commands": 6,
}
LEAVES = {"constants", "registry", "recipe", "text", "files"}  # the only modules at the top, beside the face
COLLABORATORS = ["trainer/judging.py", "trainer/keeper.py", "trainer/preemption.py", "trainer/step.py", "methods"]
REACHED_THROUGH_THE_TRAINER = {"trainer", "judging", "keeper", "method", "method_state"}


def room(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """Whether ``name`` (dotted, from poly_epo_trl) is a module or package of the source tree."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(path: Path) -> set[str]:
    """The modules of poly_epo_trl a module imports, anywhere in it (lazy imports and those for annotations too):
    ``from x import y`` counts as importing ``x.y`` when that is a module, else ``x``."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + (node.module.split(".") if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("poly_epo_trl"):
                continue
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if is_module(f"{source}.{alias.name}") else source)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("poly_epo_trl")}
    return {name for name in found if is_module(name)} - {module_name(path)}


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def rooms_imported(path: Path) -> set[str]:
    return {name.split(".")[1] for name in imported_modules(path) if name.count(".") >= 1}


def test_every_room_has_a_floor():
    rooms = {room(p) for p in MODULES}
    assert rooms == set(FLOORS), rooms ^ set(FLOORS)


def test_the_top_level_holds_leaves_the_face_and_packages():
    files = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert files == LEAVES, files ^ LEAVES
    assert all(FLOORS[leaf] == 0 for leaf in LEAVES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down(path):
    here = room(path)
    for other in rooms_imported(path) - {here}:
        assert FLOORS[other] < FLOORS[here], f"{path.relative_to(PACKAGE)} ({here}) imports {other}, not below it"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_the_package_face_back(path):
    """The face (``poly_epo_trl/__init__.py``) stands above every room: no module under it imports it (a command
    reads the version from the leaf ``constants``, where the installed metadata gives it)."""
    assert "poly_epo_trl" not in imported_modules(path), f"{path.relative_to(PACKAGE)} imports the package face"


def test_no_two_modules_import_each_other():
    """No cycle among the modules, counting every import statement, wherever it is (a lazy import in a function is
    still a dependency, and so is one under ``if TYPE_CHECKING:``: a reader follows it as the interpreter would). A
    package's __init__ counts as the module of that package."""
    assert_acyclic({module_name(p): imported_modules(p) for p in PACKAGE.rglob("*.py")})


def test_no_two_benchmark_scripts_import_each_other():
    """``benchmarks/``'s scripts import each other by file name (``from real_lm import ...``): no cycle among them,
    lazy imports included."""
    scripts = {p.stem: p for p in (PACKAGE.parent / "benchmarks").glob("*.py")}
    graph = {}
    for name, path in scripts.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in scripts:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name in scripts}
        graph[name] = found - {name}
    assert_acyclic(graph)


def assert_acyclic(graph: dict[str, set[str]]) -> None:
    """AssertionError naming a cycle of ``graph`` (each node: the nodes it imports), if it has one."""
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for other in sorted(graph.get(name, ())):
            if state.get(other) == 1:
                cycle = [*trail[trail.index(other) :], other] if other in trail else [name, other]
                raise AssertionError(" -> ".join(cycle))
            if other not in state:
                visit(other, [*trail, other])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def collaborator_modules() -> list[Path]:
    paths = []
    for spec in COLLABORATORS:
        target = PACKAGE / spec
        paths += sorted(target.glob("*.py")) if target.is_dir() else [target]
    return paths


@pytest.mark.parametrize("path", collaborator_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_collaborators_are_handed_what_they_use(path):
    """The judging, the keeper, the preemption guard, a step's helpers and the methods take no trainer, and read no
    collaborator through one: no parameter named ``trainer``, no ``trainer.x``, no ``x.judging`` / ``x.keeper`` /
    ``x.method``."""
    tree = ast.parse(path.read_text())
    where = path.relative_to(PACKAGE)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            assert node.arg != "trainer", f"{where}:{node.lineno} takes the trainer"
        if isinstance(node, ast.Attribute):
            assert node.attr not in REACHED_THROUGH_THE_TRAINER, f"{where}:{node.lineno} reads .{node.attr}"
            assert not (isinstance(node.value, ast.Name) and node.value.id == "trainer"), f"{where}:{node.lineno}"


def test_entry_points_import_the_package_by_absolute_paths():
    """The modules of commands/ also run under their older names (``python -m poly_epo_trl.train``), where a
    relative import would resolve against the wrong package."""
    for path in sorted((PACKAGE / "commands").rglob("*.py")):
        if path.name == "__init__.py" and path.parent == PACKAGE / "commands":
            continue
        relative = [
            n.lineno for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom) and n.level
        ]
        assert relative == [], f"{path.relative_to(PACKAGE)} imports relatively at lines {relative}"


@pytest.mark.slow
def test_an_older_name_imported_first_still_runs_and_the_module_keeps_its_own_spec():
    """Importing ``poly_epo_trl.train`` (the old name) gives the module itself and leaves its ``__spec__`` its own;
    running the old name afterwards (``runpy``, as ``python -m`` does in a process that imported it) runs it, for a
    module and for a package (``demo``), and ``importlib.reload`` reloads the real module."""
    import subprocess
    import sys

    code = """
import importlib, runpy, sys
import poly_epo_trl.train as old, poly_epo_trl.commands.train as real, poly_epo_trl.demo
assert old is real and real.__spec__.name == "poly_epo_trl.commands.train", real.__spec__
for name in ("poly_epo_trl.train", "poly_epo_trl.demo"):
    sys.argv = [name, "--help"]
    try:
        runpy.run_module(name, run_name="__main__")
    except SystemExit as done:
        assert done.code == 0, (name, done.code)
real.main = None
assert callable(importlib.reload(real).main), "reload ran the module's code again"
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_only_shared_data_reads_the_folder_beside_the_clone():
    """A user's clone has no ../shared: every test that reads it goes through tests/helpers/shared_data.py, whose
    marker ``make test-clone`` runs without it."""
    tests = Path(__file__).resolve().parent
    readers = [
        str(path.relative_to(tests))
        for path in sorted(tests.rglob("*.py"))
        if path.name not in ("shared_data.py", Path(__file__).name) and '"shared"' in path.read_text()
    ]
    assert readers == []


@pytest.mark.slow
def test_every_benchmark_imports():
    """Each script in ``benchmarks/`` loads with everything it imports (the test helpers it borrows included),
    without running: a moved helper or module fails here, not in a benchmark run weeks later."""
    import os
    import subprocess
    import sys

    root = PACKAGE.parent
    scripts = sorted(str(p) for p in (root / "benchmarks").glob("*.py"))
    code = """
import runpy, sys
base = ["benchmarks", *sys.path]
for path in sys.argv[1:]:  # each as if alone: the path and the scripts' and helpers' modules as they were
    sys.path[:] = base
    for name, module in list(sys.modules.items()):
        if any(f"/{room}/" in (getattr(module, "__file__", None) or "") for room in ("benchmarks", "tests")):
            del sys.modules[name]
    runpy.run_path(path, run_name="benchmark")
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as a user runs them: no helpers on the path
    done = subprocess.run([sys.executable, "-c", code, *scripts], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_judges_and_the_helper_judge_server_import_without_torch_trl_or_transformers():
    """``import poly_epo_trl.judges`` (and the test's judge server, started as a process some 20 times a run) loads
    none of the training stack: the package face's promise, and seconds of CPU per process."""
    import subprocess
    import sys

    heavy = ("torch", "transformers", "trl")
    code = f"""
import sys
import poly_epo_trl.judges
sys.path.insert(0, "tests/helpers")
import judge_server
print(sorted(name for name in {heavy!r} if name in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]", f"imported with the judges: {done.stdout.strip()}"


def test_the_training_command_loads_plotting_and_statistics_only_when_it_draws_or_computes_an_interval():
    """``poly_epo_trl.train`` (started as a process hundreds of times a CI run, and by every user's launch) imports
    neither matplotlib nor scipy.stats: they load where a figure is drawn or an interval computed, about 0.4 s of
    CPU per process."""
    import subprocess
    import sys

    code = """
import sys
import poly_epo_trl.train
print(sorted(name for name in ("matplotlib", "scipy.stats") if name in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]", f"imported with the training command: {done.stdout.strip()}"


def test_the_version_is_written_once_and_read_from_the_installed_metadata():
    """setup.cfg holds the version; the package reads it from what pip installed (``constants.VERSION``)."""
    import configparser

    import poly_epo_trl

    setup = configparser.ConfigParser()
    setup.read(PACKAGE.parent / "setup.cfg")
    assert poly_epo_trl.__version__ == setup["metadata"]["version"]
    assert not any('__version__ = "' in p.read_text() for p in PACKAGE.rglob("*.py"))


def test_no_method_file_imports_another():
    """A method's file is its math and its declaration: it reads the shared rooms (``base``, ``settings``, ``floor``,
    ``papers``, ``apply``), never another method's file."""
    shared = {"base", "settings", "floor", "papers", "apply", "__init__"}
    methods = PACKAGE / "methods"
    names = {p.stem for p in methods.glob("*.py")} - shared
    for path in methods.glob("*.py"):
        if path.stem in shared:
            continue
        others = {m.rsplit(".", 1)[-1] for m in imported_modules(path) if m.startswith("poly_epo_trl.methods.")}
        assert not others & names, f"methods/{path.name} imports {sorted(others & names)}"
