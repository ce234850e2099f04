"""Answers on disk: a SQLite table keyed by sha256(model, prompt version, schema, kinds, text),
one committed row per text, so a killed run loses only the requests in flight."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remark_data.stages.extract.llm.task import LLMTask, TitleTask

if TYPE_CHECKING:
    from remark_data.config import LLMSpec


def cache_key(
    text: str, *, spec: LLMSpec, kinds: Sequence[str], task: LLMTask | None = None
) -> str:
    """The key of `text`'s answer under `task` (title extraction of `kinds` by default);
    `ExtractionSummary.results` is keyed by it too."""
    task = task or TitleTask(kinds)
    parts = task.key_parts(text, spec=spec)
    payload = json.dumps([spec.model, spec.prompt_version, *parts, text], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class ExtractionCache:
    """Answers on disk (SQLite, one committed row per text) — crash-safe by construction."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, state TEXT NOT NULL, "
            "titles TEXT, raw TEXT, error TEXT, dropped INTEGER, prompt_tokens INTEGER, "
            "completion_tokens INTEGER, attempts INTEGER)"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        cursor = self.connection.execute(
            "SELECT state, titles, raw, error, dropped FROM answers WHERE key = ?", (key,)
        )
        row = cursor.fetchone()
        if row is None:
            return None
        return {
            "state": row[0],
            "titles": json.loads(row[1] or "[]"),
            "raw": row[2],
            "error": row[3],
            "dropped": row[4],
        }

    def put(self, key: str, **values: Any) -> None:
        self.connection.execute(
            "INSERT OR REPLACE INTO answers (key, state, titles, raw, error, dropped, "
            "prompt_tokens, completion_tokens, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                values["state"],
                json.dumps(values.get("titles", [])),
                values.get("raw"),
                values.get("error"),
                values.get("dropped", 0),
                values.get("prompt_tokens", 0),
                values.get("completion_tokens", 0),
                values.get("attempts", 0),
            ),
        )

    def close(self) -> None:
        self.connection.close()
