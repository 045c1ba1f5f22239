"""Run a test's script as a server without privileges, for the tests that need one from a root
session (a uid nobody else uses, no groups; if that uid cannot read this Python where it lies, only
the right to read files is kept, never one to make namespaces)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

UID = 54321


@contextmanager
def tree(prefix: str) -> Iterator[Path]:
    """A folder the unprivileged uid owns, removed afterwards; skips where root and setpriv are not."""
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("run as root with setpriv to start an unprivileged server here")
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        os.chown(folder, UID, UID)
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_json(argv: list[str], folder: Path, env: dict[str, str], timeout_s: float) -> dict:
    """The last line of what `argv` printed as the unprivileged uid, read as JSON; a skip when
    that uid cannot run this Python and kernel_mcp at all."""
    base = ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]
    reader = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    done = None
    for extra in ([], reader):
        done = subprocess.run([*base, *extra, *argv], capture_output=True, text=True, env=env, cwd=folder, timeout=timeout_s, check=False)
        if done.returncode == 0:
            return json.loads(done.stdout.strip().splitlines()[-1])
    pytest.skip(f"uid {UID} cannot run this Python and kernel_mcp: {done.stderr[-500:] if done else ''}")


def run_server(script: str, prefix: str, timeout_s: float) -> dict:
    """`script` run by this Python as a server of the unprivileged uid, with this checkout's kernel_mcp
    importable and a folder the uid owns as its first argument (and its working folder): the JSON it
    printed last. Only the right to read this Python where it lies (under /root, say) may be kept: the
    server cannot make namespaces without a user namespace, and its commands get no capability."""
    import sys

    with tree(prefix) as folder:
        path = folder / "server.py"
        path.write_text(script)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HOME": str(folder)}
        return run_json([sys.executable, str(path), str(folder)], folder, env, timeout_s)
