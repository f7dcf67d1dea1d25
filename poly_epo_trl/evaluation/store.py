"""Where an evaluation keeps its samples and scores: append-only JSON lines, so a killed run resumes and nothing is
resampled or rescored."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..files import append_json_lines, atomic_write_text, read_json_lines


class SampleStore:
    """``settings.json`` (what produced the samples), ``samples.jsonl`` and ``scores.jsonl`` (one line per problem,
    keyed by its dataset ``index``). Opening a store with other settings is refused unless ``overwrite``."""

    def __init__(self, directory: Path, settings: dict[str, Any], overwrite: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "settings.json"
        if path.exists() and not overwrite:
            saved = json.loads(path.read_text())
            changed = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
            if changed:
                details = ", ".join(f"{k}: {saved.get(k)!r} -> {settings.get(k)!r}" for k in changed)
                raise ValueError(
                    f"{self.directory} holds samples drawn with other settings ({details}). Use another output_dir, "
                    "or set overwrite to start over."
                )
        if overwrite:
            for name in ("samples.jsonl", "scores.jsonl"):
                (self.directory / name).unlink(missing_ok=True)
        atomic_write_text(path, json.dumps(settings, indent=2, sort_keys=True))

    def read(self, name: str) -> dict[int, dict[str, Any]]:
        """Records by index; a last line cut short by a kill is dropped from the file."""
        return by_index(read_json_lines(self.directory / f"{name}.jsonl", repair=True))

    def append(self, name: str, records: Iterable[dict[str, Any]]) -> None:
        """Write records and force them to disk before returning."""
        append_json_lines(self.directory / f"{name}.jsonl", records)


def by_index(records: Iterable[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {record["index"]: record for record in records}


def read_records(path: Path) -> dict[int, dict[str, Any]]:
    """A store's JSON-lines file by ``index``, read only (``SampleStore.read`` also truncates a cut last line)."""
    return by_index(read_json_lines(path))
