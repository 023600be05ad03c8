"""``Compressor(logit_dtype=...)`` in one process: validation, ``describe``/resume, and which
encoding :meth:`Wire.codec_of` gives an ``exact`` tensor (attention logits) per direction and
step, with its payload sizes. The multi-rank checks (sar == sa, ledger bytes, ratio 1
bit-identical, a stage change back to raw logits) are in rank_cases.py (``logits`` group)."""
from __future__ import annotations

import pytest
import torch

from pyg_sar.compression import Compressor, Quantize, Stages, Truncate, make_compressor
from pyg_sar.compression.interface import check_logit_dtype
from pyg_sar.core.exchange import Wire

BF16 = torch.bfloat16
ALPHA, X = 1, 0


@pytest.mark.parametrize("value, expected", [
    (None, None), (BF16, BF16), ("bfloat16", BF16), ("bf16", BF16), (" BF16 ", BF16),
    ("torch.bfloat16", BF16), ("raw", None), ("none", None)])
def test_logit_dtype_is_normalised(value, expected):
    assert check_logit_dtype(value) is expected
    assert Compressor(Quantize(), 8.0, logit_dtype=value).logit_dtype is expected


@pytest.mark.parametrize("value", [torch.float16, "float16", "fp16", torch.float64,
                                   torch.float32, torch.int8, torch.int32, "int8", 16, True,
                                   "bfloat"])
def test_other_logit_dtypes_are_refused_naming_them(value):
    with pytest.raises(ValueError, match="logit_dtype") as err:
        Compressor(Quantize(), 8.0, logit_dtype=value)
    assert repr(value) in str(err.value)
    if value in (torch.float16, "float16", "fp16"):
        assert "65504" in str(err.value)


def test_describe_names_it_only_when_set():
    plain = Compressor(Truncate(), 4.0, seed=2)
    assert "logit_dtype" not in plain.describe()  # old checkpoints' describe() unchanged
    narrow = Compressor(Truncate(), 4.0, seed=2, logit_dtype=BF16)
    assert narrow.describe() == {**plain.describe(), "logit_dtype": "bfloat16"}
    assert "logit_dtype='bfloat16'" in repr(narrow)
    assert make_compressor("truncate", ratio_max=4.0, seed=2,
                           logit_dtype="bf16").describe() == narrow.describe()
    # a state saved without the setting does not load into a compressor with it, nor back
    with pytest.raises(ValueError, match="saved by"):
        narrow.load_state_dict(plain.state_dict())
    with pytest.raises(ValueError, match="saved by"):
        plain.load_state_dict(narrow.state_dict())
    fresh = Compressor(Truncate(), 4.0, seed=2, logit_dtype=BF16)
    narrow.step(5)
    fresh.load_state_dict(narrow.state_dict())
    assert fresh.t == 5


def _wire(comp: Compressor, wire_dtype=None) -> Wire:
    return Wire("conv", comp.bind(0), frozenset({ALPHA}), wire_dtype=wire_dtype)


@pytest.mark.parametrize("directions", ["both", "rows", "grads"])
def test_logits_cross_as_bf16_only_where_the_codec_is_lossy(directions):
    comp = Compressor(Quantize(), Stages([(16.0, 2)], final=1.0), logit_dtype=BF16,
                      directions=directions)
    lossy = _wire(comp)  # step 0: 2 bits
    comp.step(2)
    raw = _wire(comp)  # step 2: ratio 1
    logits = torch.randn(7, 4)  # [rows, heads]
    for direction in ("rows", "grads"):
        t = lossy.codec_of(ALPHA, direction)
        if direction != directions and directions != "both":
            assert t is None  # the codec sends this direction raw: so do the logits
            continue
        assert t is not None and t.codec is None and t.wire_dtype is BF16
        key = t.key(ALPHA, 0, 1, direction)
        payload = t.encode_rows(logits, torch.arange(7), key)
        assert payload.dtype == BF16 and payload.shape == (7, 4)
        assert t.wire_like(logits).dtype == BF16
        assert t.wire_bytes(7, (4,), torch.float32) == 7 * 4 * 2
        got = t.decode(payload, (4,), torch.float32, key)
        assert got.dtype == torch.float32 and torch.equal(got, logits.to(BF16).float())
        assert torch.equal(t.encode(logits, key), payload)  # deterministic: a re-fetch agrees
        assert raw.codec_of(ALPHA, direction) is None
    # the features still go through the codec (where it compresses their direction), uncast
    for direction in ("rows", "grads"):
        t = lossy.codec_of(X, direction)
        if directions in ("both", direction):
            assert t.codec is lossy.codec and t.wire_dtype is None
        else:
            assert t is None


def test_without_the_setting_or_a_codec_logits_go_raw():
    assert _wire(Compressor(Quantize(), 16.0)).codec_of(ALPHA, "rows") is None
    assert Wire("conv", None, frozenset({ALPHA}), wire_dtype=BF16).codec_of(ALPHA) is None
    # a wire dtype casts the features but never the logits; the logit dtype decides them
    w = _wire(Compressor(Truncate(), 2.0, logit_dtype=BF16), wire_dtype=torch.float32)
    assert w.codec_of(ALPHA).wire_dtype is BF16 and w.codec_of(X).wire_dtype is torch.float32


def test_float64_logits_are_narrowed_and_bf16_logits_left_alone():
    t = _wire(Compressor(Truncate(), 2.0, logit_dtype=BF16)).codec_of(ALPHA, "grads")
    x = torch.randn(3, 2, dtype=torch.float64)
    assert t.encode(x, None).dtype == BF16 and t.wire_bytes(3, (2,), torch.float64) == 12
    b = x.to(BF16)
    assert t.is_raw(b) and t.encode(b, None) is b
