"""The audit trail of a training run's judged groups: ``output_dir/judged_groups.jsonl``, one JSON line per group.

A record holds ``step`` (the training step the group was generated for; for an evaluation, the step it followed),
``mode`` ("train" or "eval"), ``group``, ``problem``, ``completions`` (as judges take them: strings, or an agent's
messages), ``rewards``, ``advantages``, ``cluster_ids``, ``strategies`` (the judge's descriptions, or null),
``judge`` (the judge that answered), ``fallback`` and ``cause`` (null when judged) and ``seconds``. Lines are
appended and forced to disk; a line cut short by a kill is dropped; a resumed run first drops what came after its
checkpoint, so every group is in the file once."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from ..files import append_json_lines, atomic_write_text, json_lines, read_json_lines

AUDIT_FILE = "judged_groups.jsonl"


def audited(mode: str, step: int, group: int, fraction: float) -> bool:
    """Whether a group is written at ``fraction``: a fixed hash of (mode, step, group), so a resumed run picks the
    groups the interrupted one did."""
    return fraction >= 1 or zlib.crc32(f"{mode}:{step}:{group}".encode()) < fraction * 2**32


class JudgeAudit:
    """The audit file of one run (``AUDIT_FILE`` in its output_dir)."""

    def __init__(self, output_dir: str | Path) -> None:
        self.path = Path(output_dir) / AUDIT_FILE

    def append(self, records: list[dict[str, Any]]) -> None:
        if records:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_json_lines(self.path, records)

    def resume_at(self, step: int) -> int:
        """Keep the records of steps up to ``step`` (the checkpoint a run resumes from; 0: a fresh run keeps none),
        dropping a cut last line and what an interrupted run judged after that checkpoint. Returns how many were
        dropped."""
        records = read_json_lines(self.path, repair=True)
        kept = [r for r in records if step > 0 and r["step"] <= step]
        if len(kept) != len(records):
            atomic_write_text(self.path, json_lines(kept))
        return len(records) - len(kept)


def read_audit(path: str | Path) -> list[dict[str, Any]]:
    """The records of an audit file (or of ``AUDIT_FILE`` in a run's folder), in the order they were judged."""
    path = Path(path)
    return read_json_lines(path / AUDIT_FILE if path.is_dir() else path)
