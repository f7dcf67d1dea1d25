"""Naming your own code from a recipe: ``"package.module:function"``."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def import_callable(spec: str, what: str, unknown_hint: str) -> Callable:
    """The callable named by ``"package.module:function"``; ValueError naming ``what`` when it is not one."""
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        raise ValueError(f"Unknown {what} {spec!r}: {unknown_hint}")
    try:
        fn = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ValueError(f"{what} {spec!r} could not be imported: {error}") from error
    if not callable(fn):
        raise ValueError(f"{what} {spec!r} is not callable.")
    return fn
