"""Named pluggable pieces, as verl registers its advantage estimators: ``@REGISTRY.register("name")`` where a piece
is defined, ``REGISTRY.get(spec)`` where a recipe names it. A spec is a registered name or, for the user's own
piece, ``"package.module:function"`` (or, as TRL's scripts write it, ``"package.module.function"``). Rewards,
judges, set objectives, tasks and built-in models each keep one.

Pieces defined above the layer that looks them up (the built-in tasks register a reward, a judge and a model) are
found through the ``poly_epo_trl.plugins`` entry-point group: the first lookup imports every module an installed
package declares there (this package declares ``poly_epo_trl.tasks``; yours can declare its own)."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
PLUGIN_GROUP = "poly_epo_trl.plugins"
_plugins_loaded = False


def load_plugins() -> None:
    """Import, once, the modules installed packages declare in the ``poly_epo_trl.plugins`` entry-point group."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        entry_point.load()


def import_callable(spec: str, what: str, unknown_hint: str) -> Callable:
    """The callable named by ``"package.module:function"``, or by TRL's dotted ``"package.module.function"``,
    imported with the working directory on the path as TRL's scripts do; ValueError naming ``what`` when it is not
    one."""
    module_name, _, attribute = spec.partition(":") if ":" in spec else spec.rpartition(".")
    if not attribute or not module_name:
        raise ValueError(f"Unknown {what} {spec!r}: {unknown_hint}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ValueError(f"{what} {spec!r} could not be imported: {error}") from error
    if not callable(fn):
        raise ValueError(f"{what} {spec!r} is not callable.")
    return fn


class Registry(Generic[T]):
    """Pieces of one kind by name. ``what`` names the kind in errors; ``own`` says what the user's own piece is
    (for the hint of an unknown name), or None when user pieces are not imported by this registry; ``form`` is how
    a recipe writes one."""

    def __init__(self, what: str, own: str | None = None, form: str = "package.module:function") -> None:
        self.what, self.own, self.form = what, own, form
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated piece as ``name`` (a second, different piece of that name is refused)."""

        def decorator(piece: T) -> T:
            if self._entries.get(name, piece) is not piece:
                raise ValueError(f"{self.what} {name!r} is registered twice.")
            self._entries[name] = piece
            return piece

        return decorator

    def names(self) -> list[str]:
        load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        load_plugins()
        return name in self._entries

    def hint(self) -> str:
        """What may be named: the registered names, and the ``package.module:function`` form when it applies."""
        own = f" or '{self.form}' for {self.own}" if self.own else ""
        return f"use one of {self.names()}{own}."

    def get(self, spec: str) -> T:
        """The piece registered as ``spec``, else (with ``own``) the callable ``spec`` names; ValueError listing what
        is registered when it is neither."""
        if spec in self:
            return self._entries[spec]
        if self.own is None or (":" not in spec and "." not in spec):
            raise ValueError(f"Unknown {self.what} {spec!r}: {self.hint()}")
        return import_callable(spec, self.what, self.hint())  # type: ignore[return-value]
