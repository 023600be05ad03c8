r"""Bulk-sampling operators: ``torch.ops.pyg_sar.bulk_*`` with a pure-torch fallback.

Each function runs the native kernel when the library has one for the tensors' device and
otherwise :mod:`pyg_sar.ops.sampling_reference` (with a warning, or an error under
``PYG_SAR_REQUIRE_NATIVE=1``). Native kernels and references draw the same keyed random numbers
(:mod:`pyg_sar.ops.sampling_rng`) and return the same picks. ``backend="reference"`` forces the
pure-torch path, ``backend="native"`` the kernel (an error if it is missing).

All index tensors are ``int64``; the CSR adjacency lists the in-neighbours of each row in
ascending order. See :mod:`pyg_sar.ops.sampling_reference` for the algorithms.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from pyg_sar.ops import sampling_reference as ref
from pyg_sar.ops._native import _load, warn_reference_fallback
from pyg_sar.ops._native import has_op_kernel as _has

BACKENDS = ("auto", "native", "reference")


# Ops without a CUDA kernel by design: their reference is torch ops, which run on the GPU.
_REFERENCE_ON_CUDA = ("bulk_ladies_weights", "bulk_relabel")


def _native(op: str, device: torch.device, backend: str) -> bool:
    if backend not in BACKENDS:
        raise ValueError(f"pyg_sar.ops.sampling: backend must be one of {BACKENDS} "
                         f"(got {backend!r})")
    if backend == "reference" or (device.type == "cuda" and op in _REFERENCE_ON_CUDA):
        return False
    if _has(op, device):
        return True
    if backend == "native":
        raise RuntimeError(f"pyg_sar: torch.ops.pyg_sar.{op} has no {device.type} kernel "
                           f"({_load() or 'not built into pyg_sar._C'})")
    warn_reference_fallback(op, device.type, "same picks")
    return False


def native_sampling_available(device: torch.device | str = "cpu") -> bool:
    """Whether every bulk-sampling operator has a native kernel for ``device``."""
    device = torch.device(device)
    return all(_has(op, device) for op in OPS
               if not (device.type == "cuda" and op in _REFERENCE_ON_CUDA))


OPS = ("bulk_select_rows", "bulk_sample_uniform", "bulk_ladies_weights", "bulk_sample_weighted",
       "bulk_extract_columns", "bulk_relabel")


def select_rows(rowptr: Tensor, rows: Tensor, *, backend: str = "auto") -> tuple[Tensor, Tensor]:
    """The pattern of ``Q @ A``: ``(out_ptr [R + 1], pos)``, ``pos`` the CSR positions of the
    edges of ``rows``, row by row."""
    if _native("bulk_select_rows", rows.device, backend):
        return torch.ops.pyg_sar.bulk_select_rows(rowptr, rows)
    return ref.csr_select_rows_reference(rowptr, rows)


def sample_uniform(rowptr: Tensor, rows: Tensor, row_keys: Tensor, fanout: int, *,
                   backend: str = "auto") -> tuple[Tensor, Tensor]:
    """GraphSAGE picks: ``fanout`` distinct in-neighbours of each row, uniformly, without
    replacement (all of them for shorter rows or ``fanout < 0``), by keyed dart throwing.
    Returns ``(out_ptr [R + 1], pos)``, positions ascending within each row."""
    if _native("bulk_sample_uniform", rows.device, backend):
        return torch.ops.pyg_sar.bulk_sample_uniform(rowptr, rows, row_keys, int(fanout))
    return ref.sample_uniform_reference(rowptr, rows, row_keys, int(fanout))


def ladies_weights(rowptr: Tensor, col: Tensor, values: Tensor, rows: Tensor, batch_ptr: Tensor,
                   num_cols: int, *, backend: str = "auto") -> tuple[Tensor, Tensor, Tensor]:
    """``Q @ (A * A)`` with one row per minibatch (LADIES): ``(ptr [k + 1], cand, weight)``,
    each minibatch's candidate columns ascending with their summed squared values."""
    if _native("bulk_ladies_weights", rows.device, backend):
        return torch.ops.pyg_sar.bulk_ladies_weights(rowptr, col, values, rows, batch_ptr,
                                                     int(num_cols))
    return ref.ladies_weights_reference(rowptr, col, values, rows, batch_ptr, int(num_cols))


def sample_weighted(ptr: Tensor, weight: Tensor, row_keys: Tensor, fanout: int, *,
                    backend: str = "auto") -> tuple[Tensor, Tensor]:
    """``fanout`` distinct picks per row, probability proportional to ``weight`` (float64),
    without replacement (successive sampling by dart throwing on prefix sums).
    Returns ``(out_ptr, pos)``, ``pos`` into ``weight``, ascending within each row."""
    if _native("bulk_sample_weighted", weight.device, backend):
        return torch.ops.pyg_sar.bulk_sample_weighted(ptr, weight, row_keys, int(fanout))
    return ref.sample_weighted_reference(ptr, weight, row_keys, int(fanout))


def extract_columns(rowptr: Tensor, col: Tensor, rows: Tensor, row_batch: Tensor,
                    keep_ptr: Tensor, keep_cols: Tensor, num_cols: int, *,
                    backend: str = "auto") -> tuple[Tensor, Tensor]:
    """Edges of ``rows`` whose column is in the (ascending) sampled set of the row's minibatch,
    all minibatches in one pass. Returns ``(out_ptr [R + 1], pos)``."""
    if _native("bulk_extract_columns", rows.device, backend):
        return torch.ops.pyg_sar.bulk_extract_columns(rowptr, col, rows, row_batch, keep_ptr,
                                                      keep_cols, int(num_cols))
    return ref.extract_columns_reference(rowptr, col, rows, row_batch, keep_ptr, keep_cols,
                                         int(num_cols))


def relabel(num_nodes: int, prev_nodes: Sequence[Tensor], prev_ptr: Sequence[Tensor],
            cand: Tensor, cand_ptr: Tensor, *, backend: str = "auto"
            ) -> tuple[Tensor, Tensor, Tensor]:
    """Per-minibatch local ids of ``cand``; unseen nodes are appended in order of first
    appearance. Returns ``(new_nodes, new_ptr [k + 1], cand_local)``."""
    if _native("bulk_relabel", cand.device, backend):
        return torch.ops.pyg_sar.bulk_relabel(int(num_nodes), list(prev_nodes), list(prev_ptr),
                                              cand, cand_ptr)
    return ref.relabel_reference(int(num_nodes), prev_nodes, prev_ptr, cand, cand_ptr)
