"""Files written so that a crash or a full disk never leaves half of one: write beside, flush to disk, replace; or
append JSON lines, flushed to disk, where a reader drops a last line a kill cut short."""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
LOW_SPACE = 64 * 2**20


def atomic_write_text(path: str | Path, text: str) -> None:
    """``path`` holds ``text`` in full, or (after a crash or an OSError such as a full disk) what it held before."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with partial.open("w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def json_lines(records: Iterable[dict[str, Any]]) -> str:
    """One JSON line per record."""
    return "".join(json.dumps(record) + "\n" for record in records)


def append_json_lines(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Append one JSON line per record and force them to disk before returning."""
    lines = json_lines(records)
    with Path(path).open("a") as handle:
        handle.write(lines)
        handle.flush()
        os.fsync(handle.fileno())


def read_json_lines(path: str | Path, repair: bool = False) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (none when it is missing). A last line cut short by a kill is skipped, and
    with ``repair`` cut from the file, so that the next append starts on a line of its own."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    if repair and len(complete) != len(data):
        with path.open("r+b") as handle:
            handle.truncate(len(complete))
    return [json.loads(line) for line in complete.decode().splitlines() if line.strip()]


def is_disk_full(error: BaseException, folder: str | Path) -> bool:
    """Whether writing into ``folder`` failed for want of space: the error (or one it was raised from) says "no
    space left" or "quota exceeded", or the device has less than ``LOW_SPACE`` bytes free (torch's writer reports a
    full disk as "unexpected pos ..." only)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in NO_SPACE:
            return True
        if "No space left on device" in str(error):
            return True
        error = error.__cause__ or error.__context__
    existing = next((p for p in [Path(folder), *Path(folder).parents] if p.exists()), Path("/"))
    return shutil.disk_usage(existing).free < LOW_SPACE
