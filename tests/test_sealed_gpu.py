"""CUDA inside the sealed boundary, on a machine with an NVIDIA GPU (skipped elsewhere): cuInit, a
context, a PTX module JIT-compiled by the driver and a kernel launch, in a run that has its own
PID, mount (and, for an unprivileged server, user) namespaces, its own /proc and a Landlock domain.
The same program runs unsealed first, so a machine whose CUDA is broken anyway is skipped, not
blamed on the boundary. Only the standard library and the driver (libcuda) are used.

On a GPU machine:  PYTHONPATH=$PWD python -m pytest -q -p no:cacheprovider -rs tests/test_sealed_gpu.py
"""

from __future__ import annotations

import ctypes
import json
import os
import textwrap
from pathlib import Path

import pytest
import unprivileged
from conftest import PY, refused_write

from kernel_mcp import runner, sandbox


def _has_cuda() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _has_cuda(), reason="no NVIDIA driver (libcuda.so.1) or GPU device file here"),
    pytest.mark.skipif(sandbox.available() is not None, reason=f"no Landlock here: {sandbox.available()}"),
]

# out[i] = 3 * i, as PTX for the driver to JIT for whatever GPU this is
PTX = r"""
.version 6.0
.target sm_50
.address_size 64
.visible .entry fill(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    mul.lo.s32 %r2, %r5, 3;
    st.global.u32 [%rd4], %r2;
DONE:
    ret;
}
"""

CUDA_CHECK = textwrap.dedent(
    r"""
    import ctypes, json, os, sys
    seen = {"pid": os.getpid(), "processes": len([p for p in os.listdir("/proc") if p.isdigit()])}
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        def call(name, *args):
            status = getattr(cuda, name)(*args)
            if status != 0:
                raise RuntimeError(f"{name} returned {status}")
        call("cuInit", 0)
        seen["cuInit"] = 0
        device, context, module, function = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        call("cuDeviceGet", ctypes.byref(device), 0)
        name = ctypes.create_string_buffer(256)
        call("cuDeviceGetName", name, 256, device)
        seen["device"] = name.value.decode()
        call("cuCtxCreate_v2", ctypes.byref(context), 0, device)
        call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(sys.argv[1].encode() + b"\0"))
        call("cuModuleGetFunction", ctypes.byref(function), module, b"fill")
        n = 1000
        out = ctypes.c_uint64()
        call("cuMemAlloc_v2", ctypes.byref(out), ctypes.c_size_t(4 * n))
        arg_out, arg_n = ctypes.c_uint64(out.value), ctypes.c_uint32(n)
        params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(arg_out), ctypes.c_void_p), ctypes.cast(ctypes.byref(arg_n), ctypes.c_void_p))
        call("cuLaunchKernel", function, (n + 255) // 256, 1, 1, 256, 1, 1, 0, None, params, None)
        call("cuCtxSynchronize")
        host = (ctypes.c_uint32 * n)()
        call("cuMemcpyDtoH_v2", host, ctypes.c_uint64(out.value), ctypes.c_size_t(4 * n))
        seen["kernel_ok"] = all(host[i] == 3 * i for i in range(n))
        call("cuMemFree_v2", ctypes.c_uint64(out.value))
        call("cuCtxDestroy_v2", context)
    except Exception as exc:
        seen["error"] = str(exc)
    try:
        open("/etc/kernel-mcp-gpu-probe", "w")
        seen["outside_write"] = "written"
    except OSError as exc:
        seen["outside_write"] = exc.strerror
    print(json.dumps(seen))
    """
)


def _check(python: str, tree: Path, boundary: sandbox.Boundary | None) -> tuple[runner.RunResult, dict]:
    result = runner.run_sync([python, "-c", CUDA_CHECK, PTX], cwd=tree, timeout_s=300, boundary=boundary)
    try:
        seen = json.loads(result.stdout.tail.strip().splitlines()[-1])
    except (ValueError, IndexError):
        seen = {}
    return result, seen


def test_cuda_initialises_and_runs_a_kernel_inside_the_sealed_run(tmp_path):
    unsealed, seen = _check(PY, tmp_path, None)
    if not (unsealed.ok and seen.get("kernel_ok")):
        pytest.skip(f"CUDA does not work here even unsealed: {seen or unsealed.stderr.tail[-500:]}")
    with sandbox.side(tmp_path, tmp_path / "state", "gpu") as boundary:
        result, seen = _check(PY, tmp_path, boundary)
    assert result.ok, (result.status(), result.stderr.tail)
    assert seen.get("cuInit") == 0 and seen.get("kernel_ok") is True and "error" not in seen, seen
    assert seen["outside_write"] == refused_write(), seen  # Landlock (and the read-only mounts) hold
    isolation, _why = sandbox.isolation()
    print(f"\nsealed: {result.sealed}\ninside: {seen}")
    if isolation is not None:
        assert seen["pid"] == 2, seen  # the command under its namespace's init
        if isolation.proc:
            assert seen["processes"] <= 3, seen  # its own /proc


UNPRIVILEGED = textwrap.dedent(
    r"""
    import json, os, shutil, subprocess, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from kernel_mcp import runner, sandbox
    import test_sealed_gpu as t
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # this user can start the seal's Python
    tree = Path(sys.argv[1])
    python = sys.executable if os.access(sys.executable, os.X_OK) else shutil.which("python3", path="/usr/bin:/bin")
    unsealed, plain = t._check(python, tree, None)
    with sandbox.side(tree, tree / "state", "gpu") as boundary:
        result, seen = t._check(python, tree, boundary)
    print(json.dumps({"sealed": result.sealed, "ok": result.ok, "stderr": result.stderr.tail[-2000:], "seen": seen,
                      "unsealed": plain, "unsealed_ok": unsealed.ok}))
    """
)


def test_cuda_runs_inside_the_user_namespace_of_an_unprivileged_server():
    with unprivileged.tree("kmcp-gpu-") as tree:
        (tree / "server.py").write_text(UNPRIVILEGED)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tree),
            "PYTHONPATH": os.pathsep.join([str(Path(sandbox.__file__).parent.parent), str(Path(__file__).parent)]),
        }
        answer = unprivileged.run_json([PY, str(tree / "server.py"), str(tree), "", str(Path(__file__).parent)], tree, env, 600)
    uid = unprivileged.UID
    print(f"\nsealed: {answer['sealed']}\ninside: {answer['seen']}")
    seen = answer["seen"]
    if not (answer["unsealed_ok"] and answer["unsealed"].get("kernel_ok")):
        pytest.skip(f"CUDA does not work for uid {uid} here even unsealed: {answer['unsealed']}")
    assert answer["ok"] and seen.get("cuInit") == 0 and seen.get("kernel_ok") is True, answer
    assert "own user, PID and mount namespaces" in answer["sealed"], answer["sealed"]
