"""PyTorch reference, benchmark shapes and checking helpers for the
depthwise 3D convolution example (3x5x5 filter, bf16, padding (1, 2, 2)).

Everything here runs on the CPU as well as on a GPU, so the harness logic can
be tested on machines without one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

KERNEL = (3, 5, 5)
PADDING = (1, 2, 2)
TAPS = KERNEL[0] * KERNEL[1] * KERNEL[2]  # 75 multiply-adds per output
DTYPE = torch.bfloat16

# Tolerance for a bf16 output of a 75-term sum accumulated in fp32, compared
# with an fp32 reference computed from the same bf16 inputs:
#  * rtol = 2**-7: bf16 keeps 8 significant bits, so consecutive values are
#    2**-8 .. 2**-7 apart relative to their size. Rounding the fp32 sum to bf16
#    costs at most half of that; two correct kernels that add the 75 terms in
#    different orders can round to neighbouring bf16 values, a full step apart.
#    2**-7 admits exactly that and nothing more.
#  * atol = 1e-3: for outputs near zero, where a relative bound means nothing.
#    Reordering a 75-term fp32 sum of O(0.1) products moves it by ~1e-5, so
#    1e-3 leaves a wide margin; a single dropped or misplaced tap moves an
#    output by ~0.1 (|x| ~ 1, |w| ~ 0.12 with the inputs below), far outside.
RTOL = 2.0 ** -7
ATOL = 1e-3

DEFAULT_SEED = 20240917
SEED_ENV = "KERNEL_MCP_SEED"


@dataclass(frozen=True)
class Shape:
    name: str
    N: int
    C: int
    D: int
    H: int
    W: int
    note: str = ""

    @property
    def dims(self) -> tuple[int, int, int, int, int]:
        return (self.N, self.C, self.D, self.H, self.W)

    @property
    def outputs(self) -> int:
        return self.N * self.C * self.D * self.H * self.W


# Realistic layers: video backbones (X3D-style expanded widths, 16 frames,
# 112/56/28 pixels; a MobileNet-3D-style late block) and 3D segmentation
# (small batch, 32-64 channels, 64^3 and 128^3 volumes). Two config classes
# show up: large-C / small-spatial (x3d_res4, mnet3d_late) and
# small-C / large-spatial (x3d_res2, seg3d_*). Each is 34-87 M outputs, big
# enough for a fast kernel to run well over 100 us on an H100, small enough
# that all six shapes and all steps fit one benchmark run of about a minute.
SHAPES: tuple[Shape, ...] = (
    Shape("x3d_res2", 8, 54, 16, 112, 112, "X3D-M stage 2 expanded width, 16 frames"),
    Shape("x3d_res3", 8, 108, 16, 56, 56, "X3D-M stage 3 expanded width"),
    Shape("x3d_res4", 16, 216, 16, 28, 28, "X3D-M stage 4, large C / small spatial"),
    Shape("mnet3d_late", 32, 240, 8, 28, 28, "MobileNet-3D late block, 8 frames"),
    Shape("seg3d_64", 2, 64, 64, 64, 64, "3D U-Net style encoder, 64^3 volume"),
    Shape("seg3d_128", 1, 32, 128, 128, 128, "3D U-Net style first stage, 128^3 volume"),
)
SHAPES_BY_NAME = {s.name: s for s in SHAPES}


def get_seed(env: dict | None = None) -> int:
    """The seed from KERNEL_MCP_SEED (decimal or 0x hex), else DEFAULT_SEED."""
    import os

    env = os.environ if env is None else env
    raw = env.get(SEED_ENV, "")
    if raw is None or str(raw).strip() == "":
        return DEFAULT_SEED
    try:
        seed = int(str(raw).strip(), 0)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be an integer, got {raw!r}") from None
    if seed < 0:
        raise ValueError(f"{SEED_ENV} must be >= 0, got {seed}")
    return seed


def make_inputs(shape: Shape, seed: int, device: str | torch.device = "cpu"):
    """Fresh random bf16 input (N, C, D, H, W) and weight (C, 1, 3, 5, 5).

    Normal input; weights scaled by 1/sqrt(75) so outputs are O(1). The same
    (seed, shape, device type) always gives the same tensors.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(shape.dims, generator=gen, device=device, dtype=torch.float32)
    w = torch.randn((shape.C, 1) + KERNEL, generator=gen, device=device, dtype=torch.float32)
    w = w * (1.0 / math.sqrt(TAPS))
    return x.to(DTYPE), w.to(DTYPE)


def conv3d_reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The operation itself: depthwise conv3d, no bias, same dtype as x."""
    return F.conv3d(x, w, bias=None, stride=1, padding=PADDING, groups=x.shape[1])


def conv3d_reference_fp32(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """fp32 reference from the same bf16 inputs (TF32 off, so it is true fp32)."""
    prev = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        return conv3d_reference(x.float(), w.float())
    finally:
        torch.backends.cudnn.allow_tf32 = prev


def count_errors(out: torch.Tensor, ref: torch.Tensor, atol: float = ATOL,
                 rtol: float = RTOL) -> tuple[int, float]:
    """(elements outside |out - ref| <= atol + rtol * |ref|, max abs error).

    NaN or Inf in `out` counts as an error (and makes the max error NaN/Inf),
    so a poisoned output that was never written is caught.
    """
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch: {tuple(out.shape)} vs {tuple(ref.shape)}")
    diff = (out.float() - ref.float()).abs()
    ok = diff <= (atol + rtol * ref.float().abs())  # False for NaN
    bad = int(ok.numel() - int(ok.sum().item()))
    maxabs = float(diff.max().item()) if diff.numel() else 0.0
    return bad, maxabs


def flops(shape: Shape) -> int:
    """Useful floating-point operations: one multiply and one add per tap."""
    return 2 * TAPS * shape.outputs


def min_bytes(shape: Shape, elem_bytes: int = 2) -> int:
    """Fewest bytes through memory: input read once, weights once, output once."""
    return elem_bytes * (shape.outputs + shape.C * TAPS + shape.outputs)
