"""Codecs in one process: round trips, exact wire sizes, bit packing, the statistics of
stochastic rounding, keyed determinism, and gradcheck of every encode/decode pair."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_sar.compression import (
    BoundCodec,
    MessageKey,
    Quantize,
    RandomSubset,
    Truncate,
    kept_channels,
    quantization_bits,
    roundtrip,
)
from pyg_sar.compression.packing import pack, packed_bytes, unpack

CODECS = [Truncate(), RandomSubset(), RandomSubset(rescale=True), Quantize()]
IDS = [repr(c) for c in CODECS]


def _bound(codec, ratio, step=0, layer=0, call=0, seed=1) -> BoundCodec:
    return BoundCodec(codec, ratio, seed, step, layer, call)


def _send(bound: BoundCodec, x: torch.Tensor, owner=0, user=1, direction="rows"):
    key = bound.key(0, owner, user, direction)
    payload = bound.encode(x, key)
    return payload, bound.decode(payload, tuple(x.shape[1:]), x.dtype, key)


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ratio_one_sends_the_rows_themselves(codec, dtype):
    x = torch.randn(7, 3, 10, dtype=dtype)
    payload, back = _send(_bound(codec, 1.0), x)
    assert payload is x and back is x


@pytest.mark.parametrize("ratio", [2.0, 3.0, 8.0, 100.0])
def test_truncation_keeps_the_first_channels(ratio):
    x = torch.randn(5, 2, 12, dtype=torch.float64)
    payload, back = _send(_bound(Truncate(), ratio), x)
    k = max(1, int(12 / ratio))
    assert payload.shape == (5, 2, k)
    assert torch.equal(back[..., :k], x[..., :k])
    assert not back[..., k:].any()


def test_kept_channels_follows_varco():
    assert kept_channels(256, 128.0) == 2 and kept_channels(256, 1.5) == 170
    assert kept_channels(256, 1.0) == 256 and kept_channels(4, 1e6) == 1


def test_random_subset_is_keyed_and_shared_by_both_directions():
    x = torch.randn(6, 20, dtype=torch.float64)
    bound = _bound(RandomSubset(), 4.0, step=3)
    _, back = _send(bound, x)
    kept = back.abs().sum(0) > 0
    assert int(kept.sum()) == 5
    assert torch.equal(back[:, kept], x[:, kept])
    # the gradient of the same message uses the same channels
    _, grad_back = _send(bound, torch.ones_like(x), direction="grads")
    assert torch.equal(grad_back.abs().sum(0) > 0, kept)
    # another step, layer, call, tensor or pair of ranks draws another subset (almost surely)
    others = [_bound(RandomSubset(), 4.0, step=4), _bound(RandomSubset(), 4.0, step=3, layer=1),
              _bound(RandomSubset(), 4.0, step=3, call=1)]
    masks = [(_send(b, x)[1].abs().sum(0) > 0) for b in others]
    masks.append(_send(bound, x, owner=2)[1].abs().sum(0) > 0)
    assert sum(not torch.equal(m, kept) for m in masks) >= 3


def test_random_subset_rescaled_is_unbiased():
    x = torch.randn(3, 8, dtype=torch.float64)
    total = sum(_send(_bound(RandomSubset(rescale=True), 4.0, step=t), x)[1] for t in range(4000))
    assert torch.allclose(total / 4000, x, atol=0.15 * float(x.abs().max()))


@pytest.mark.parametrize("ratio,bits", [(1.5, 16), (2.0, 16), (4.0, 8), (8.0, 4), (16.0, 2),
                                        (32.0, 1), (100.0, 1), (5.0, 4)])
def test_quantization_bits(ratio, bits):
    assert quantization_bits(ratio) == bits
    assert quantization_bits(1.0) == 32


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("ratio", [2.0, 4.0, 8.0, 16.0, 32.0])
def test_quantization_error_and_exact_wire_size(dtype, ratio):
    x = torch.randn(9, 4, 16, dtype=dtype) * 3
    bound = _bound(Quantize(), ratio)
    payload, back = _send(bound, x)
    bits, count, item = quantization_bits(ratio), 64, x.element_size()
    assert payload.dtype == torch.uint8
    assert payload.shape == (9, math.ceil(count * bits / 8) + 2 * item)
    assert Quantize().wire_bytes(9, (4, 16), dtype, ratio) == payload.numel()
    flat, rebuilt = x.view(9, -1), back.view(9, -1)
    step = (flat.amax(1, keepdim=True) - flat.amin(1, keepdim=True)) / (2 ** bits - 1)
    assert bool(((rebuilt - flat).abs() <= step * (1 + 1e-5)).all())
    # the row's extremes lie on the grid: min is sent exactly
    assert torch.equal(rebuilt.amin(1), flat.amin(1))


def test_quantization_is_unbiased():
    x = torch.randn(4, 32, dtype=torch.float64)
    mean = sum(_send(_bound(Quantize(), 16.0, step=t), x)[1] for t in range(3000)) / 3000
    step = float((x.amax(1) - x.amin(1)).max()) / 3
    # standard error of the mean of a 2-bit stochastic rounding: <= step / 2 / sqrt(3000)
    assert float((mean - x).abs().max()) < 5 * step / 2 / math.sqrt(3000)


def test_quantization_noise_is_keyed_per_direction():
    x = torch.randn(5, 40, dtype=torch.float64)
    bound = _bound(Quantize(), 16.0)
    first, _ = _send(bound, x)
    again, _ = _send(bound, x)
    grads, _ = _send(bound, x, direction="grads")
    assert torch.equal(first, again)  # a re-fetch sends exactly the same bytes
    assert not torch.equal(first, grads)


def test_quantization_of_constant_rows_is_exact():
    x = torch.full((3, 10), 2.5, dtype=torch.float32)
    assert torch.equal(_send(_bound(Quantize(), 8.0), x)[1], x)


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
def test_raw_where_compression_cannot_shrink(codec):
    ints = torch.arange(12).view(6, 2)
    assert _send(_bound(codec, 8.0), ints)[0] is ints
    ones = torch.randn(6, 1, dtype=torch.float64)
    if not isinstance(codec, Quantize):  # one channel: nothing to drop
        assert _send(_bound(codec, 8.0), ones)[0] is ones
    scalars = torch.randn(6, dtype=torch.float32)
    assert _send(_bound(codec, 8.0), scalars)[0] is scalars
    if isinstance(codec, Quantize):  # 2 values: header + codes are not smaller than 8 bytes
        narrow = torch.randn(6, 2, dtype=torch.float32)
        assert _send(_bound(codec, 32.0), narrow)[0] is narrow


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
def test_zero_rows(codec):
    x = torch.randn(0, 3, 16, dtype=torch.float64)
    bound = _bound(codec, 4.0)
    payload, back = _send(bound, x)
    assert payload.shape[0] == 0 and back.shape == x.shape
    assert payload.shape[1:] == bound.wire_like(x).shape[1:]


@settings(max_examples=60, deadline=None)
@given(bits=st.sampled_from([1, 2, 4, 8, 16]), rows=st.integers(0, 5),
       count=st.integers(1, 37), seed=st.integers(0, 2**31))
def test_pack_round_trip(bits, rows, count, seed):
    gen = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 2 ** bits, (rows, count), generator=gen)
    data = pack(codes, bits)
    assert data.dtype == torch.uint8 and data.shape == (rows, packed_bytes(count, bits))
    assert torch.equal(unpack(data, bits, count).to(torch.int32), codes.to(torch.int32))


def test_pack_rejects_unknown_widths():
    with pytest.raises(ValueError, match="bits must be one of"):
        pack(torch.zeros(2, 3, dtype=torch.int64), 3)


@pytest.mark.parametrize("codec", [Truncate(), RandomSubset(), RandomSubset(rescale=True)],
                         ids=["truncate", "subset", "subset-rescale"])
@pytest.mark.parametrize("ratio", [1.0, 2.0, 5.0])
def test_gradcheck_channel_codecs(codec, ratio):
    x = torch.randn(4, 2, 10, dtype=torch.float64, requires_grad=True)
    bound = _bound(codec, ratio, step=2)
    assert torch.autograd.gradcheck(lambda t: roundtrip(t, bound, 0, 1, 2), (x,))
    assert torch.autograd.gradgradcheck(lambda t: roundtrip(t, bound, 0, 1, 2), (x,))


def test_gradcheck_quantization_at_ratio_one():
    x = torch.randn(4, 10, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: roundtrip(t, _bound(Quantize(), 1.0)), (x,))


def test_quantization_backward_is_the_quantised_gradient():
    """Straight-through estimator: the gradient passes through, quantised with the gradient
    message's own key (what the engine sends back to the rows' owner)."""
    x = torch.randn(4, 24, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, 24, dtype=torch.float64)
    bound = _bound(Quantize(), 8.0, step=5)
    roundtrip(x, bound, 0, 1, 2).backward(g)
    key = bound.key(0, 1, 2, "grads")
    expected = bound.decode(bound.encode(g, key), (24,), g.dtype, key)
    assert torch.equal(x.grad, expected)
    assert float((x.grad - g).abs().max()) <= float((g.amax(1) - g.amin(1)).max()) / 15 + 1e-12


def test_message_key_checks_direction():
    with pytest.raises(ValueError, match="direction"):
        MessageKey(0, 0, 0, 0, 0, 0, 1, "sideways")


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
@pytest.mark.parametrize("shape", [(40, 12), (40, 3, 8)])
@pytest.mark.parametrize("ratio", [1.0, 3.0, 16.0])
def test_gathering_encode_and_in_place_decode_equal_the_plain_ones(codec, shape, ratio):
    """``encode_rows`` (gathers only what is sent) and ``decode_into`` (writes into a slice of
    a larger output) give the bytes and rows of ``encode(source[index])`` and ``decode``."""
    gen = torch.Generator().manual_seed(3)
    source = torch.randn(*shape, generator=gen, dtype=torch.float64)
    index = torch.tensor([5, 0, 39, 5, 17, 2, 30])
    bound = _bound(codec, ratio, step=2)
    key = bound.key(1, 0, 2)
    payload = bound.encode(source.index_select(0, index), key)
    gathered = bound.encode_rows(source, index, key)
    assert gathered.dtype == payload.dtype and torch.equal(gathered, payload)
    rows = bound.decode(payload, tuple(shape[1:]), source.dtype, key)
    out = torch.full((index.numel() + 3, *shape[1:]), float("nan"), dtype=source.dtype)
    bound.decode_into(out[2:2 + index.numel()], payload, key)
    assert torch.equal(out[2:2 + index.numel()], rows)
    assert out[:2].isnan().all() and out[2 + index.numel():].isnan().all()
