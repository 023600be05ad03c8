"""Detect NaN / Inf values in floating-point node and edge tensors before they are trained on.

A non-finite feature silently turns every loss it touches into NaN, many epochs later and on
another rank; reporting it where the data enters (partitioning, ``from_pyg``) names the tensor
and the first offending row instead.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Optional

import torch
from torch import Tensor

NONFINITE_POLICIES = ("warn", "raise", "ignore")


class NonFiniteWarning(UserWarning):
    """A floating-point input tensor holds NaN or Inf values (reported, not refused)."""


def check_policy(on_nonfinite: str, where: str) -> None:
    if on_nonfinite not in NONFINITE_POLICIES:
        raise ValueError(f"{where}: on_nonfinite must be one of {NONFINITE_POLICIES} "
                         f"(got {on_nonfinite!r})")


def nonfinite_report(name: str, value: Tensor) -> Optional[str]:
    """A one-line description of the NaN / Inf values of ``value``, or ``None`` if it has
    none (non-floating tensors have none)."""
    if not isinstance(value, Tensor) or not (value.is_floating_point() or value.is_complex()):
        return None
    bad = ~torch.isfinite(value)
    if not bool(bad.any()):
        return None
    nan = int(torch.isnan(value).sum())
    inf = int(bad.sum()) - nan
    rows = bad.reshape(value.shape[0], -1).any(dim=1) if value.dim() > 0 else bad.reshape(1)
    first = int(rows.nonzero()[0, 0])
    return format_report(name, nan, inf, int(rows.sum()), first)


def format_report(name: str, nan: int, inf: int, rows: int, first: int) -> str:
    """The line :func:`nonfinite_report` gives for these counts."""
    return (f"'{name}' has {nan} NaN and {inf} Inf value(s) in {rows} row(s) "
            f"(first: row {first})")


def check_finite(tensors: Mapping[str, Optional[Tensor]], on_nonfinite: str = "warn",
                 where: str = "pyg_sar") -> list[str]:
    """Report NaN / Inf in ``tensors`` by name.

    Args:
        tensors: named tensors (``None`` entries and integer tensors are skipped).
        on_nonfinite: ``"warn"`` (a :class:`NonFiniteWarning`), ``"raise"`` (``ValueError``)
            or ``"ignore"``.
        where: prefix of the message (the calling function).

    Returns:
        The reports (one per offending tensor; empty when every value is finite).
    """
    check_policy(on_nonfinite, where)
    if on_nonfinite == "ignore":
        return []
    reports = [r for name, value in tensors.items()
               if (r := nonfinite_report(name, value)) is not None]
    act_on_reports(reports, on_nonfinite, where, stacklevel=4)
    return reports


def act_on_reports(reports: list[str], on_nonfinite: str, where: str,
                   stacklevel: int = 3) -> None:
    """Raise or warn about ``reports`` (lines of :func:`nonfinite_report`) as ``on_nonfinite``
    says; shared by :func:`check_finite` and the streaming writer, which counts in chunks."""
    if not reports or on_nonfinite == "ignore":
        return
    msg = f"{where}: non-finite input: " + "; ".join(reports)
    if on_nonfinite == "raise":
        raise ValueError(msg + " (refused because on_nonfinite='raise')")
    warnings.warn(msg + " (pass on_nonfinite='raise' to refuse such input)",
                  NonFiniteWarning, stacklevel=stacklevel)
