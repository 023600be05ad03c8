"""Schedules: end points, the formulas (VARCO's exactly as the paper writes it), validation."""
from __future__ import annotations

import math

import pytest

from pyg_sar.compression import Exponential, Fixed, Linear, Step, make_schedule, varco


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
])
def test_bad_parameters_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_negative_step_is_refused():
    with pytest.raises(ValueError, match="step must be an integer >= 0"):
        Linear(4.0, 1.0, 10)(-1)
