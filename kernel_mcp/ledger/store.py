"""The ledger's durable state: experiments and every attempt, in SQLite (WAL, one transaction per step).

Nothing is half-written: each step's changes to the ledger commit together, and a step that also
changes git records its intent first, so a process killed in between is reconciled on the next call.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kernel_mcp.errors import WorkspaceError
from kernel_mcp.ledger.state import Attempt, Experiment, Intent

SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
  tag TEXT PRIMARY KEY, branch TEXT NOT NULL, worktree TEXT NOT NULL, subdir TEXT NOT NULL,
  base_commit TEXT NOT NULL, best_commit TEXT NOT NULL, best_attempt INTEGER,
  status TEXT NOT NULL, stop_reason TEXT, consecutive_regressions INTEGER NOT NULL DEFAULT 0,
  protected TEXT NOT NULL DEFAULT '{}', created TEXT NOT NULL,
  run_outputs TEXT NOT NULL DEFAULT '[]', owner TEXT, config TEXT);
CREATE TABLE IF NOT EXISTS attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL REFERENCES experiments(tag),
  parent_commit TEXT NOT NULL, commit_sha TEXT, diff_hash TEXT, files TEXT NOT NULL DEFAULT '[]',
  hypothesis TEXT NOT NULL, target_class TEXT, figures TEXT NOT NULL DEFAULT '{}',
  comparisons TEXT NOT NULL DEFAULT '{}', decision TEXT NOT NULL, reasons TEXT NOT NULL DEFAULT '[]',
  regression INTEGER NOT NULL DEFAULT 0, repair_count INTEGER NOT NULL DEFAULT 0,
  evidence TEXT NOT NULL DEFAULT '{}', outcome TEXT NOT NULL, created TEXT NOT NULL, closed TEXT);
CREATE TABLE IF NOT EXISTS intents (
  tag TEXT NOT NULL, action TEXT NOT NULL, attempt_id INTEGER, started TEXT NOT NULL, commit_sha TEXT);
"""
# Columns added after the first release: an older ledger gets them on open.
ADDED_COLUMNS = {"experiments": {"run_outputs": "TEXT NOT NULL DEFAULT '[]'", "owner": "TEXT", "config": "TEXT"}, "intents": {"commit_sha": "TEXT"}}
JSON_FIELDS = ("files", "figures", "comparisons", "reasons", "evidence", "protected", "run_outputs")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def _row(row: sqlite3.Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    out = dict(row)
    for key in JSON_FIELDS:
        if key in out and isinstance(out[key], str):
            out[key] = json.loads(out[key])
    return out


def _plain(value: Any) -> Any:
    """Models (and containers of them) as JSON-ready data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _json(value: Any) -> str:
    return json.dumps(_plain(value), default=str, allow_nan=False)


class LedgerStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.executescript(SCHEMA)
        for table, columns in ADDED_COLUMNS.items():
            have = {row["name"] for row in self.db.execute(f"PRAGMA table_info({table})")}
            for name, decl in columns.items():
                if name not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")

    def close(self) -> None:
        self.db.close()

    def transaction(self):
        return _Tx(self.db)

    # experiments
    def experiment(self, tag: str | None) -> Experiment | None:
        if tag:
            row = _row(self.db.execute("SELECT * FROM experiments WHERE tag = ?", (tag,)).fetchone())
        else:
            row = _row(self.db.execute("SELECT * FROM experiments ORDER BY created DESC, rowid DESC LIMIT 1").fetchone())
        return Experiment.model_validate(row) if row else None

    def existing_experiment(self, tag: str) -> Experiment:
        """An experiment this process has already read or written (read again, say, under the lock)."""
        exp = self.experiment(tag) if tag else None
        if exp is None:
            raise WorkspaceError(f"the ledger no longer has experiment {tag!r}", hint="its database was replaced or edited while this call ran")
        return exp

    def add_experiment(self, **fields: Any) -> None:
        fields.setdefault("created", now())
        for key in ("protected", "run_outputs"):
            if key in fields:
                fields[key] = _json(fields[key])
        names = ", ".join(fields)
        self.db.execute(f"INSERT INTO experiments ({names}) VALUES ({', '.join('?' * len(fields))})", tuple(fields.values()))

    def update_experiment(self, tag: str, **fields: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        values = [_json(v) if k in JSON_FIELDS else v for k, v in fields.items()]
        self.db.execute(f"UPDATE experiments SET {sets} WHERE tag = ?", (*values, tag))

    # attempts
    def add_attempt(self, **fields: Any) -> int:
        fields.setdefault("created", now())
        for key in JSON_FIELDS:
            if key in fields:
                fields[key] = _json(fields[key])
        names = ", ".join(fields)
        cur = self.db.execute(f"INSERT INTO attempts ({names}) VALUES ({', '.join('?' * len(fields))})", tuple(fields.values()))
        assert cur.lastrowid is not None  # set by every INSERT that succeeded
        return int(cur.lastrowid)

    def update_attempt(self, attempt_id: int, **fields: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        values = [_json(v) if k in JSON_FIELDS else v for k, v in fields.items()]
        self.db.execute(f"UPDATE attempts SET {sets} WHERE id = ?", (*values, attempt_id))

    def attempt(self, attempt_id: int | None) -> Attempt | None:
        row = _row(self.db.execute("SELECT * FROM attempts WHERE id = ?", (attempt_id,)).fetchone()) if attempt_id is not None else None
        return Attempt.model_validate(row) if row else None

    def existing_attempt(self, attempt_id: int | None) -> Attempt:
        """An attempt the ledger refers to (an experiment's BEST, one this process recorded)."""
        attempt = self.attempt(attempt_id)
        if attempt is None:
            raise WorkspaceError(f"the ledger has no attempt #{attempt_id}", hint="its database was replaced or edited while this call ran")
        return attempt

    def attempts(self, tag: str, limit: int = 1000, outcome: str | None = None) -> list[Attempt]:
        query = "SELECT * FROM attempts WHERE tag = ?" + (" AND outcome = ?" if outcome else "") + " ORDER BY id DESC LIMIT ?"
        params = (tag, outcome, limit) if outcome else (tag, limit)
        return [Attempt.model_validate(_row(r)) for r in self.db.execute(query, params).fetchall()]

    def delete_experiment(self, tag: str) -> None:
        """Only for an experiment whose start never finished (it has no attempt)."""
        self.db.execute("DELETE FROM intents WHERE tag = ?", (tag,))
        self.db.execute("DELETE FROM experiments WHERE tag = ? AND status = 'starting'", (tag,))

    def close_pending(self, tag: str, outcome: str, batch: str | None = None) -> None:
        """Close the pending attempts of an experiment (those of one batch, when named)."""
        query = "UPDATE attempts SET outcome = ?, closed = ? WHERE tag = ? AND outcome = 'pending'"
        params: tuple = (outcome, now(), tag)
        if batch is not None:
            query += " AND json_extract(evidence, '$.batch') = ?"
            params += (batch,)
        self.db.execute(query, params)

    def latest_attempt(self, tag: str, *, except_duplicates: bool = False) -> Attempt | None:
        """The newest attempt; with `except_duplicates`, the newest that was judged on its own (a
        duplicate ran nothing, so the rules that look back at the previous attempt, and the default
        attempt of a keep or a revert, pass over it)."""
        query = "SELECT * FROM attempts WHERE tag = ?" + (" AND decision != 'duplicate'" if except_duplicates else "") + " ORDER BY id DESC LIMIT 1"
        row = _row(self.db.execute(query, (tag,)).fetchone())
        return Attempt.model_validate(row) if row else None

    def attempts_with_code(self, tag: str, parent: str, code: str) -> list[Attempt]:
        """The attempts judged against BEST `parent` whose candidate had code fingerprint `code`, oldest first."""
        query = "SELECT * FROM attempts WHERE tag = ? AND parent_commit = ? AND json_extract(evidence, '$.code_fingerprint') = ? ORDER BY id"
        return [Attempt.model_validate(_row(r)) for r in self.db.execute(query, (tag, parent, code)).fetchall()]

    # intents
    def add_intent(self, tag: str, action: str, attempt_id: int | None, commit_sha: str | None = None) -> None:
        self.db.execute("INSERT INTO intents(tag, action, attempt_id, started, commit_sha) VALUES (?,?,?,?,?)", (tag, action, attempt_id, now(), commit_sha))

    def intents(self, tag: str) -> list[Intent]:
        return [Intent.model_validate(dict(r)) for r in self.db.execute("SELECT * FROM intents WHERE tag = ?", (tag,)).fetchall()]

    def clear_intents(self, tag: str) -> None:
        self.db.execute("DELETE FROM intents WHERE tag = ?", (tag,))


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        return False
