"""Native quantisation kernels (torch.ops.pyg_sar.quantize_encode / quantize_decode) against the
pure-torch reference bit for bit, the explicit dispatch between them, and the codec on top."""
from __future__ import annotations

import math

import pytest
import torch

from pyg_sar.compression import BoundCodec, Quantize
from pyg_sar.ops import quantize as q
from pyg_sar.ops import quantize_reference as ref
from pyg_sar.ops._native import native_available, warn_reference_fallback

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="needs the native library pyg_sar._C (bash .ci/setup)")

BITS = [1, 2, 4, 8, 16]
DTYPES = [torch.float32, torch.float64]
SHAPES = [(0, 16), (5, 0), (1, 1), (7, 3), (9, 33), (40, 256), (3, 1001)]


def _rows(shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=dtype) * 3 + 1
    if shape[0] > 2 and shape[1] > 0:
        x[1] = -2.25  # a constant row
        x[2, 0] = 1e4  # a wide range
    return x


class _Threads:
    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self):
        self.saved = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.saved)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_native_bytes_and_values_equal_the_reference(bits, dtype, threads):
    for i, shape in enumerate(SHAPES):
        x = _rows(shape, dtype, seed=i)
        seed = 2**62 + 12345 * i  # noise seeds are 63-bit
        want = ref.quantize_encode_reference(x, bits, seed)
        with _Threads(threads):
            got = q.quantize_encode(x, bits, seed, backend="native")
            back = q.quantize_decode(want, bits, shape[1], dtype, backend="native")
        assert got.dtype == torch.uint8
        assert got.shape == (shape[0], ref.row_bytes(shape[1], bits, dtype)), shape
        assert torch.equal(got, want), (shape, (got != want).nonzero()[:4])
        expected = ref.quantize_decode_reference(want, bits, shape[1], dtype)
        assert back.dtype == dtype and torch.equal(back, expected), shape


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bits", [1, 2, 4, 8, 16])
def test_round_trip_error_bound_and_constant_rows(bits, dtype):
    x = _rows((33, 37), dtype)
    back = q.quantize_decode(q.quantize_encode(x, bits, 7), bits, 37, dtype)
    step = (x.amax(1, keepdim=True) - x.amin(1, keepdim=True)) / (2**bits - 1)
    assert bool(((back - x).abs() <= step * (1 + 1e-5) + 1e-12).all())
    assert torch.equal(back[1], x[1])  # constant row: exact
    assert torch.equal(back.amin(1), x.amin(1))  # the minimum is sent exactly


def test_padding_bits_are_zero():
    x = _rows((6, 5), torch.float32)  # 5 codes: 2-bit -> 2 bytes, last one holds 1 code
    payload = q.quantize_encode(x, 2, 3)
    assert not bool((payload[:, 1] >> 2).any())
    payload = q.quantize_encode(x, 1, 3)  # 1 byte, 5 codes
    assert not bool((payload[:, 0] >> 5).any())


def test_noise_is_keyed_by_seed_row_and_column():
    u = ref.noise(4, 1000, 99, torch.float64)
    assert bool(((u >= 0) & (u < 1)).all())
    assert torch.equal(u, ref.noise(4, 1000, 99, torch.float64))
    assert not torch.equal(u, ref.noise(4, 1000, 100, torch.float64))
    assert not torch.equal(u[0], u[1])
    assert abs(float(u.mean()) - 0.5) < 0.02
    f = ref.noise(4, 1000, 99, torch.float32)
    assert bool(((f >= 0) & (f < 1)).all()) and f.dtype == torch.float32
    # the first rows of a longer message draw the same noise (keyed, not streamed)
    assert torch.equal(ref.noise(2, 1000, 99, torch.float64), u[:2])


def test_decode_reads_a_strided_chunk_of_a_larger_buffer():
    x = _rows((8, 21), torch.float64)
    payload = q.quantize_encode(x, 4, 5)
    buffer = torch.zeros(8, payload.shape[1] + 3, dtype=torch.uint8)
    buffer[:, 3:] = payload
    chunk = buffer[:, 3:]  # row stride != row width, header at an odd byte offset
    want = ref.quantize_decode_reference(payload, 4, 21, torch.float64)
    assert torch.equal(q.quantize_decode(chunk, 4, 21, torch.float64, backend="native"), want)
    assert torch.equal(ref.quantize_decode_reference(chunk, 4, 21, torch.float64), want)


def test_unbiased_native():
    x = torch.randn(4, 32, dtype=torch.float64)
    total = sum(q.quantize_decode(q.quantize_encode(x, 2, s), 2, 32, torch.float64)
                for s in range(3000))
    step = float((x.amax(1) - x.amin(1)).max()) / 3
    assert float((total / 3000 - x).abs().max()) < 5 * step / 2 / math.sqrt(3000)


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_bad_arguments_are_named(backend):
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match=r"bits must be one of .*got 3"):
        q.quantize_encode(x, 3, 0, backend=backend)
    with pytest.raises(RuntimeError, match=r"rows has dtype int32, .*supported: float32, "
                                           r"float64, bfloat16, float16"):
        q.quantize_encode(x.int(), 2, 0, backend=backend)
    with pytest.raises(ValueError, match="2-D"):
        q.quantize_encode(x.view(-1), 2, 0, backend=backend)
    payload = q.quantize_encode(x, 2, 0)
    with pytest.raises(ValueError, match=r"payload.* 9 .*got"):
        q.quantize_decode(payload[:, 1:], 2, 4, torch.float32, backend=backend)
    with pytest.raises(RuntimeError, match=r"dtype has dtype int32, .*supported: float32, "
                                           r"float64, bfloat16, float16"):
        q.quantize_decode(payload, 2, 4, torch.int32, backend=backend)


def test_dispatch_is_explicit(monkeypatch):
    assert q.quantize_backend("quantize_encode", "cpu") == "native"
    assert q.quantize_backend("quantize_decode", "cpu", "reference") == "reference"
    with pytest.raises(ValueError, match="backend must be one of"):
        q.quantize_backend("quantize_encode", "cpu", "fast")
    # a device without a kernel: "native" is an error, "auto" falls back with a warning
    monkeypatch.setattr(q, "_has", lambda op, device: False)
    monkeypatch.delenv("PYG_SAR_REQUIRE_NATIVE", raising=False)
    warn_reference_fallback.cache_clear()
    with pytest.raises(RuntimeError, match="has no cpu kernel"):
        q.quantize_backend("quantize_encode", "cpu", "native")
    with pytest.warns(RuntimeWarning, match="pure-torch reference"):
        assert q.quantize_backend("quantize_encode", "cpu") == "reference"
    monkeypatch.setenv("PYG_SAR_REQUIRE_NATIVE", "1")
    warn_reference_fallback.cache_clear()
    with pytest.raises(RuntimeError, match="PYG_SAR_REQUIRE_NATIVE"):
        q.quantize_backend("quantize_decode", "cpu")
    warn_reference_fallback.cache_clear()


def _codec_send(codec, x, ratio):
    bound = BoundCodec(codec, ratio, 3, 4, 0, 1)
    key = bound.key(0, 0, 1, "rows")
    payload = bound.encode(x, key)
    return payload, bound.decode(payload, tuple(x.shape[1:]), x.dtype, key)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
@pytest.mark.parametrize("ratio", [2.0, 4.0, 8.0, 16.0, 32.0])
def test_codec_backends_send_the_same_bytes(dtype, ratio):
    """Half types are quantised from float32 copies (header in float32), so they take the
    native path too; both backends send the same bytes of the same size."""
    x = (torch.randn(11, 3, 25) * 2).to(dtype)
    native, back_n = _codec_send(Quantize(backend="native"), x, ratio)
    reference, back_r = _codec_send(Quantize(backend="reference"), x, ratio)
    assert torch.equal(native, reference) and torch.equal(back_n, back_r)
    assert back_n.dtype == dtype and back_n.shape == x.shape
    sent = native.numel() * native.element_size()  # half types at 16 bits go raw
    assert Quantize().wire_bytes(11, (3, 25), dtype, ratio) == sent
    assert Quantize(backend="native") == Quantize()  # the backend changes no byte


def test_codec_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        Quantize(backend="gpu")
