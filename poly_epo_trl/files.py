"""Files written so that a crash or a full disk never leaves half of one: write beside, flush to disk, replace."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

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
