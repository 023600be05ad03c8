"""PyG's RGCN + DistMult link model (``rgcn_link_pred.py``: ``GAE`` over an RGCN encoder with a
node table and a DistMult decoder), called through ``encode`` / ``decode`` as PyG's script
calls it, at P = 1 and 3 against single-process PyG (float64): per-step losses and final
parameters (the node table compared row by row through ``node_ids``) within 1e-10. torch's own
``clip_grad_norm_`` on several ranks (each rank sees its own rows of the sharded table) is
refused by the drift check; ``pyg_sar.clip_grad_norm_`` is exact. Rank side:
``rgcn_distmult_cases.py``."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TOL = 1e-10


@pytest.fixture(scope="module")
def launches() -> dict[int, list[dict]]:
    from pyg_sar.testing import run_on_ranks
    return {p: run_on_ranks(f"{HERE / 'rgcn_distmult_cases.py'}:suite", p, timeout=240)
            for p in (1, 3)}


@pytest.mark.parametrize("p", [1, 3])
def test_rgcn_distmult_trains_as_one_process(launches, p):
    for res in launches[p]:
        assert res["steps"] == 5
        assert res["min_norm_over_clip"] > 1.0  # every step was clipped
        assert res["losses"] <= TOL, res
        assert max(res["params"].values()) <= TOL, res["params"]


@pytest.mark.parametrize("p", [1, 3])
def test_torch_clip_on_a_sharded_table_is_refused(launches, p):
    """On several ranks the drift check names the parameters the ranks updated differently."""
    for res in launches[p]:
        err = res["torch_clip"]
        if p == 1:
            assert err["type"] is None, err  # one process: torch's clip is the same thing
        else:
            assert err["type"] == "RuntimeError" and "differ between ranks" in err["message"]
