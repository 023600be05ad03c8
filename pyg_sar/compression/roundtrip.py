"""What a compressed row goes through end to end, as one differentiable function.

Forward: ``decode(encode(x))`` with the rows' key. Backward: ``decode(encode(grad))`` with
the gradients' key: for the channel codecs that is the exact adjoint (the same channels, so a
truncated row's gradient is truncated the same way); for quantisation it is the
straight-through estimator with the gradient quantised on its way back (its own noise). The
engine applies exactly these steps on the two sides of each message; this function puts them
together for tests (``torch.autograd.gradcheck``) and for users who want to see the effect of
a codec on a tensor. ``bound`` may also be a :class:`~pyg_sar.compression.Transport` (a codec
and/or a wire dtype: what a row goes through under ``SARConfig(wire_dtype=...)``).
"""
from __future__ import annotations

from typing import Any, Union

import torch
from torch import Tensor

from pyg_sar.compression.interface import BoundCodec
from pyg_sar.compression.transport import Transport


class _RoundTrip(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, bound: BoundCodec, tensor: int, owner: int,
                user: int) -> Tensor:
        ctx.args = (bound, tensor, owner, user)
        key = bound.key(tensor, owner, user, "rows")
        return bound.decode(bound.encode(x, key), tuple(x.shape[1:]), x.dtype, key)

    @staticmethod
    def backward(ctx: Any, grad: Tensor):
        bound, tensor, owner, user = ctx.args
        key = bound.key(tensor, owner, user, "grads")
        grad = grad.contiguous()
        back = bound.decode(bound.encode(grad, key), tuple(grad.shape[1:]), grad.dtype, key)
        return back, None, None, None, None


def roundtrip(x: Tensor, bound: Union[BoundCodec, Transport], tensor: int = 0, owner: int = 0,
              user: int = 1) -> Tensor:
    """``x`` as the receiving rank sees it (see the module docstring); differentiable."""
    return _RoundTrip.apply(x, bound, tensor, owner, user)
