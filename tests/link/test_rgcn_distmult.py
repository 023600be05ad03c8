"""PyG's RGCN + DistMult link model (``rgcn_link_pred.py``: ``GAE`` over an RGCN encoder with a
node table and a DistMult decoder), called through ``encode`` / ``decode`` as PyG's script
calls it, at P = 1 and 3 against single-process PyG (float64): per-step losses and final
parameters (the node table compared row by row through ``node_ids``) within 1e-10. torch's own
``clip_grad_norm_`` on several ranks (each rank sees its own rows of the sharded table) is
refused by the drift check; ``pyg_sar.clip_grad_norm_`` is exact. The script's evaluation
(``compute_mrr``: filtered ranks against every node) is ``pyg_sar.link.FilteredMRR``, and its
head-or-tail corruption ``pyg_sar.link.corrupt_pairs``; both are compared with one process on
the whole graph. Rank side:
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


@pytest.mark.parametrize("p", [1, 3])
def test_filtered_mrr_is_the_scripts_compute_mrr(launches, p):
    """The mean reciprocal filtered rank of the validation triples over all ranks equals
    PyG's loop over every triple and every node in one process."""
    for res in launches[p]:
        assert res["mrr_error"] <= 1e-6, (res["mrr"], res["mrr_want"])
        assert res["mrr_chunked"] == res["mrr"]
        # a plain tensor of ids may be original ids: refused on every rank, naming the fix
        err = res["mrr_plain_pairs"]
        assert err["type"] == "ValueError" and "to_new_ids" in err["message"], err
        assert 0 < res["mrr"] <= 1


@pytest.mark.parametrize("p", [1, 3])
def test_corrupt_pairs_is_the_same_at_every_p(launches, p):
    """Each rank's corrupted pairs, mapped to original ids, are those the single-process
    reference draws for the same pairs; one end changes at most; the coin is fair-ish."""
    total = 0
    for res in launches[p]:
        for epoch, c in res["corrupt"].items():
            assert c["equal"] and c["changed_one_end"], (epoch, c)
        total += res["corrupt"]["0"]["n"]
        assert 0.3 < res["heads_replaced"] < 0.7
        assert res["bad_num_nodes"]["type"] == "ValueError"
        assert "num_nodes=51" in res["bad_num_nodes"]["message"]
        assert res["plain_pairs"]["type"] == "ValueError"
        assert "PairIds" in res["plain_pairs"]["message"]
    assert total > 0
