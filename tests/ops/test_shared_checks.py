"""The argument checks every op family shares (csrc/ops/checks.cpp): on CPU tensors they read the
values in place and name the offending ones, whichever family the op belongs to."""
from __future__ import annotations

import pytest
import torch

from pyg_sar.ops import native_available

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="needs the native library pyg_sar._C (pip install -e .)")
ops = torch.ops.pyg_sar if native_available() else None


def test_csr_rules_are_the_same_in_every_family():
    rowptr, col = torch.tensor([0, 3, 1, 4]), torch.tensor([0, 1, 0, 1])
    msg = r"rowptr must be non-decreasing \(got rowptr\[1\] = 3 > rowptr\[2\] = 1\)"
    with pytest.raises(ValueError, match="gat_transpose: " + msg):
        ops.gat_transpose(rowptr, col, 2)
    with pytest.raises(ValueError, match="gather_aggregate: " + msg):
        ops.gather_aggregate(rowptr, col, torch.zeros(2, 3), None, "sum")
    with pytest.raises(ValueError, match=r"gat_transpose: col values must lie in \[0, num_src\) "
                                         r"= \[0, 2\) \(got min -1, max 1\)"):
        ops.gat_transpose(torch.tensor([0, 2, 4]), torch.tensor([0, 1, -1, 1]), 2)


def test_pointer_checks_name_the_values():
    weight = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"bulk_sample_weighted: ptr must be non-decreasing "
                                         r"\(got ptr\[1\] = 2 > ptr\[2\] = 1\)"):
        ops.bulk_sample_weighted(torch.tensor([0, 2, 1, 3]), weight, torch.tensor([1, 2, 3]), 1)
    with pytest.raises(ValueError, match=r"ptr must run from 0 to the number of weights 3 "
                                         r"\(got 0 \.\. 2\)"):
        ops.bulk_sample_weighted(torch.tensor([0, 2]), weight, torch.tensor([1]), 1)
    bad = torch.tensor([1.0, float("nan"), 3.0], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"weights must be finite and >= 0 \(got nan at "
                                         r"position 1\)"):
        ops.bulk_sample_weighted(torch.tensor([0, 3]), bad, torch.tensor([1]), 1)


def test_range_checks_name_min_and_max():
    rowptr, col = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    with pytest.raises(ValueError, match=r"bulk_extract_columns: row_batch must lie in \[0, k\) = "
                                         r"\[0, 1\) \(got min 0, max 1\)"):
        ops.bulk_extract_columns(rowptr, col, torch.tensor([0, 1]), torch.tensor([0, 1]),
                                 torch.tensor([0, 1]), torch.tensor([1]), 2)
    x = torch.zeros(2, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"gather_aggregate_backward: arg values must lie in "
                                         r"\[-1, E\) = \[-1, 3\) \(got min 0, max 3\)"):
        ops.gather_aggregate_backward(torch.ones(2, 1, dtype=torch.float64), rowptr, col, x,
                                      None, torch.tensor([[0], [3]]), "max", 2, False)
