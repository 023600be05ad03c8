"""The suite's one closeness check: how far a tensor is from its reference, the same way in every
test file and rank-side case file (``from tests.closeness import assert_close, rel_error``).

Every function takes tensors (or numbers) of any dtype and device, detaches them and compares
them in float64 on the CPU. The shapes must be equal (no broadcasting: a shape mismatch is an
AssertionError naming both shapes); empty tensors are equal (difference 0.0)."""
from __future__ import annotations

import torch

# The scale of an all-zero reference in rel_error: any difference from it is then a huge error.
_SCALE_FLOOR = 1e-300


def _as_float64(actual, expected, what: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    e = torch.as_tensor(expected).detach().to("cpu", torch.float64)
    if a.shape != e.shape:
        where = f"{what}: " if what else ""
        raise AssertionError(f"{where}shape {tuple(a.shape)} != expected {tuple(e.shape)}")
    return a, e


def max_abs_diff(actual, expected) -> float:
    """``max |actual - expected|`` (0.0 for empty tensors; nan where either holds a nan)."""
    a, e = _as_float64(actual, expected)
    if a.numel() == 0:
        return 0.0
    return float((a - e).abs().max())


def rel_error(actual, expected) -> float:
    """``max |actual - expected|`` relative to ``expected``'s largest magnitude: the error of a
    whole tensor against its reference's scale (0.0 for empty tensors)."""
    a, e = _as_float64(actual, expected)
    if a.numel() == 0:
        return 0.0
    return float((a - e).abs().max()) / max(float(e.abs().max()), _SCALE_FLOOR)


def rel_norm_error(actual, expected) -> float:
    """``||actual - expected|| / ||expected||`` (Frobenius norms): the error of a whole tensor
    on average, where :func:`rel_error` takes its largest entry (0.0 for empty tensors)."""
    a, e = _as_float64(actual, expected)
    if a.numel() == 0:
        return 0.0
    return float((a - e).norm()) / max(float(e.norm()), _SCALE_FLOOR)


def assert_close(actual, expected, *, atol: float, rtol: float = 0.0, what: str = "") -> None:
    """Every entry within ``atol + rtol * |expected|`` of the reference (equal infinities are
    close, a nan never is), else an AssertionError naming ``what``, the largest absolute
    difference, where it is and how many entries are off."""
    a, e = _as_float64(actual, expected, what)
    if a.numel() == 0:
        return
    ok = (a == e) | ((a - e).abs() <= atol + rtol * e.abs())
    if bool(ok.all()):
        return
    diff = torch.where(ok, 0.0, (a - e).abs())
    flat = int(diff.flatten().argmax())  # a nan difference first
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape))
    where = f"{what}: " if what else ""
    raise AssertionError(
        f"{where}{int((~ok).sum())} of {a.numel()} entries not within atol={atol:g}, "
        f"rtol={rtol:g}; largest difference {float(diff.flatten()[flat]):.3e} at index {index} "
        f"(actual {float(a.flatten()[flat])!r}, expected {float(e.flatten()[flat])!r})")
