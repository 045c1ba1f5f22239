"""Whether an instruction exists on an AMD target: the offline clang's assembler is the judge.

The instruction is assembled alone, without operands, for `-mcpu=<arch>`. LLVM's AMDGPU assembler
tells three cases apart before it looks at operands: a name it does not know ("invalid
instruction"), a name it knows that this target lacks ("instruction not supported on this GPU"),
and a name this target has (assembled, or refused only for its operands: "too few operands for
instruction", "invalid operand for instruction"). Answers are kept for the life of the process.
"""

from __future__ import annotations

import re
import tempfile

from kernel_mcp import runner, toolchain

TIMEOUT_S = 30.0
_UNKNOWN = "invalid instruction"
_NOT_ON_TARGET = "instruction not supported on this GPU"
_OPERANDS = re.compile(r"error: (?:too few operands|invalid operand|not a valid operand|too many operands)")
_MNEMONIC = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*$")
_cache: dict[tuple[str, str], str | None] = {}


def verdict(stderr: str, returncode: int | None) -> str | None:
    """'exists', 'not on target', 'unknown', or None when the assembler's answer says neither."""
    if returncode == 0:
        return "exists"
    if _NOT_ON_TARGET in stderr:
        return "not on target"
    if re.search(rf"error: {_UNKNOWN}\b", stderr):
        return "unknown"
    if _OPERANDS.search(stderr):
        return "exists"
    return None


async def check(mnemonic: str, arch: str) -> str | None:
    """The assembler's verdict on `mnemonic` for `arch`; None when there is no assembler here or
    its answer is neither (the lookup then says what the documentation index holds)."""
    name = mnemonic.strip().lower()
    if not _MNEMONIC.match(name) or not re.fullmatch(r"gfx[0-9a-z]+", arch):
        return None  # never a directive or anything but one bare name
    key = (name, arch)
    if key in _cache:
        return _cache[key]
    prefix = toolchain.offline_clang_argv()
    if prefix is None:
        return None
    with tempfile.TemporaryDirectory(prefix="kmcp-asm-") as folder:
        argv = [*prefix, "-x", "assembler", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-c", "-", "-o", "probe.o"]
        result = await runner.run(argv, cwd=folder, timeout_s=TIMEOUT_S, stdin_data=f"{name}\n".encode())
    found = None if result.timed_out else verdict(result.stderr.tail, result.returncode)
    if found is not None:
        _cache[key] = found
    return found
