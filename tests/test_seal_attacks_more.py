"""A hostile candidate against what the seal left open after its /dev allowlist, its own shared memory
and its dropped capabilities: each attack staged for real (the kernel's Landlock, namespaces and seccomp,
real processes, a real file of BEST's), in every way a run goes: started in namespaces of its own,
started without them (KERNEL_MCP_SEAL_NAMESPACES=off), and forked from a fork server ([benchmark] preload).
Every probe is a no-op where it gets through (a value set to what it is, a device that does not exist,
an invalid descriptor), and each assertion is on what the kernel answered or on a file's state."""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest

from conftest import PY, forked_runs_of
from conftest import needs_root as _root
from kernel_mcp import forked_runs, runner, sandbox

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}")]

LIMIT_S = 60
WAYS = ["namespaces", "no namespaces", "forked"]


async def _staged(tmp_path: Path, monkeypatch, way: str, body: str, env: dict[str, str] | None = None) -> runner.RunResult:
    """`body` run as the candidate's benchmark script, in its tree, the way `way` says."""
    if way == "no namespaces":
        monkeypatch.setenv(sandbox.NAMESPACES_ENV, "off")
    elif sandbox.isolation()[0] is None:
        pytest.skip(f"runs get no namespaces here: {sandbox.isolation()[1]}")
    if way == "forked" and forked_runs.unavailable() is not None:
        pytest.skip(f"no fork server here: {forked_runs.unavailable()}")
    tree, state = tmp_path / "tree", tmp_path / "state"
    tree.mkdir()
    state.mkdir()
    (tree / "attack.py").write_text(textwrap.dedent(body))
    command = [PY, "attack.py"]
    with sandbox.side(tree, state, "candidate") as boundary:
        if way != "forked":
            result = await runner.run(command, cwd=tree, timeout_s=LIMIT_S, env=env, boundary=boundary)
        else:
            [result] = await forked_runs_of(tree, boundary, env, [], command, limit_s=LIMIT_S)
    assert result.ok and result.sealed, (result.status(), result.stderr.tail)
    return result


def _seen(result: runner.RunResult) -> dict:
    return json.loads(result.stdout.tail.strip().splitlines()[-1])


BEYOND_THE_RUN = """
    import ctypes, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    numbers = {"x86_64": {"bpf": 321, "fanotify_init": 300}, "aarch64": {"bpf": 280, "fanotify_init": 262}}[os.uname().machine]
    def answer(result):
        return "allowed" if result >= 0 else os.strerror(ctypes.get_errno())
    seen = {}
    host = os.uname().nodename.encode()
    seen["sethostname"] = answer(libc.sethostname(host, len(host)))  # to the name it has
    domain = open("/proc/sys/kernel/domainname", "rb").read().strip()
    seen["setdomainname"] = answer(libc.setdomainname(domain, len(domain)))
    seen["swapoff"] = answer(libc.swapoff(b"/no-such-swap-file"))  # past the capability check: ENOENT
    seen["bpf"] = answer(libc.syscall(numbers["bpf"], 11, ctypes.create_string_buffer(128), 128))  # BPF_PROG_GET_NEXT_ID: CAP_SYS_ADMIN's
    group = libc.syscall(numbers["fanotify_init"], 0x4 | 0x1, 0)  # FAN_CLASS_CONTENT | FAN_CLOEXEC: permission events
    seen["fanotify_init"] = answer(group)
    if group >= 0:
        os.close(group)
    seen["quotactl_fd"] = answer(libc.syscall(443, -1, 0, 0, None))  # past the filter: EBADF
    print(json.dumps(seen))
"""


@pytest.mark.parametrize("way", WAYS)
async def test_a_root_run_changes_nothing_of_the_machines_through_the_kept_capability(tmp_path, monkeypatch, way):
    """The attack: CAP_SYS_ADMIN stays for the GPU profilers, and with it what the dropped capabilities
    were dropped for and more that outlives the run: bpf(2) (CAP_SYS_ADMIN implies CAP_BPF: a tracing
    program that writes the server's memory, a cgroup program attached for good), swapon and swapoff,
    the machine's hostname and domain name, quotas, fanotify permission events that hold every other
    process's opens. All refused now, with or without namespaces, forked or not."""
    _root()
    result = await _staged(tmp_path, monkeypatch, way, BEYOND_THE_RUN)
    assert _seen(result) == dict.fromkeys(("sethostname", "setdomainname", "swapoff", "bpf", "fanotify_init", "quotactl_fd"), "Operation not permitted"), (
        result.stdout.tail
    )


DEVICE_IOCTLS = """
    import ctypes, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    def ioctl(path, request, argument):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # for reading only: Landlock handles no reads
        try:
            return "allowed" if libc.ioctl(fd, request, argument) >= 0 else os.strerror(ctypes.get_errno())
        finally:
            os.close(fd)
    print(json.dumps({
        "BLKFLSBUF": ioctl(os.environ["LOOP"], 0x1261, 0),  # flushes a disk's cache (on the machine's disk: BEST's files read cold)
        "LOOP_CTL_REMOVE": ioctl("/dev/loop-control", 0x4C81, 99999),  # no such loop device: ENODEV past the boundary
        "null": ioctl("/dev/null", 0x5401, ctypes.create_string_buffer(64)),  # TCGETS: an allowed device's driver answers
    }))
"""


def _unattached_loop_device() -> str:
    """A loop device this process can open for reading (none attached: flushing it changes nothing)."""
    for entry in sorted(Path("/dev").glob("loop[0-9]*")):
        try:
            if not stat.S_ISBLK(entry.stat().st_mode) or Path(f"/sys/block/{entry.name}/loop/backing_file").exists():
                continue
            os.close(os.open(entry, os.O_RDONLY))
            return str(entry)
        except OSError:
            continue
    pytest.skip("no unattached loop device this server may open here")


@pytest.mark.parametrize("way", WAYS)
async def test_a_root_run_sends_no_ioctl_to_a_device_it_may_not_write(tmp_path, monkeypatch, way):
    """The attack: /dev is writable only for its allowlist, but Landlock let a run open any device for
    reading, and an ioctl writes as much as a write: a root run flushed the machine's disk cache, attached
    or removed loop devices (outliving it), or could push keystrokes into a console's shell (TIOCSTI, as
    root, outside every seal). Now ioctls reach only the devices a run may write."""
    _root()
    if sandbox.landlock_abi() < 5:
        pytest.skip("the kernel's Landlock governs no ioctls before ABI 5")
    if not os.path.exists("/dev/loop-control"):
        pytest.skip("no loop devices here")
    loop = _unattached_loop_device()
    result = await _staged(tmp_path, monkeypatch, way, DEVICE_IOCTLS, env={"LOOP": loop})
    assert _seen(result) == {
        "BLKFLSBUF": "Permission denied",
        "LOOP_CTL_REMOVE": "Permission denied",
        "null": "Inappropriate ioctl for device",
    }, result.stdout.tail


METADATA = """
    import json, os, sys
    def attempt(change):
        try:
            change()
            return "changed"
        except OSError as exc:
            return exc.strerror
    seen = {}
    for name, path in (("best", os.environ["BEST_FILE"]), ("own", "own.txt")):
        if name == "own":
            open(path, "w").close()
        st = os.stat(path)
        seen[name] = {
            "chmod": attempt(lambda: os.chmod(path, 0)),
            "chown": attempt(lambda: os.chown(path, st.st_uid, st.st_gid)),
            "utime": attempt(lambda: os.utime(path, (1, 1))),
            "setxattr": attempt(lambda: os.setxattr(path, "user.kmcp-attack", b"1")),
        }
    print(json.dumps(seen))
"""


@pytest.mark.parametrize("way", ["namespaces", "forked"])
async def test_a_run_changes_no_metadata_outside_its_folders(tmp_path, monkeypatch, way):
    """The attack: Landlock governs writing files and folders, not their metadata. A run (root, or the
    user who owns them) chmodded, chowned, re-timed or tagged any file outside its tree: the user's
    checkout locked to its user, BEST's script made unrunnable or its build stale, the ledger made
    unwritable. With namespaces, every mount is read-only in the run but its own folders."""
    best = tmp_path / "best" / "kernel.py"
    best.parent.mkdir()
    best.write_text("TIME = 100.0\n")
    before = best.stat()
    result = await _staged(tmp_path, monkeypatch, way, METADATA, env={"BEST_FILE": str(best)})
    seen = _seen(result)
    own = seen.pop("own")
    assert seen == {"best": dict.fromkeys(("chmod", "chown", "utime", "setxattr"), "Read-only file system")}, result.stdout.tail
    assert own["chmod"] == own["chown"] == own["utime"] == "changed", own  # its own tree as before
    after = best.stat()
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (before.st_mode, before.st_uid, before.st_mtime_ns)
    assert "user.kmcp-attack" not in os.listxattr(best)
