"""A disk cache of judge answers: the same (template, model, prompt, completions) is judged once, across runs and
processes. SQLite in WAL mode; every process and thread opens its own connection, so it is safe to share."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path


def cache_key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


class JudgeCache:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        if self.path.suffix != ".sqlite":
            self.path = self.path / "judge_cache.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._connection() as db:
            db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, ids TEXT NOT NULL)")

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db, self._local.pid = db, os.getpid()
        return db

    def get(self, key: str) -> tuple[list[int], list[str | None] | None] | None:
        """The ids and strategy descriptions stored under ``key`` (descriptions None in entries that have none)."""
        row = self._connection().execute("SELECT ids FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        stored = json.loads(row[0])
        return (stored, None) if isinstance(stored, list) else (stored["ids"], stored["strategies"])

    def put(self, key: str, ids: list[int], strategies: list[str | None] | None = None) -> None:
        stored = ids if strategies is None else {"ids": ids, "strategies": strategies}
        self._connection().execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, json.dumps(stored)))

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM answers").fetchone()[0]
