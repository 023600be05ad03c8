"""``python -m pyg_sar.plan --norm none``: plans a model without batch norm (``pyg_sar.train``'s
default), which saves fewer tensors per node than the planner's default ``batch_norm``."""
from __future__ import annotations

import pytest

from pyg_sar import plan

SIZES = ["--nodes", "100000", "--edges", "1000000", "--features", "16", "--classes", "8",
         "--world-sizes", "4"]


def _peak(capsys, argv: list[str]) -> float:
    assert plan.main(SIZES + argv) == 0
    row = next(ln.split() for ln in capsys.readouterr().out.splitlines()
               if ln.startswith("sage  sar"))
    return float(row[4])


def test_norm_none_matches_workload_without_norm(capsys):
    w = dict(num_nodes=100_000, num_edges=1_000_000, num_features=16, num_classes=8,
             world_size=4)
    none = _peak(capsys, ["--norm", "none"])
    batch = _peak(capsys, [])
    assert none == pytest.approx(plan.predict(plan.Workload(**w, norm=False)).peak_bytes
                                 / plan.MB, abs=0.01)
    assert batch == pytest.approx(plan.predict(plan.Workload(**w)).peak_bytes / plan.MB,
                                  abs=0.01)
    assert none < batch
