"""``torch.library.opcheck`` of every native op on CPU tensors: the schema declares what the op
mutates (``gat_block_forward_`` updates m, l, acc) and nothing else is written; the shape
functions of pyg_sar/ops/_fake.py agree with the real outputs (shape, dtype, device, strides);
the op traces under AOT dispatch with dynamic shapes.

``test_autograd_registration`` is left out on purpose: the ops are the forward and backward
halves of the Python autograd Functions (``GatherAggregate``, ``GATAttention``, ...), so no
autograd kernel is registered on them.
"""
from __future__ import annotations

import pytest
import torch

from pyg_sar.ops import native_available
from pyg_sar.ops._fake import FAKES, register
from pyg_sar.ops._gat_attention import attention_state

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="needs the native library pyg_sar._C (pip install -e .)")
UTILS = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")


def _graph():
    g = torch.Generator().manual_seed(0)
    rowptr = torch.tensor([0, 2, 3, 3, 5])
    col = torch.tensor([0, 2, 1, 0, 2])
    return g, rowptr, col


def _gather_cases():
    g, rowptr, col = _graph()
    x, w = torch.randn(3, 4, generator=g, dtype=torch.float64), torch.rand(5, generator=g,
                                                                            dtype=torch.float64)
    out = []
    for reduce in ("sum", "mean", "max", "min"):
        for weight in (None, w):
            tag = f"{reduce}-{'w' if weight is not None else 'nw'}"
            out.append((f"gather_aggregate-{tag}", "gather_aggregate",
                        (rowptr, col, x, weight, reduce)))
        _, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)
        grad = torch.randn(4, 4, generator=g, dtype=torch.float64)
        out.append((f"gather_aggregate_backward-{reduce}", "gather_aggregate_backward",
                    (grad, rowptr, col, x, w, arg, reduce, 3, True)))
        out.append((f"gather_aggregate_backward-{reduce}-no-weight-grad",
                    "gather_aggregate_backward", (grad, rowptr, col, None, None, arg, reduce, 3,
                                                  False)))
    return out


def _attention_cases():
    g, rowptr, col = _graph()

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    x, a_s, a_d, a_e = rand(3, 2, 2), rand(3, 2), rand(4, 2), rand(5, 2)
    x_d, x_e, att = rand(4, 2, 2), rand(5, 2, 2), rand(2, 2)
    src_ids, dst_ids = torch.tensor([10, 11, 12]), torch.tensor([20, 21, 22, 23])
    grad = rand(4, 2, 2)
    out = []
    for dropout in (0.0, 0.5):
        ids = (src_ids, dst_ids) if dropout > 0 else (None, None)
        for edge in (None, "edge"):
            tag = f"p{dropout}-{edge or 'noedge'}"
            a_edge, x_edge = (a_e, x_e) if edge else (None, None)
            m, l, acc = attention_state(4, 2, 2, x)
            out.append((f"gat_block_forward_-{tag}", "gat_block_forward_",
                        (rowptr, col, x, a_s, a_d, a_edge, m, l, acc, 0.2, dropout, 3, *ids)))
            m, l, acc = attention_state(4, 2, 2, x)
            torch.ops.pyg_sar.gat_block_forward_(rowptr, col, x, a_s, a_d, a_edge, m, l, acc,
                                                 0.2, dropout, 3, *ids)
            res = torch.ops.pyg_sar.gat_finalize(acc, l)
            out.append((f"gat_block_backward-{tag}", "gat_block_backward",
                        (grad, res, m, l, rowptr, col, x, a_s, a_d, a_edge, 0.2, dropout, 3,
                         *ids, torch.ops.pyg_sar.gat_transpose(rowptr, col, 3))))
            m, l, acc = attention_state(4, 2, 2, x)
            out.append((f"gatv2_block_forward_-{tag}", "gatv2_block_forward_",
                        (rowptr, col, x, x_d, x_edge, att, m, l, acc, 0.2, dropout, 3, *ids)))
            m, l, acc = attention_state(4, 2, 2, x)
            torch.ops.pyg_sar.gatv2_block_forward_(rowptr, col, x, x_d, x_edge, att, m, l, acc,
                                                   0.2, dropout, 3, *ids)
            res = torch.ops.pyg_sar.gat_finalize(acc, l)
            out.append((f"gatv2_block_backward-{tag}", "gatv2_block_backward",
                        (grad, res, m, l, rowptr, col, x, x_d, x_edge, att, 0.2, dropout, 3,
                         *ids, None)))
    out.append(("gat_finalize", "gat_finalize", (rand(4, 2, 2), torch.tensor(
        [[1.0, 2.0], [0.0, 1.0], [3.0, 0.0], [1.0, 1.0]], dtype=torch.float64))))
    out.append(("gat_transpose", "gat_transpose", (rowptr, col, 3)))
    out.append(("gat_dropout_mask", "gat_dropout_mask",
                (torch.tensor([0, 2, 1]), torch.tensor([1, 1, 0]), 2, 0.5, 7, torch.float32)))
    return out


def _quantize_cases():
    rows = torch.randn(5, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    out = []
    for bits in (1, 4, 8, 16):
        out.append((f"quantize_encode-{bits}", "quantize_encode", (rows, bits, 3)))
        payload = torch.ops.pyg_sar.quantize_encode(rows, bits, 3)
        out.append((f"quantize_decode-{bits}", "quantize_decode",
                    (payload, bits, 7, torch.float64)))
    return out


def _sampling_cases():
    _, rowptr, col = _graph()
    rows, keys = torch.tensor([0, 3, 1]), torch.tensor([5, 6, 7])
    return [
        ("bulk_select_rows", "bulk_select_rows", (rowptr, rows)),
        ("bulk_sample_uniform", "bulk_sample_uniform", (rowptr, rows, keys, 1)),
        ("bulk_sample_weighted", "bulk_sample_weighted",
         (torch.tensor([0, 2, 5]), torch.tensor([1.0, 2.0, 0.5, 0.5, 3.0], dtype=torch.float64),
          torch.tensor([1, 2]), 2)),
        ("bulk_extract_columns", "bulk_extract_columns",
         (rowptr, col, rows, torch.tensor([0, 1, 1]), torch.tensor([0, 1, 3]),
          torch.tensor([2, 0, 2]), 3)),
        ("bulk_ladies_weights", "bulk_ladies_weights",
         (rowptr, col, torch.rand(5, dtype=torch.float64), rows, torch.tensor([0, 1, 3]), 3)),
        ("bulk_relabel", "bulk_relabel",
         (6, [torch.tensor([4, 1, 2])], [torch.tensor([0, 1, 3])], torch.tensor([1, 5, 2, 0]),
          torch.tensor([0, 2, 4]))),
    ]


def _dtype_cases():
    """bfloat16 / float16 (and float32) inputs: float32 outputs where the contract says so (the
    raw gather_aggregate out, the attention state and gat_finalize), gradients in the inputs'
    dtype, the quantisation header in float32."""
    g, rowptr, col = _graph()
    out = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        tag = str(dtype).split(".")[-1]
        x = torch.randn(3, 4, generator=g).to(dtype)
        for wt in {dtype, torch.float32}:
            w = torch.rand(5, generator=g).to(wt)
            wtag = str(wt).split(".")[-1]
            for reduce in ("sum", "max"):
                out.append((f"gather_aggregate-{tag}-w{wtag}-{reduce}", "gather_aggregate",
                            (rowptr, col, x, w, reduce)))
                _, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)
                grad = torch.randn(4, 4, generator=g)
                out.append((f"gather_aggregate_backward-{tag}-w{wtag}-{reduce}",
                            "gather_aggregate_backward",
                            (grad, rowptr, col, x, w, arg, reduce, 3, True)))
                out.append((f"gather_aggregate_backward-{tag}-x_dtype-{reduce}",
                            "gather_aggregate_backward",
                            (grad.to(dtype), rowptr, col, None, None, arg, reduce, 3, False,
                             dtype)))

        def rand(*shape, dtype=dtype):
            return torch.randn(*shape, generator=g).to(dtype)

        xs, a_s, a_d, a_e = rand(3, 2, 2), rand(3, 2), rand(4, 2), rand(5, 2)
        x_d, x_e, att = rand(4, 2, 2), rand(5, 2, 2), rand(2, 2)
        src_ids, dst_ids = torch.tensor([10, 11, 12]), torch.tensor([20, 21, 22, 23])
        for v2 in (False, True):
            name = "gatv2" if v2 else "gat"
            inputs = (xs, x_d, x_e, att) if v2 else (xs, a_s, a_d, a_e)
            m, l, acc = attention_state(4, 2, 2, xs)
            out.append((f"{name}_block_forward_-{tag}", f"{name}_block_forward_",
                        (rowptr, col, *inputs, m, l, acc, 0.2, 0.5, 3, src_ids, dst_ids)))
            m, l, acc = attention_state(4, 2, 2, xs)
            getattr(torch.ops.pyg_sar, f"{name}_block_forward_")(
                rowptr, col, *inputs, m, l, acc, 0.2, 0.5, 3, src_ids, dst_ids)
            res = torch.ops.pyg_sar.gat_finalize(acc, l)
            for gdt in {dtype, torch.float32}:
                out.append((f"{name}_block_backward-{tag}-grad{str(gdt).split('.')[-1]}",
                            f"{name}_block_backward",
                            (torch.randn(4, 2, 2, generator=g).to(gdt), res, m, l, rowptr, col,
                             *inputs, 0.2, 0.5, 3, src_ids, dst_ids, None)))
        out.append((f"gat_finalize-{tag}", "gat_finalize", (acc, l)))
        out.append((f"gat_dropout_mask-{tag}", "gat_dropout_mask",
                    (torch.tensor([0, 2, 1]), torch.tensor([1, 1, 0]), 2, 0.5, 7, dtype)))
        rows = torch.randn(5, 7, generator=g).to(dtype)
        out.append((f"quantize_encode-{tag}", "quantize_encode", (rows, 4, 3)))
        payload = torch.ops.pyg_sar.quantize_encode(rows, 4, 3)
        out.append((f"quantize_decode-{tag}", "quantize_decode", (payload, 4, 7, dtype)))
    return out


def _cases():
    if not native_available():
        return []
    return (_gather_cases() + _attention_cases() + _quantize_cases() + _sampling_cases()
            + _dtype_cases())


CASES = _cases()


@pytest.mark.parametrize("name,args", [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_opcheck(name, args):
    torch.library.opcheck(getattr(torch.ops.pyg_sar, name).default, args, test_utils=UTILS)


def test_every_op_has_a_shape_function_and_a_case():
    assert set(register()) == set(FAKES)
    ops_with_cases = {c[1] for c in CASES} | {"gat_finalize"}
    assert set(FAKES) <= ops_with_cases


def test_fake_outputs_follow_the_inputs():
    """The shape functions under a fake mode: sizes derived from the inputs, dtype and device
    kept, data-dependent lengths symbolic."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    _, rowptr, col = _graph()
    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        r, c = mode.from_tensor(rowptr), mode.from_tensor(col)
        x = mode.from_tensor(torch.zeros(3, 6, dtype=torch.float32))
        out, arg = torch.ops.pyg_sar.gather_aggregate(r, c, x, None, "max")
        assert tuple(out.shape) == (4, 6) and out.dtype == torch.float32
        assert tuple(arg.shape) == (4, 6) and arg.dtype == torch.int64
        payload = torch.ops.pyg_sar.quantize_encode(x, 4, 0)
        assert tuple(payload.shape) == (3, 3 + 8) and payload.dtype == torch.uint8
        out_ptr, pos = torch.ops.pyg_sar.bulk_select_rows(r, mode.from_tensor(torch.tensor([1])))
        assert tuple(out_ptr.shape) == (2,) and not isinstance(pos.shape[0], int)
