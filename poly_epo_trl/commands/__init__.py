"""The entry points, one module each: ``poly-epo train`` (``train``), ``eval``, ``plot``, ``judge-agreement``
(``agreement``), ``demo`` and ``agent-demo`` (``demo``), and the ``poly-epo`` command itself (``cli``). They parse,
hand the recipe to ``assembly``, and run; each imports the package by absolute paths, so that it also runs under
its older names.

Those older names stay: ``poly_epo_trl.train`` is ``poly_epo_trl.commands.train`` (the same module object), and
``python -m poly_epo_trl.train`` runs it, as do ``eval``, ``plot``, ``agreement``, ``cli`` and ``demo``
(``MovedEntryPoints``, installed by the package on import)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import CodeType, ModuleType
from typing import Any

PACKAGE = __name__.rpartition(".")[0]
MOVED = ("train", "eval", "plot", "agreement", "cli", "demo")


class MovedEntryPoints(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``poly_epo_trl.<name>[.<sub>]`` for a name in ``MOVED`` as ``poly_epo_trl.commands.<name>[.<sub>]``: importing
    the old name gives the module itself, and ``python -m`` the old name runs its code."""

    @staticmethod
    def target(fullname: str) -> str | None:
        head, _, rest = fullname.removeprefix(f"{PACKAGE}.").partition(".")
        if not fullname.startswith(f"{PACKAGE}.") or head not in MOVED:
            return None
        return f"{__name__}.{head}" + (f".{rest}" if rest else "")

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        moved = self.target(fullname)
        real = importlib.util.find_spec(moved) if moved else None
        if real is None:
            return None
        spec = importlib.util.spec_from_loader(fullname, self, origin=real.origin)
        spec.submodule_search_locations = real.submodule_search_locations
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target(spec.name))
        spec.loader_state = self.source_spec(module.__spec__.name)  # importlib sets the alias's spec on it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module ran under its own name). Its ``__spec__`` is its own again (name, origin,
        ``importlib.reload`` finds it anew), with this finder as loader, so ``runpy`` of either name finds code."""
        real = module.__spec__.loader_state
        own = importlib.util.spec_from_loader(real.name, self, origin=real.origin, is_package=real.parent == real.name)
        own.loader_state, own.submodule_search_locations = real, real.submodule_search_locations
        own.has_location = real.has_location
        module.__spec__ = own

    def source_spec(self, name: str) -> importlib.machinery.ModuleSpec:
        """The real module's spec as the path finder gives it (its source loader)."""
        spec = importlib.util.find_spec(name)
        return spec.loader_state if spec.loader is self else spec

    def get_code(self, fullname: str) -> CodeType | None:
        real = self.target(fullname) or fullname
        return self.source_spec(real).loader.get_code(real)


def install() -> None:
    """Put ``MovedEntryPoints`` on the import path, once."""
    if not any(isinstance(finder, MovedEntryPoints) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedEntryPoints())  # before the path finder, which would load a second copy
