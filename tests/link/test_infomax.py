"""PyG's DeepGraphInfomax converted (``pyg_sar.nn.infomax``): exact against single-process PyG
on Cora (float64, rel. err <= 1e-10) at P = 1 and 3: embeddings, corrupted embeddings (the
permutation of all nodes keyed by (seed, epoch), the same at every P), the summary on the
global node mean, the first gradients, a 6-step Adam loss curve and the final parameters; the
rows ``test`` gathers are the oracle's and, with scikit-learn installed, the test accuracy is
PyG's. A summary that is not a function of the node mean and a corruption that shuffles within
a rank are refused on every rank. Rank side: ``infomax_cases.py`` (one launch per P)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn import DeepGraphInfomax

import pyg_sar
from pyg_sar.nn import infomax
from tests.link import infomax_cases as ic

HERE = Path(__file__).resolve().parent

TOL = 1e-10
CASES = {1: [["sar", 0]], 3: [["sar", 0], ["halo", 1]]}
KEYS = ("pos_z", "neg_z", "summary", "grad", "curve", "final", "test_rows")


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("infomax")
    data = ic.graph()
    out = {}
    for p, cases in CASES.items():
        pyg_sar.partition_graph(data, p, root / f"cora{p}", method="metis" if p > 1 else
                                "random", seed=p)
        out[p] = run_on_ranks(f"{HERE / 'infomax_cases.py'}:suite", p, timeout=400,
                              kwargs=dict(cases=cases, parts=str(root / f"cora{p}")))
    return out


CASE_IDS = [(p, f"{m}/{s}") for p, cs in CASES.items() for m, s in cs]


@pytest.mark.parametrize("p,key", CASE_IDS, ids=[f"P{p}-{k}" for p, k in CASE_IDS])
def test_infomax_exact(launches, p, key):
    for rank, res in enumerate(r[key] for r in launches[p]):
        assert res["steps"] == ic.STEPS
        for k in KEYS:
            assert res[k] <= TOL, f"P={p} {key} rank {rank}: {k} rel. err {res[k]:.3g}"
        assert res["test_labels_equal"] and res["epoch_equal"] and res["copy_ok"]
        assert res["acc"] == res["ref_acc"], f"P={p} {key} rank {rank}: accuracy differs"


@pytest.mark.parametrize("p", sorted(CASES))
def test_infomax_refusals_on_every_rank(launches, p):
    for rank, res in enumerate(r["refusals"] for r in launches[p]):
        for name in ("summary_sum", "summary_max"):
            assert "z.mean(dim=0)" in res[name] and "distributed_summary" in res[name], \
                f"P={p} rank {rank}: {name}: {res[name]!r}"
        assert "pyg_sar.nn.infomax.corruption(seed=0)" in res["corruption"], \
            f"P={p} rank {rank}: {res['corruption']!r}"
        assert res["nodewise"] <= TOL


def test_sklearn_accuracy_measured(launches):
    pytest.importorskip("sklearn")
    accs = {r[k]["acc"] for p in CASES for r in launches[p] for k in r if k != "refusals"}
    assert None not in accs


# ---- single process ----------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 65, 2708, 30_011])
def test_permutation_is_a_bijection(n):
    for epoch in (0, 1):
        perm = infomax.permutation(n, seed=5, epoch=epoch)
        assert torch.equal(perm.sort().values, torch.arange(n))
    if n > 64:
        assert not torch.equal(infomax.permutation(n, 5, 0), infomax.permutation(n, 5, 1))
        assert not torch.equal(infomax.permutation(n, 5, 0), infomax.permutation(n, 6, 0))
        assert (infomax.permutation(n, 5, 0) == torch.arange(n)).float().mean() < 0.05


def test_permute_ids_is_elementwise():
    ids = torch.tensor([[4, 0], [99, 4]])
    perm = infomax.permutation(100, seed=1, epoch=2)
    assert torch.equal(infomax.permute_ids(ids, 100, 1, 2), perm[ids])
    with pytest.raises(ValueError, match="ids must lie"):
        infomax.permute_ids(torch.tensor([100]), 100, 1, 2)


def test_corruption_counts_epochs_over_a_plain_graph():
    x = torch.randn(10, 3)
    cor = infomax.corruption(seed=4, start_epoch=2)
    ei = torch.zeros(2, 0, dtype=torch.long)
    for epoch in (2, 3):
        got, same = cor(x, ei)
        assert same is ei
        assert torch.equal(got, x[infomax.permutation(10, 4, epoch)])
    assert cor.epoch == 4 and "epoch=4" in repr(cor)


def test_convert_accepts_and_unconvert_restores():
    model = ic.model_pair(8)[1]
    pyg_sar.convert(model)
    assert type(model).__module__ == "pyg_sar.nn.infomax"
    assert isinstance(model, DeepGraphInfomax)
    pyg_sar.convert(model)  # a second call changes nothing
    pyg_sar.unconvert(model)
    assert type(model) is DeepGraphInfomax


def test_plain_graph_runs_pygs_methods():
    """Over a plain edge_index the converted model is PyG's (same values, no communication)."""
    torch.manual_seed(0)
    data = Data(x=torch.randn(12, 5, dtype=torch.float64),
                edge_index=torch.randint(0, 12, (2, 40)))
    ref, model = ic.model_pair(5)
    pyg_sar.convert(model)
    a = ref.loss(*ref(data.x, data.edge_index))
    b = model.loss(*model(data.x, data.edge_index))
    assert torch.equal(a, b)


def test_subclass_overriding_loss_is_refused():
    class Mine(DeepGraphInfomax):
        def loss(self, pos_z, neg_z, summary):
            return super().loss(pos_z, neg_z, summary)

    ref, _ = ic.model_pair(4)
    model = copy.deepcopy(ref)
    model.__class__ = Mine
    with pytest.raises(pyg_sar.UnsupportedLayerError, match="overrides loss"):
        pyg_sar.convert(model)
