"""The code reward's sandbox needs bubblewrap, which only root can install (``make sandbox-tools``): without it, a
user's tests that run the sandbox skip, saying so; as root (CI) they run, and a missing bwrap fails them."""

import os
import shutil

import pytest

MISSING = shutil.which("bwrap") is None and os.geteuid() != 0
REASON = (
    "the code reward's sandbox needs bubblewrap, which is not installed: sudo apt-get install bubblewrap (or "
    "`make sandbox-tools` as root)"
)
needs_bwrap = pytest.mark.skipif(MISSING, reason=REASON)


def skip_without_bwrap() -> None:
    """Inside a test or fixture: skip, with the reason, where ``needs_bwrap`` would."""
    if MISSING:
        pytest.skip(REASON)
