"""A sealed run cannot reach a daemon of the user's through its Unix socket.

Landlock governs what a run writes, not whom it connects to: a run could send a tmux server,
systemd --user or an ssh-agent a command, and that command would run with the user's rights
outside the seal (and rewrite BEST's tree, say). A daemon stands in for those here, a real one: a
listening socket outside the run's folders, by path and by an abstract name, that records every
connection it accepts. The run's own sockets, and Python's multiprocessing (which talks over them),
keep working.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import PY

from kernel_mcp import runner, sandbox

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}")]

# What the run tries: each address, and then its own listener (a path in its tree and an abstract
# name) and a multiprocessing Manager, whose server process it talks to over a socket of its own.
ATTEMPT = textwrap.dedent(
    r"""
    import json, multiprocessing, os, socket, sys
    def connect(address):
        client = socket.socket(socket.AF_UNIX)
        try:
            client.connect(address)
            client.sendall(b"tmux new-window 'rewrite BEST'")
            return "connected"
        except OSError as exc:
            return exc.strerror
        finally:
            client.close()
    if __name__ == "__main__":  # (the forkserver's children import this file)
        out = {"daemon_path": connect(sys.argv[1]), "daemon_abstract": connect("\0" + sys.argv[2])}
        own_path, own_abstract = os.path.join(os.getcwd(), "own.sock"), "\0" + sys.argv[2] + "-own"
        listeners = []
        for address in (own_path, own_abstract):
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(address)
            listener.listen(1)
            listeners.append(listener)
        out["own_path"], out["own_abstract"] = connect(own_path), connect(own_abstract)
        multiprocessing.set_start_method("forkserver")
        with multiprocessing.Manager() as manager:
            shared = manager.dict(answer=42)
            out["manager"] = shared["answer"]
        print(json.dumps(out))
    """
)


class Daemon:
    """A listener that records what each connection sends, as a daemon would before acting on it."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.received: list[bytes] = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(address)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(256))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def daemons(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    name = f"kmcp-test-daemon-{tmp_path.name}"
    by_path, by_name = Daemon(str(outside / "daemon.sock")), Daemon("\0" + name)
    yield by_path, by_name, name
    by_path.close()
    by_name.close()


async def _attempt(tmp_path: Path, daemon_path: str, name: str) -> dict:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "attempt.py").write_text(ATTEMPT)
    with sandbox.side(tree, tmp_path / "state", "sockets") as boundary:
        result = await runner.run([PY, "attempt.py", daemon_path, name], cwd=tree, timeout_s=60, boundary=boundary)
    assert result.ok, (result.status(), result.stderr.tail)
    return json.loads(result.stdout.tail.strip().splitlines()[-1])


def _needs_abi6() -> None:
    if sandbox.landlock_abi() < 6:
        pytest.skip(f"Landlock ABI {sandbox.landlock_abi()}: abstract sockets are not scoped before ABI 6")


async def test_a_sealed_run_reaches_no_daemon_by_path_or_by_name(tmp_path, daemons):
    by_path, by_name, name = daemons
    isolation, why = sandbox.isolation()
    if isolation is None or not isolation.sockets:
        pytest.skip(f"runs here get no namespaces that cover sockets: {why or isolation and isolation.sockets_why}")
    _needs_abi6()
    seen = await _attempt(tmp_path, by_path.address, name)
    assert seen["daemon_path"] == "Connection refused", seen  # covered by /dev/null in the run's mount namespace
    assert seen["daemon_abstract"] == "Operation not permitted", seen  # Landlock's scope
    assert by_path.received == [] and by_name.received == []
    # its own sockets and a multiprocessing Manager work as before
    assert seen["own_path"] == "connected" and seen["own_abstract"] == "connected" and seen["manager"] == 42, seen
    assert "Unix sockets covered" in sandbox.mechanism()


async def test_the_daemon_is_still_there_for_everyone_else(tmp_path, daemons):
    # the cover lives in the run's mount namespace only: the user's own tmux goes on working
    by_path, _by_name, name = daemons
    _needs_abi6()
    await _attempt(tmp_path, by_path.address, name)
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(by_path.address)
        client.sendall(b"hello")
    by_path.close()
    assert by_path.received == [b"hello"]


async def test_without_namespaces_the_path_stays_reachable_and_doctor_says_so(tmp_path, daemons, monkeypatch):
    monkeypatch.setenv(sandbox.NAMESPACES_ENV, "off")
    _needs_abi6()
    by_path, by_name, name = daemons
    seen = await _attempt(tmp_path, by_path.address, name)
    assert seen["daemon_abstract"] == "Operation not permitted", seen  # the scope needs no namespace
    assert seen["daemon_path"] == "connected", seen  # Landlock alone cannot stop it: said, not hidden
    assert "Unix sockets" in sandbox.mechanism() and "NO namespaces" in sandbox.mechanism()


def test_the_sockets_a_run_covers(tmp_path, daemons):
    by_path, _by_name, _name = daemons
    tree = tmp_path / "tree"
    tree.mkdir()
    inside = Daemon(str(tree / "own.sock"))  # the run's own folder: its own business
    try:
        covered = sandbox.others_sockets([tree])
    finally:
        inside.close()
    assert by_path.address in covered and inside.address not in covered
    assert not any(path.startswith("\0") or not path.startswith("/") for path in covered)


def test_a_deep_workspace_still_gets_a_temporary_folder_short_enough_for_sockets(tmp_path):
    # Python's multiprocessing makes <TMPDIR>/pymp-XXXXXXXX/listener-XXXXXXXX: past 107 bytes, bind fails
    deep = tmp_path / ("d" * 60) / "state"
    with sandbox.side(tmp_path, deep, "a-run-id-of-some-length-candidate") as boundary:
        tmp = Path(boundary.env["TMPDIR"])
        assert len(str(tmp)) <= sandbox.SOCKET_ROOM and tmp.is_dir() and tmp in boundary.writable
        assert (deep / sandbox.PRIVATE_DIR / "a-run-id-of-some-length-candidate" / "tmp").resolve() == tmp.resolve()
        (tmp / "left-behind").write_text("x")
    assert not tmp.exists()  # removed with the private folder


def test_a_socket_in_dev_shm_is_covered_too(tmp_path):
    # /dev is writable for every run (the GPU's device files), but /dev/shm is the machine's: a
    # daemon's socket there is no run's own
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm here")
    folder = Path(tempfile.mkdtemp(dir=shm, prefix="kmcp-test-"))
    try:
        daemon = Daemon(str(folder / "daemon.sock"))
        try:
            assert daemon.address in sandbox.others_sockets([tmp_path])
        finally:
            daemon.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# What a run that holds capabilities (a root server's: they stay so that a profiler can read the
# GPU's counters) could do past the covers: clone the root mount without them, or open a file by
# its inode. The seal's seccomp filter refuses those calls.
BEYOND_THE_COVERS = textwrap.dedent(
    r"""
    import ctypes, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    def attempt(*args):
        result = libc.syscall(*args)
        return "allowed" if result >= 0 else os.strerror(ctypes.get_errno())
    handle = {"x86_64": 304, "aarch64": 265}[os.uname().machine]
    print(json.dumps({
        "open_tree": attempt(428, -100, b"/", 1),  # open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE)
        "fsopen": attempt(430, b"tmpfs", 0),
        "open_by_handle_at": attempt(handle, -100, ctypes.create_string_buffer(64), 0),
    }))
    """
)


async def test_the_mount_api_and_file_handles_are_refused_inside_a_run(tmp_path):
    isolation, why = sandbox.isolation()
    if isolation is None:
        pytest.skip(f"runs here get no namespaces: {why}")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "beyond.py").write_text(BEYOND_THE_COVERS)
    with sandbox.side(tree, tmp_path / "state", "beyond") as boundary:
        result = await runner.run([PY, "beyond.py"], cwd=tree, timeout_s=60, boundary=boundary)
    assert result.ok, (result.status(), result.stderr.tail)
    seen = json.loads(result.stdout.tail.strip().splitlines()[-1])
    assert seen == {"open_tree": "Operation not permitted", "fsopen": "Operation not permitted", "open_by_handle_at": "Operation not permitted"}, seen
