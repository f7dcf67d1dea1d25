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

    def get(self, key: str) -> list[int] | None:
        row = self._connection().execute("SELECT ids FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, ids: list[int]) -> None:
        self._connection().execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, json.dumps(ids)))

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM answers").fetchone()[0]
