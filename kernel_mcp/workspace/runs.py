"""Run artifacts: the full raw output of every tool call, kept under `.kernel-mcp/runs/<run-id>/`.

Tool answers are short; what they leave out stays here and is served as MCP resources
(`kernel-mcp://runs/<run-id>/<file>`), so nothing a tool saw is lost.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_mcp.errors import InvalidInput

RESOURCE_SCHEME = "kernel-mcp"
_RUN_ID = re.compile(r"^\d{8}-\d{6}-[a-z0-9_]+-[0-9a-f]{6}$")
_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def run_uri(run_id: str, name: str | None = None) -> str:
    return f"{RESOURCE_SCHEME}://runs/{run_id}" + (f"/{name}" if name else "")


@dataclass(frozen=True)
class Run:
    id: str
    folder: Path

    def path(self, name: str) -> Path:
        if not _FILE.match(name):
            raise InvalidInput(f"bad artifact name {name!r}")
        return self.folder / name

    def write_text(self, name: str, text: str) -> Path:
        target = self.path(name)
        target.write_text(text, encoding="utf-8")
        return target

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, default=str))

    def uri(self, name: str | None = None) -> str:
        return run_uri(self.id, name)

    def files(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.is_file())

    def finish(self, status: str, **extra: Any) -> None:
        meta = self.meta()
        meta.update(status=status, finished=time.strftime("%Y-%m-%dT%H:%M:%S"), **extra)
        self.write_json("meta.json", meta)

    def meta(self) -> dict[str, Any]:
        try:
            return json.loads((self.folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}


class RunStore:
    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "runs"

    def create(self, tool: str, arguments: dict[str, Any] | None = None) -> Run:
        slug = re.sub(r"[^a-z0-9_]", "_", tool.lower()) or "run"
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{secrets.token_hex(3)}"
        folder = self.root / run_id
        folder.mkdir(parents=True, exist_ok=False)
        run = Run(run_id, folder)
        run.write_json(
            "meta.json",
            {"run_id": run_id, "tool": tool, "arguments": arguments or {}, "started": time.strftime("%Y-%m-%dT%H:%M:%S")},
        )
        return run

    def get(self, run_id: str) -> Run:
        if not _RUN_ID.match(run_id):
            raise InvalidInput(f"bad run id {run_id!r}")
        folder = self.root / run_id
        if not folder.is_dir():
            raise InvalidInput(f"no run {run_id!r} in this workspace")
        return Run(run_id, folder)

    def recent(self, limit: int = 20) -> list[Run]:
        if not self.root.is_dir():
            return []
        ids = sorted((p.name for p in self.root.iterdir() if p.is_dir() and _RUN_ID.match(p.name)), reverse=True)
        return [Run(i, self.root / i) for i in ids[:limit]]

    def read(self, run_id: str, name: str, limit_bytes: int) -> tuple[str, int]:
        """Text of one artifact (first `limit_bytes`), and its full size."""
        path = self.get(run_id).path(name)
        if not path.is_file():
            raise InvalidInput(f"run {run_id} has no file {name!r}")
        size = path.stat().st_size
        with path.open("rb") as handle:
            data = handle.read(limit_bytes)
        return data.decode("utf-8", errors="replace"), size
