"""The ``auto`` preset: one compressor for the inner layers, one with a 4-bit floor for the last,
stage ends that scale with the run, the bytes it sends, its parameters and its overrides."""
from __future__ import annotations

import json

import pytest
import torch
from torch_geometric.nn import GraphSAGE

import pyg_sar
from pyg_sar.compression import AUTO, Quantize, auto, compressors_of, quantization_bits
from pyg_sar.compression.presets import AutoRule


def _bits(comp, total):
    return [quantization_bits(comp.ratio(t)) for t in range(total + 5)]


def test_inner_layers_share_one_compressor_and_the_last_has_its_own():
    rule = auto(100, seed=3)
    assert isinstance(rule, AutoRule)
    inner, last = rule("convs.0", 0, 3), rule("convs.2", 2, 3)
    assert rule("convs.1", 1, 3) is inner and last is not inner
    assert (inner, last) == (rule.inner, rule.last)
    assert rule("conv", 0, 1) is last  # one layer: it is the last one
    for comp in (inner, last):
        assert comp.codec == Quantize() and comp.seed == 3
        assert comp.error_feedback == "none" and comp.directions == "both"
        assert comp.feedback is None  # unbiased rounding: no residual kept by default
        assert comp.logit_dtype is torch.bfloat16  # GAT's logits cross as bf16 while lossy
        assert comp.describe()["logit_dtype"] == "bfloat16"


def test_bit_ladders_and_the_last_layers_floor():
    rule = auto(100)
    assert _bits(rule.inner, 100) == [4] * 80 + [8] * 15 + [32] * 10
    assert _bits(rule.last, 100) == [4] * 80 + [8] * 15 + [32] * 10
    assert min(_bits(rule.last, 100)) == 4


@pytest.mark.parametrize("total", [20, 80, 300])
def test_stage_ends_scale_with_total_steps(total):
    rule = auto(total)
    assert [u for _, u in rule.inner.schedule.stages] == [round(e * total)
                                                         for e in (0.80, 0.95)]
    assert [u for _, u in rule.last.schedule.stages] == [round(0.80 * total),
                                                        round(0.95 * total)]
    assert rule.inner.ratio(total) == rule.last.ratio(total) == 1.0  # ends lossless


def test_mean_bytes_of_32_wide_float32_rows():
    """The preset's byte fraction at hidden 32 (the benchmark's width): 4/8 bits send 24/40 of
    128 bytes a row (packed codes plus a float32 low and scale)."""
    total, shape = 1000, (32,)
    rule = auto(total)

    def mean_rel(comp):
        sent = sum(comp.codec.wire_bytes(1, shape, torch.float32, comp.ratio(t))
                   for t in range(total))
        return sent / (total * 128)
    inner, last = mean_rel(rule.inner), mean_rel(rule.last)
    assert inner == last == pytest.approx(0.80 * 24 / 128 + 0.15 * 40 / 128 + 0.05)
    assert (2 * inner + last) / 3 < 0.25  # 3 layers of equal bytes: about 24.7%


def test_describe_quotes_the_parameters():
    rule = auto(80)
    expected = {"codec": "quantize", "bits": [4, 8], "ends": [0.80, 0.95],
                "last_bits": [4, 8], "last_ends": [0.80, 0.95], "error_feedback": "none",
                "directions": "both", "logit_dtype": "bfloat16", "total_steps": 80}
    assert rule.describe() == expected
    assert json.loads(json.dumps(rule.describe())) == expected
    assert {k: v for k, v in expected.items() if k != "total_steps"} == json.loads(
        json.dumps(AUTO))
    assert rule.inner.describe()["schedule"] == {
        "name": "stages", "stages": [(8.0, 64), (4.0, 76)], "final": 1.0}


def test_overrides_build_the_candidates():
    c1 = auto(100, bits=(4, 8), ends=(0.60, 0.95), last_ends=(0.60, 0.95))
    assert _bits(c1.inner, 100) == _bits(c1.last, 100) == [4] * 60 + [8] * 35 + [32] * 10
    assert _bits(auto(100, bits=(4, 8), ends=(0.60, 0.95)).last, 100) == _bits(
        auto(100).last, 100)  # the last layer's ladder is its own
    c4 = auto(100, bits=[2, 4, 8], ends=[0.45, 0.80, 0.95])  # the earlier 2-bit preset
    assert _bits(c4.inner, 100) == [2] * 45 + [4] * 35 + [8] * 15 + [32] * 10
    assert _bits(c4.last, 100) == [4] * 80 + [8] * 15 + [32] * 10
    assert c4.describe()["ends"] == [0.45, 0.8, 0.95]
    no_ef = auto(100)
    assert no_ef.inner.feedback is None and "error_feedback" not in no_ef.inner.describe()
    ef = auto(100, error_feedback="both")
    assert ef.inner.feedback is not None and ef.last.describe()["error_feedback"] == "both"
    rows = auto(100, directions="rows")
    assert (rows.last.directions, rows.last.error_feedback) == ("rows", "none")
    rows = auto(100, directions="rows", error_feedback="rows")
    assert (rows.last.directions, rows.last.error_feedback) == ("rows", "rows")
    assert AUTO["bits"] == (4, 8)  # the overrides leave the preset alone
    raw = auto(100, logit_dtype="raw")
    assert raw.inner.logit_dtype is None and "logit_dtype" not in raw.last.describe()
    assert raw.describe()["logit_dtype"] == "raw"
    assert auto(100, logit_dtype=torch.bfloat16).describe() == auto(100).describe()


@pytest.mark.parametrize("kwargs,match", [
    ({"bits": (2, 3, 8), "ends": (0.4, 0.8, 0.95)}, "bits must be among"),
    ({"last_ends": (0.9, 0.5)}, "strictly increasing"),
    ({"error_feedback": "sideways"}, "error_feedback must be one of"),
    ({"error_feedback": "both", "directions": "rows"}, "feeds back"),
    ({"logit_dtype": torch.float16}, "float16 is not offered"),
    ({"logit_dtype": "int8"}, "logit_dtype must be None or torch.bfloat16"),
])
def test_bad_overrides_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        auto(100, **kwargs)


def test_too_short_a_run_is_refused():
    with pytest.raises(ValueError, match="total_steps=2 is too small"):
        auto(2)


def test_convert_attaches_both_compressors():
    rule = auto(50)
    model = pyg_sar.convert(GraphSAGE(4, 8, num_layers=3, out_channels=2),
                            pyg_sar.SARConfig(compression=rule))
    assert compressors_of(model) == {"convs.0": rule.inner, "convs.2": rule.last}
    pyg_sar.compression.step_all(model, 30)
    assert (rule.inner.ratio(), rule.last.ratio()) == (8.0, 8.0)
