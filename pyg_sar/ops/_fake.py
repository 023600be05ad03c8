"""Shape functions ("fake" kernels) of the native operators ``torch.ops.pyg_sar.*``.

They let tracing tools (``torch.compile``, ``torch.export``, ``torch.library.opcheck``) run an op
on fake tensors: output shapes, dtypes and devices without computing values. The ops whose output
size depends on the data (the bulk-sampling ops) return sizes from ``ctx.new_dynamic_size()``.
:func:`register` runs once, after ``pyg_sar._C`` registered the operators.
"""
from __future__ import annotations

import functools
from typing import Optional

import torch
from torch import Tensor
from torch.library import get_ctx, register_fake


def _dynamic(like: Tensor, dtype: torch.dtype = torch.int64) -> Tensor:
    """A 1-D tensor of a data-dependent length."""
    return like.new_empty((get_ctx().new_dynamic_size(),), dtype=dtype)


def _acc(dtype: torch.dtype) -> torch.dtype:
    """The kernels' accumulator dtype: float32 for bfloat16 / float16, else the dtype itself."""
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


def _gather_aggregate(rowptr: Tensor, col: Tensor, x_src: Tensor, weight: Optional[Tensor],
                      reduce: str) -> tuple[Tensor, Tensor]:
    num_dst, num_feat = rowptr.size(0) - 1, x_src.size(1)
    has_arg = reduce in ("max", "min")
    arg = rowptr.new_empty((num_dst, num_feat) if has_arg else (0,))
    return x_src.new_empty((num_dst, num_feat), dtype=_acc(x_src.dtype)), arg


def _gather_aggregate_backward(grad_out: Tensor, rowptr: Tensor, col: Tensor,
                               x_src: Optional[Tensor], weight: Optional[Tensor], arg: Tensor,
                               reduce: str, num_src: int, weight_requires_grad: bool,
                               x_dtype: Optional[torch.dtype] = None) -> tuple[Tensor, Tensor]:
    if x_dtype is None:
        x_dtype = x_src.dtype if x_src is not None else grad_out.dtype
    if weight_requires_grad:
        grad_w = grad_out.new_empty((col.size(0),), dtype=weight.dtype)
    else:
        grad_w = grad_out.new_empty((0,), dtype=_acc(x_dtype))
    return grad_out.new_empty((num_src, grad_out.size(1)), dtype=x_dtype), grad_w


def _block_forward_(*args) -> None:
    return None


def _gat_block_backward(grad_out, out, m, l, rowptr, col, x_src, a_src, a_dst, a_edge,
                        negative_slope, dropout, seed, src_ids, dst_ids, transposed=None):
    (S, H, C), N, E = x_src.shape, rowptr.size(0) - 1, col.size(0)
    g_edge = x_src.new_empty((E, H) if a_edge is not None else (0,))
    return (x_src.new_empty((S, H, C)), x_src.new_empty((S, H)), x_src.new_empty((N, H)),
            g_edge)


def _gatv2_block_backward(grad_out, out, m, l, rowptr, col, x_src, x_dst, x_edge, att,
                          negative_slope, dropout, seed, src_ids, dst_ids, transposed=None):
    (S, H, C), N, E = x_src.shape, rowptr.size(0) - 1, col.size(0)
    g_edge = x_src.new_empty((E, H, C) if x_edge is not None else (0,))
    return (x_src.new_empty((S, H, C)), x_src.new_empty((N, H, C)), g_edge,
            x_src.new_empty((H, C)))


def _gat_transpose(rowptr: Tensor, col: Tensor, num_src: int) -> Tensor:
    return col.new_empty((num_src + 1 + 2 * col.size(0),))


def _gat_dropout_mask(src_ids: Tensor, dst_ids: Tensor, heads: int, dropout: float, seed: int,
                      dtype: torch.dtype) -> Tensor:
    return src_ids.new_empty((src_ids.size(0), heads), dtype=dtype)


def _quantize_encode(rows: Tensor, bits: int, seed: int) -> Tensor:
    # header (lo, step) in the accumulator dtype: float32 for bfloat16 / float16 rows
    width = (rows.size(1) * bits + 7) // 8 + 2 * torch.finfo(_acc(rows.dtype)).bits // 8
    return rows.new_empty((rows.size(0), width), dtype=torch.uint8)


def _quantize_decode(payload: Tensor, bits: int, count: int, dtype: torch.dtype) -> Tensor:
    return payload.new_empty((payload.size(0), count), dtype=dtype)


def _rows_and_positions(rows: Tensor) -> tuple[Tensor, Tensor]:
    return rows.new_empty((rows.size(0) + 1,)), _dynamic(rows)


def _bulk_select_rows(rowptr: Tensor, rows: Tensor) -> tuple[Tensor, Tensor]:
    return _rows_and_positions(rows)


def _bulk_sample_uniform(rowptr: Tensor, rows: Tensor, row_keys: Tensor, fanout: int
                         ) -> tuple[Tensor, Tensor]:
    return _rows_and_positions(rows)


def _bulk_sample_weighted(ptr: Tensor, weight: Tensor, row_keys: Tensor, fanout: int
                          ) -> tuple[Tensor, Tensor]:
    return ptr.new_empty((ptr.size(0),)), _dynamic(ptr)


def _bulk_extract_columns(rowptr: Tensor, col: Tensor, rows: Tensor, row_batch: Tensor,
                          keep_ptr: Tensor, keep_cols: Tensor, num_cols: int
                          ) -> tuple[Tensor, Tensor]:
    return _rows_and_positions(rows)


def _bulk_ladies_weights(rowptr: Tensor, col: Tensor, values: Tensor, rows: Tensor,
                         batch_ptr: Tensor, num_cols: int) -> tuple[Tensor, Tensor, Tensor]:
    size = get_ctx().new_dynamic_size()
    return (batch_ptr.new_empty((batch_ptr.size(0),)), rows.new_empty((size,)),
            values.new_empty((size,)))


def _bulk_relabel(num_nodes: int, prev_nodes: list[Tensor], prev_ptr: list[Tensor], cand: Tensor,
                  cand_ptr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    return _dynamic(cand), cand_ptr.new_empty((cand_ptr.size(0),)), cand.new_empty(cand.shape)


FAKES = {
    "gather_aggregate": _gather_aggregate,
    "gather_aggregate_backward": _gather_aggregate_backward,
    "gat_block_forward_": _block_forward_,
    "gatv2_block_forward_": _block_forward_,
    "gat_block_backward": _gat_block_backward,
    "gatv2_block_backward": _gatv2_block_backward,
    "gat_transpose": _gat_transpose,
    "gat_dropout_mask": _gat_dropout_mask,
    "quantize_encode": _quantize_encode,
    "quantize_decode": _quantize_decode,
    "bulk_select_rows": _bulk_select_rows,
    "bulk_sample_uniform": _bulk_sample_uniform,
    "bulk_sample_weighted": _bulk_sample_weighted,
    "bulk_extract_columns": _bulk_extract_columns,
    "bulk_ladies_weights": _bulk_ladies_weights,
    "bulk_relabel": _bulk_relabel,
}


@functools.cache
def register() -> tuple[str, ...]:
    """Registers the shape function of every op the loaded library defines; returns their names
    (an older build may lack some ops)."""
    done = []
    for name, fn in FAKES.items():
        if hasattr(torch.ops.pyg_sar, name):
            register_fake(f"pyg_sar::{name}", fn)
            done.append(name)
    return tuple(done)
