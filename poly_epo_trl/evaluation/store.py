"""Where an evaluation keeps its samples and scores: append-only JSON lines, so a killed run resumes and nothing is
resampled or rescored."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..files import atomic_write_text


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
        path = self.directory / f"{name}.jsonl"
        if not path.exists():
            return {}
        data = path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):
            with path.open("r+b") as handle:
                handle.truncate(len(complete))
        return parse_records(complete)

    def append(self, name: str, records: Iterable[dict[str, Any]]) -> None:
        """Write records and force them to disk before returning."""
        lines = "".join(json.dumps(record) + "\n" for record in records)
        with (self.directory / f"{name}.jsonl").open("a") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())


def parse_records(data: bytes) -> dict[int, dict[str, Any]]:
    """The complete lines of a store's JSON-lines ``data``, by ``index`` (a cut last line is skipped)."""
    complete = data[: data.rfind(b"\n") + 1].decode()
    records = (json.loads(line) for line in complete.splitlines() if line.strip())
    return {record["index"]: record for record in records}


def read_records(path: Path) -> dict[int, dict[str, Any]]:
    """A store's JSON-lines file by ``index``, read only (``SampleStore.read`` also truncates a cut last line)."""
    return parse_records(Path(path).read_bytes())
