"""Cross-rank reductions for graph preprocessing (pyg_sar.core.reduce): sums of halo rows at
their owners (the adjoint of with_halo), the weighted out-degree built on it, and a global
maximum with Tensor.max()'s gradient; at P = 1 in process and P = 3 on real processes."""
from __future__ import annotations

from pathlib import Path

import pyg_sar
from tests.core import engine_cases as ec
from tests.core import reduce_cases


def _assert_exact(res: dict) -> None:
    for key, err in res.items():
        assert abs(err) <= 1e-12, (key, err)


def test_reductions_single_process(tmp_path):
    pyg_sar.partition_graph(ec.make_graph(), 1, tmp_path / "p1", method="random")

    class Ctx:
        rank, world_size = 0, 1
    _assert_exact(reduce_cases.reductions(Ctx(), str(tmp_path / "p1")))


def gloo3_call(root: Path) -> list:
    """The reductions of the shared P = 3 spawn/gloo launch (tests/core/conftest.py): their
    partition and ``[name, module, function, kwargs]``."""
    pyg_sar.partition_graph(ec.make_graph(), 3, root, method="random", seed=2)
    return ["reductions", "tests.core.reduce_cases", "reductions", {"parts": str(root)}]


def test_reductions_three_ranks(gloo3_launch):
    """Under spawn/gloo, in the launch shared with test_engine_helpers.py and
    test_model_adapters.py."""
    results = gloo3_launch["reductions"]
    assert len(results) == 3
    for rank, res in enumerate(results):
        assert set(res) >= {"owners_count", "adjoint", "out_degree", "max_grad"}, rank
        _assert_exact(res)
