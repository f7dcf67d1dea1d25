"""Data that CI keeps in ``../shared`` beside the clone and a user's clone does not have.

``POLY_EPO_SHARED`` points elsewhere; an empty folder plays a clone with nothing beside it (``make test-clone``).
Tests that read it carry the ``shared_data`` marker: without the data they skip with the reason, or fall back to the
repository's own copy, and that fallback is tested too.
"""

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("POLY_EPO_SHARED") or Path(__file__).resolve().parents[3] / "shared")
LEETCODE = SHARED / "data" / "LeetCodeDataset-v0.2.0-train.jsonl.gz"
needs_leetcode = pytest.mark.skipif(
    not LEETCODE.exists(), reason=f"needs the LeetCodeDataset sample at {LEETCODE} (CI's ../shared/data)"
)
