"""Schedules: end points, the formulas (VARCO's exactly as the paper writes it), validation."""
from __future__ import annotations

import math

import pytest

from pyg_sar.compression import (
    SCHEDULES,
    Exponential,
    Fixed,
    KeepFraction,
    Linear,
    Quantize,
    Stages,
    Step,
    bit_stages,
    make_compressor,
    make_schedule,
    quantization_bits,
    varco,
)


def test_varco_matches_the_papers_formula():
    r_max, r_min, s, T = 128.0, 1.5, 5.0, 300
    sched = varco(r_max, r_min, s, T)
    for t in range(0, 400):
        paper = max(r_max - s * t * (r_max - r_min) / (T - 2), r_min)
        assert math.isclose(sched(t), paper, rel_tol=1e-12), t


def test_varco_default_ends_lossless():
    sched = varco()
    assert sched(0) == 128.0
    end = math.ceil(298 / 5)
    assert sched(end) == 1.0 and sched(end - 1) > 1.0 and sched(10_000) == 1.0


@pytest.mark.parametrize("kind", [Linear, Exponential, Step])
def test_decaying_schedules_hit_their_end_points(kind):
    sched = kind(64.0, 1.0, 100)
    assert sched(0) == 64.0
    assert sched(100) == 1.0 and sched(101) == 1.0 and sched(5000) == 1.0
    values = [sched(t) for t in range(0, 101)]
    assert all(a >= b for a, b in zip(values, values[1:]))  # never increases
    assert values[99] > 1.0


def test_linear_formula():
    sched = Linear(33.0, 3.0, 60)
    for t in (0, 1, 17, 59, 60, 61):
        assert math.isclose(sched(t), max(33.0 - t * 30.0 / 60, 3.0), rel_tol=1e-15)


def test_exponential_formula():
    sched = Exponential(128.0, 2.0, 50)
    for t in (0, 10, 25, 49):
        assert math.isclose(sched(t), 128.0 * (2.0 / 128.0) ** (t / 50), rel_tol=1e-14)
    assert math.isclose(sched(25), 16.0, rel_tol=1e-14)  # geometric midpoint


def test_step_formula():
    sched = Step(16.0, 1.0, 80, stages=4)
    expected = {0: 16.0, 19: 16.0, 20: 8.0, 39: 8.0, 40: 4.0, 60: 2.0, 79: 2.0, 80: 1.0}
    for t, r in expected.items():
        assert math.isclose(sched(t), r, rel_tol=1e-14), (t, sched(t))


def test_fixed():
    assert Fixed(8)(0) == 8.0 == Fixed(8)(10**6)


@pytest.mark.parametrize("make,match", [
    (lambda: Fixed(0.5), "ratio must be a finite number >= 1"),
    (lambda: Fixed(float("nan")), "ratio must be"),
    (lambda: Linear(2.0, 4.0, 10), "r_min must be <= r_max"),
    (lambda: Exponential(8.0, 1.0, 0), "decay_steps must be"),
    (lambda: Step(8.0, 1.0, 10, stages=0), "stages must be"),
    (lambda: varco(total_steps=2), "total_steps must be an integer > 2"),
    (lambda: varco(slope=0), "slope must be"),
    (lambda: make_schedule("cosine", 4.0), "unknown compression schedule 'cosine'"),
    (lambda: make_schedule("linear", 4.0), "needs decay_steps"),
    (lambda: KeepFraction(0.0), "start must be a kept fraction in \\(0, 1\\] \\(got 0.0\\)"),
    (lambda: KeepFraction(0.5, 1.5), "end must be a kept fraction .*got 1.5"),
    (lambda: KeepFraction(0.5, 0.25), "start must be <= end .*start=0.5, end=0.25"),
    (lambda: KeepFraction(0.5, 1.0, 0), "decay_steps must be a finite number > 0"),
    (lambda: KeepFraction(0.5, 1.0, 10, power=0), "power must be a finite number > 0 .*got 0"),
    (lambda: KeepFraction(float("nan")), "start must be"),
    (lambda: Stages([]), "stages must be a non-empty sequence"),
    (lambda: Stages([(4.0,)]), "stage 0 must be a \\(ratio, until\\) pair"),
    (lambda: Stages([(0.5, 3)]), "stage 0's ratio must be a finite number >= 1"),
    (lambda: Stages([(4.0, 0)]), "stage 0's until must be an integer step >= 1 \\(got 0\\)"),
    (lambda: Stages([(4.0, 2.5)]), "until must be an integer step"),
    (lambda: Stages([(4.0, 5), (2.0, 5)]), "strictly increasing \\(stage 1 ends at 5 after "
                                            "stage 0 at 5\\)"),
    (lambda: Stages([(4.0, 5)], final=0.9), "final must be a finite number >= 1"),
    (lambda: bit_stages((2, 3), (0.5, 0.9), 100), "bits must be among .*got 3"),
    (lambda: bit_stages((2, 4), (0.5,), 100), "equal length"),
    (lambda: bit_stages((2, 4), (0.6, 0.5), 100), "strictly increasing fractions"),
    (lambda: bit_stages((2,), (1.2,), 100), "fractions in \\(0, 1\\]"),
    (lambda: bit_stages(total_steps=0), "total_steps must be an integer >= 1"),
    (lambda: bit_stages(total_steps=2), "total_steps=2 is too small .*steps \\[1, 1, 2\\]"),
    (lambda: make_schedule("stages", 4.0, stages=[(2.0, 3)]), "not ratio_max=4.0"),
    (lambda: make_schedule("stages"), "needs stages"),
    (lambda: make_schedule("linear", 4.0, 1.0, 10, power=2.0), "power=2.0 is for the "
                                                               "'fraction' schedule"),
    (lambda: make_schedule("fixed", 4.0, stages=[(2.0, 3)]), "stages are for the 'stages'"),
    (lambda: make_schedule("fraction", 4.0), "needs decay_steps"),
    (lambda: make_schedule("fraction", 2.0, 4.0, 10), "ratio_min must be <= ratio_max"),
    (lambda: make_schedule("fraction", 0.5, 1.0, 10), "ratio_max must be a number >= 1"),
])
def test_bad_parameters_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_negative_step_is_refused():
    with pytest.raises(ValueError, match="step must be an integer >= 0"):
        Linear(4.0, 1.0, 10)(-1)


def test_keep_fraction_formula_and_end_points():
    sched = KeepFraction(1 / 32, 1.0, 100, power=3.0)
    for t in (0, 1, 17, 50, 80, 99):
        f = 1 / 32 + (1 - 1 / 32) * (t / 100) ** 3
        assert math.isclose(sched.fraction(t), f, rel_tol=1e-15)
        assert math.isclose(sched(t), 1 / f, rel_tol=1e-15)
    assert sched(0) == 32.0 and sched(100) == 1.0 and sched(10_000) == 1.0
    assert sched(99) > 1.0
    values = [sched(t) for t in range(0, 101)]
    assert all(a > b for a, b in zip(values, values[1:]))  # strictly decreasing ratio
    assert sched.fraction(80) >= 0.5  # the last 20% keeps half the channels or more
    partial = KeepFraction(0.25, 0.5, 10)
    assert partial(0) == 4.0 and partial(5) == 1 / 0.375 and partial(10) == partial(99) == 2.0


@pytest.mark.parametrize("power", [0.5, 1.0, 3.0])
def test_keep_fraction_mean(power):
    sched = KeepFraction(0.1, 0.9, 10_000, power=power)
    mean = sum(sched.fraction(t) for t in range(10_000)) / 10_000  # left Riemann sum
    assert math.isclose(sched.mean_fraction(), 0.1 + 0.8 / (power + 1), rel_tol=1e-15)
    assert abs(mean - sched.mean_fraction()) < 1e-4
    assert math.isclose(KeepFraction(1 / 32, power=3).mean_fraction(), 0.2734375)


def test_stages_formula():
    sched = Stages([(16.0, 3), (4, 7)], final=2.0)
    expected = {0: 16.0, 2: 16.0, 3: 4.0, 6: 4.0, 7: 2.0, 1000: 2.0}
    assert {t: sched(t) for t in expected} == expected
    assert Stages([(8.0, 1)])(0) == 8.0 and Stages([(8.0, 1)])(1) == 1.0


def test_bit_stages_quantize_at_exactly_those_bits():
    sched = bit_stages((2, 4, 8), (0.35, 0.65, 0.95), 100)
    assert sched.stages == [(16.0, 35), (8.0, 65), (4.0, 95)] and sched.final == 1.0
    bits = [quantization_bits(sched(t)) for t in range(120)]
    assert bits == [2] * 35 + [4] * 30 + [8] * 30 + [32] * 25
    assert [quantization_bits(32 / b) for b in (1, 2, 4, 8, 16)] == [1, 2, 4, 8, 16]
    assert bit_stages((4, 8), (0.65, 0.95), 40).stages == [(8.0, 26), (4.0, 38)]
    # the stage ends scale with total_steps (Python's round: half to even)
    assert [u for _, u in bit_stages(total_steps=300).stages] == [105, 195, 285]
    assert [u for _, u in bit_stages(total_steps=4).stages] == [1, 3, 4]


def test_new_schedules_describe_and_repr():
    frac = KeepFraction(0.25, 1.0, 40, power=3)
    assert frac.describe() == {"name": "fraction", "start": 0.25, "end": 1.0,
                               "decay_steps": 40.0, "power": 3.0}
    assert repr(frac) == "KeepFraction(start=0.25, end=1.0, decay_steps=40.0, power=3.0)"
    st = bit_stages((2, 8), (0.5, 1.0), 10)
    assert st.describe() == {"name": "stages", "stages": [(16.0, 5), (4.0, 10)], "final": 1.0}
    assert repr(st) == "Stages(stages=[(16.0, 5), (4.0, 10)], final=1.0)"
    assert SCHEDULES["fraction"] is KeepFraction and SCHEDULES["stages"] is Stages


def test_make_schedule_fraction_and_stages():
    frac = make_schedule("fraction", 32.0, 2.0, 50, power=3.0)
    assert isinstance(frac, KeepFraction)
    assert frac.describe() == {"name": "fraction", "start": 1 / 32, "end": 0.5,
                               "decay_steps": 50.0, "power": 3.0}
    assert make_schedule("fraction", 4.0, decay_steps=10).power == 1.0
    st = make_schedule("stages", stages=[(16, 5), (4.0, 9)], ratio_min=2.0)
    assert isinstance(st, Stages) and st.stages == [(16.0, 5), (4.0, 9)] and st.final == 2.0
    assert make_schedule("fixed").describe() == {"name": "fixed", "ratio": 1.0}
    comp = make_compressor("quantize", "stages", stages=bit_stages(total_steps=20).stages,
                           seed=3)
    assert comp.codec == Quantize() and comp.seed == 3 and comp.ratio() == 16.0
    comp.step(18)
    assert comp.ratio() == 4.0
    comp.step(19)
    assert comp.ratio() == 1.0
