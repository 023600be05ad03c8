"""tests/closeness.py, the suite's one closeness check: shapes, dtypes, empty tensors, infinities
and nans the same way everywhere, and a failure message that names what differs and where."""
from __future__ import annotations

import math

import pytest
import torch

from tests.closeness import assert_close, max_abs_diff, rel_error


def test_empty_tensors_are_equal():
    assert max_abs_diff(torch.zeros(0, 3), torch.zeros(0, 3)) == 0.0
    assert rel_error(torch.zeros(0), torch.zeros(0, dtype=torch.float64)) == 0.0
    assert_close(torch.zeros(0, 2), torch.ones(0, 2), atol=0.0)


def test_a_shape_mismatch_is_an_error_not_a_broadcast():
    for fn in (max_abs_diff, rel_error):
        with pytest.raises(AssertionError, match=r"shape \(3,\) != expected \(3, 1\)"):
            fn(torch.zeros(3), torch.zeros(3, 1))
    with pytest.raises(AssertionError, match=r"^out: shape"):
        assert_close(torch.zeros(3), torch.zeros(1), atol=1.0, what="out")


def test_dtypes_and_numbers_compare_in_float64():
    a = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    e = torch.tensor([1.0, 2.5], dtype=torch.float64)
    assert max_abs_diff(a, e) == 0.5
    assert rel_error(a, e) == 0.5 / 2.5
    assert max_abs_diff(torch.tensor(3), 1) == 2.0  # integers, a Python number (0-d)
    assert rel_error(torch.ones(2), torch.zeros(2)) > 1e200  # against an all-zero reference
    assert rel_error(torch.zeros(2), torch.zeros(2)) == 0.0


def test_nan_and_inf():
    assert math.isnan(max_abs_diff(torch.tensor([float("nan")]), torch.tensor([1.0])))
    inf = torch.tensor([1.0, float("inf")])
    assert_close(inf, inf.clone(), atol=0.0)  # equal infinities are close
    with pytest.raises(AssertionError, match="largest difference nan at index"):
        assert_close(torch.tensor([float("nan")]), torch.tensor([float("nan")]), atol=1.0)


def test_assert_close_tolerances_and_message():
    want = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    got = want.clone()
    got[1, 0] += 0.1
    assert_close(got, want, atol=0.1 + 1e-12)
    assert_close(got, want, atol=0.0, rtol=0.034)  # 0.1 <= 0.034 * 3
    with pytest.raises(AssertionError) as err:
        assert_close(got, want, atol=1e-3, rtol=1e-3, what="x grad")
    msg = str(err.value)
    assert msg.startswith("x grad: 1 of 4 entries not within atol=0.001, rtol=0.001")
    assert "largest difference 1.000e-01 at index (1, 0)" in msg
    assert "(actual 3.1, expected 3.0)" in msg


def test_rel_norm_error_is_the_norm_ratio():
    from tests.closeness import rel_norm_error
    want = torch.tensor([3.0, 4.0], dtype=torch.float64)
    assert rel_norm_error(want + torch.tensor([0.0, 0.5]), want) == 0.5 / 5.0
    assert rel_norm_error(torch.empty(0), torch.empty(0)) == 0.0
    with pytest.raises(AssertionError, match="shape"):
        rel_norm_error(torch.zeros(2), torch.zeros(3))
