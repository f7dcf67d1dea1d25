"""What several test modules build the same way (a reference training run, a tiny model) built once per test session
and shared by every pytest-xdist worker: the first worker to ask builds it under a file lock, the others wait for the
lock and read it (the pattern pytest-xdist documents for session fixtures). A build that failed is built again by
the next worker to ask, not read half-written."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(folder)`` run once per session for ``name``; the folder, to be read, not written."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, which every worker's own folder is in
    folder, done = root / f"built-{name}", root / f"built-{name}.done"
    with FileLock(str(root / f"built-{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
