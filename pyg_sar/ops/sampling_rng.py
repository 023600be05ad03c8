r"""Counter-based random numbers of the bulk samplers (SplitMix64), in Python and torch.

Every random number a sampler draws is a pure function of a 64-bit **key** and a **counter**:
``dart(key, t) = mix64(key + (t + 1) * GOLDEN) >> 11 / 2**53`` (SplitMix64's output for the
state ``key + (t + 1) * GOLDEN``), uniform in ``[0, 1)`` with 53 random bits. Keys are built by
hashing the coordinates of a draw, e.g. ``(seed, epoch, minibatch, hop, node)``; so the picks of
a minibatch depend on neither the number of minibatches sampled together (bulk ``k``), nor the
number of ranks, nor the order of calls or the thread count. The native kernels
(``csrc/ops/sampling_math.h``) compute the same bits, so they and the pure-torch reference pick
exactly the same neighbours.

Tensors hold keys as ``int64`` with two's-complement wrap-around (torch's integer arithmetic
wraps on every backend it runs on); logical right shifts are emulated with a mask.
"""
from __future__ import annotations

import torch
from torch import Tensor

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _signed(v: int) -> int:
    """The int64 whose bits are those of the unsigned 64-bit ``v``."""
    v &= MASK64
    return v - (1 << 64) if v >= 1 << 63 else v


def mix64(x: int) -> int:
    """SplitMix64's finaliser on a Python int (taken modulo 2**64); returns an unsigned int."""
    x &= MASK64
    x ^= x >> 30
    x = (x * _M1) & MASK64
    x ^= x >> 27
    x = (x * _M2) & MASK64
    return x ^ (x >> 31)


def combine(key: int, value: int) -> int:
    """The key of coordinate ``value`` under ``key``: ``mix64(key ^ mix64(value + GOLDEN))``."""
    return mix64((key & MASK64) ^ mix64(value + GOLDEN))


def make_key(*coordinates: int) -> int:
    """A key from a tuple of non-negative coordinates, e.g. ``make_key(seed, epoch, batch)``;
    returned as the signed int64 the kernels take."""
    key = 0
    for c in coordinates:
        key = combine(key, int(c))
    return _signed(key)


# ------------------------------------------------------------------------- torch (int64)
def _shr(x: Tensor, n: int) -> Tensor:
    """Logical right shift of int64 bits."""
    return (x >> n) & ((1 << (64 - n)) - 1)


def mix64_tensor(x: Tensor) -> Tensor:
    """:func:`mix64` on every element of an int64 tensor."""
    x = x ^ _shr(x, 30)
    x = x * _signed(_M1)
    x = x ^ _shr(x, 27)
    x = x * _signed(_M2)
    return x ^ _shr(x, 31)


def combine_tensor(keys: Tensor, values: Tensor) -> Tensor:
    """:func:`combine` elementwise on int64 tensors (broadcasting)."""
    return mix64_tensor(keys ^ mix64_tensor(values + _signed(GOLDEN)))


def dart_tensor(keys: Tensor, counters: Tensor) -> Tensor:
    """``float64`` uniforms in ``[0, 1)``: the dart number ``counters`` of each ``keys`` row."""
    state = keys + (counters + 1) * _signed(GOLDEN)
    return _shr(mix64_tensor(state), 11).to(torch.float64) * (2.0 ** -53)


def dart(key: int, counter: int) -> float:
    """:func:`dart_tensor` for one Python int key and counter."""
    return (mix64(key + (counter + 1) * GOLDEN) >> 11) * 2.0 ** -53
