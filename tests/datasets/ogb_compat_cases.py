"""Rank side of test_ogb_compat.py: OGB's Evaluator over every rank's rows."""
from __future__ import annotations

import torch


def evaluator_over_ranks(ctx) -> float:
    """Each rank scores its own third of the rows (rank 2 none when P = 3: rows split 0/1)."""
    from pyg_sar.datasets import Evaluator
    y_true = torch.tensor([[0], [1], [2], [1], [0], [2], [1]])
    y_pred = torch.tensor([[0], [2], [2], [1], [1], [2], [0]])
    rows = [range(0, 4), range(4, 7), range(0)][ctx.rank]
    rows = torch.tensor(list(rows), dtype=torch.long)
    return Evaluator("ogbn-products").eval({"y_true": y_true[rows], "y_pred": y_pred[rows]})["acc"]
