"""Link prediction against single-process PyG on the same RandomLinkSplit and the same
negatives, P = 1, 3, 4, modes sar / sa / halo, float64, relative error <= 1e-10.

Encoders GCN and GraphSAGE (PyG's 2-layer BasicGNNs) with a dot-product and an MLP decoder over
the pair ends (``pyg_sar.gather``), the global BCE over all ranks' pairs: node embeddings, pair
scores, the negatives themselves, the loss, every parameter gradient, the validation and test
scores and AUC (``link_cases.one_case``); and a 20-step Adam training curve with fresh
negatives per step whose losses are PyG's (``link_cases.curve``). One launch per P runs every
case. The ranks' parts of the split come from ``link_cases.hand_split`` (``pyg_sar.distribute``
of each split's message-passing graph, pairs assigned to the owner of their source), which
checks gather, negatives, the global loss and the engine independently of the split
partitioner, and (each encoder / decoder once, and the curve) from the split partitioner,
``pyg_sar.distribute(triple)``. LightGCN with its BPR loss is checked the same way, at
P = 1, 3, 4 in the three modes, in ``test_embedding_models.py``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pyg_sar.testing import run_on_ranks

HERE = Path(__file__).resolve().parent

TOL = 1e-10
MODES = ("sar", "sa", "halo")
CASES = [[enc, dec, mode] for enc in ("gcn", "sage") for dec in ("dot", "mlp") for mode in MODES]
# On the split partitioner's parts (pyg_sar.distribute of the triple): each encoder / decoder
# once, the modes in turn, and the curve.
PARTITION_CASES = [[enc, dec, MODES[i % 3]] for i, (enc, dec) in enumerate(
    (e, d) for e in ("gcn", "sage") for d in ("dot", "mlp"))]
CURVE_CASE = ["sage", "mlp", "sar"]
STEPS = 20
WORLD_SIZES = (1, 3, 4)


@pytest.fixture(scope="module")
def results():
    return {p: run_on_ranks(f"{HERE / 'link_cases.py'}:suite", p, timeout=240,
                            kwargs=dict(cases=CASES, curve_case=CURVE_CASE, steps=STEPS,
                                        partition_cases=PARTITION_CASES))
            for p in WORLD_SIZES}


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "/".join(c))
def test_link_step_matches_pyg(results, world_size, case):
    for rank, res in enumerate(results[world_size]):
        got = res["/".join(case)]
        worst = {k: v for k, v in got["errors"].items() if not v <= TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", PARTITION_CASES, ids=lambda c: "/".join(c))
def test_link_step_on_partitioned_split_matches_pyg(results, world_size, case):
    for rank, res in enumerate(results[world_size]):
        got = res["partition/" + "/".join(case)]
        worst = {k: v for k, v in got["errors"].items() if not v <= TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("which", ["curve", "partition/curve"])
def test_training_curve_matches_pyg(results, world_size, which):
    for rank, res in enumerate(results[world_size]):
        c = res[which]
        assert len(c["losses"]) == STEPS
        errs = [abs(a - b) / abs(b) for a, b in zip(c["losses"], c["losses_ref"])]
        assert max(errs) <= TOL, (rank, errs)
        assert c["param_err"] <= TOL, (rank, c["param_err"])
        # the curve moves: a model that never stepped would pass the comparisons above only if
        # PyG's did not move either
        assert c["losses_ref"][-1] < c["losses_ref"][0] - 1e-3, c["losses_ref"]
