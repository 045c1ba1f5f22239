"""Which extra compiler flags a caller may pass, and how defines are checked.

Flags reach a compiler, so they are an allowlist of forms that only change code generation or
warnings: no output paths, plugins, response files, includes or anything that names a file.
"""

from __future__ import annotations

import re

from kernel_mcp.errors import InvalidInput

_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+\-*/()<>, ]*)?$")

_CLANG_ALLOWED = [
    r"-O[0-3sz]",
    r"-f(no-)?(fast-math|unroll-loops|finite-math-only|approx-func|gpu-rdc|gpu-flush-denormals-to-zero|cuda-flush-denormals-to-zero)",
    r"-ffp-contract=(fast|on|off|fast-honor-pragmas)",
    r"-m(no-)?(cumode|tgsplit|wavefrontsize64|unsafe-fp-atomics|code-object-v[0-9])",
    r"-mcode-object-version=[4-6]",
    r"-g|-gline-tables-only|-g0",
    r"-std=(c|gnu)\+\+(14|17|20|2a|23)",
    r"-W(no-)?[a-z0-9-]+|-Werror|-w",
    r"--gpu-max-threads-per-block=\d{1,4}",
    r"-mllvm=-amdgpu-[a-z0-9-]+(=[A-Za-z0-9_.-]+)?",
]
_NVCC_ALLOWED = [
    r"-O[0-3]",
    r"--use_fast_math|-use_fast_math",
    r"-lineinfo|-G|-g",
    r"-maxrregcount=\d{1,3}",
    r"--extra-device-vectorization",
    r"-std=c\+\+(14|17|20)",
    r"-Xptxas=-O[0-3]|-Xptxas=--allow-expensive-optimizations=(true|false)",
    r"--ftz=(true|false)|--prec-div=(true|false)|--prec-sqrt=(true|false)|--fmad=(true|false)",
    r"-W(no-)?[a-z0-9-]+|-w",
]


def check_flags(flags: list[str], family: str) -> list[str]:
    allowed = _NVCC_ALLOWED if family == "nvcc" else _CLANG_ALLOWED
    for flag in flags:
        if not any(re.fullmatch(pattern, flag) for pattern in allowed):
            raise InvalidInput(
                f"flag {flag!r} is not allowed",
                hint="allowed forms: " + " | ".join(allowed) + " (use `defines` for -D)",
            )
    return flags


def check_defines(defines: list[str]) -> list[str]:
    out = []
    for define in defines:
        if not _DEFINE.fullmatch(define):  # fullmatch: `$` would let a trailing newline through
            raise InvalidInput(f"define {define!r} must look like NAME or NAME=VALUE (letters, digits, _ and simple expressions)")
        out.append(f"-D{define}")
    return out
