"""The batch-norm reductions over row chunks equal the whole-tensor ones (and take no rows)."""
from __future__ import annotations

import torch

from pyg_sar.nn import norm


def test_product_sum_in_chunks_matches_the_full_product(monkeypatch):
    monkeypatch.setattr(norm, "_CHUNK_ELEMENTS", 100)  # many chunks, one of them partial
    a = torch.randn(5003, 3, 7, dtype=torch.float64)
    b = torch.randn_like(a)
    torch.testing.assert_close(norm._product_sum(a, b, [0, 2]), (a * b).sum([0, 2]),
                               rtol=1e-12, atol=1e-12)


def test_product_sum_of_no_rows_is_zero():
    a = torch.randn(0, 4, dtype=torch.float64)
    assert torch.equal(norm._product_sum(a, a, [0]), torch.zeros(4, dtype=torch.float64))
