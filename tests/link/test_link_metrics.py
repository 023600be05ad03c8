"""Global link-prediction metrics and losses (pyg_sar.link.metrics, pyg_sar.link.topk): at
P = 1, 3, 4 (one launch per P, every case inside: link_metrics_cases.suite) each rank's value
equals the single-process reference on the concatenated data (AUC: a direct count of the
pairs; MRR / Hits@K: OGB's evaluator formulas; recall / precision / NDCG: PyG's
torch_geometric.metrics; top-k: a full score matrix; BPR: PyG's BPRLoss, with synchronised
gradients of a converted model), including ties, a rank with no rows and k above the count;
bad input raises ValueError on every rank. In one process without a context: the same cases,
and the input checks."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import pyg_sar.nn.functional as SF
from pyg_sar.link.metrics import (
    bpr_loss,
    hits_at_k,
    mrr,
    ndcg_at_k,
    recall_at_k,
    roc_auc,
)
from pyg_sar.link.topk import topk_items

HERE = Path(__file__).resolve().parent
CASES = HERE / "link_metrics_cases.py"
WORLD_SIZES = (1, 3, 4)
TOL = 1e-12
lc = runpy.run_path(str(CASES))


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("link_metrics")
    out = {}
    for p in WORLD_SIZES:
        pyg_sar.partition_graph(lc["model_graph"](), p, root / f"p{p}", method="random",
                                seed=p)
        out[p] = run_on_ranks(f"{CASES}:suite", p, timeout=300,
                              kwargs={"parts": str(root / f"p{p}")})
    return out


def _check_values(cases: dict, where) -> int:
    checked = 0
    for name, value in cases.items():
        if isinstance(value, dict):  # top-k lists
            assert value["ids_equal"] and value["inf_equal"], (where, name, value)
            assert value["scores"] <= TOL, (where, name, value)
        else:
            got, want = value
            assert lc["_rel"](got, want) <= TOL, (where, name, got, want)
        checked += 1
    return checked


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_metrics_equal_single_process(launches, p):
    """AUC, MRR, Hits@K (per-positive and pooled negatives), BPR values on every rank."""
    for rank, res in enumerate(launches[p]):
        assert _check_values(res["metrics"], (p, rank)) == 31


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_topk_items_and_list_metrics_equal_single_process(launches, p):
    """Top-k lists (ids exactly, ties to the lower id, exclusions, k above the item count,
    offsets given or gathered) and recall / precision / NDCG against PyG."""
    for rank, res in enumerate(launches[p]):
        assert _check_values(res["topk"], (p, rank)) == 126


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_values_identical_on_every_rank(launches, p):
    assert all(res["same_on_ranks"] for res in launches[p])


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_topk_ring_bytes_in_traffic_ledger(launches, p):
    for res in launches[p]:
        assert res["traffic"]["got"] == res["traffic"]["want"], res["traffic"]


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_bpr_loss_through_converted_model(launches, p):
    """The BPR loss is a global loss: value and the summed gradients equal PyG's BPRLoss on
    the whole graph; the gradient synchronisation accepts the backward pass."""
    for rank, res in enumerate(launches[p]):
        for name, case in res["model"].items():
            assert case["value"] <= TOL, (p, rank, name, case)
            assert case["grad"] <= 1e-10, (p, rank, name, case)
            assert len(set(case["values"])) == 1, (p, rank, name, case)


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_bad_input_on_one_rank_raises_on_every_rank(launches, p):
    names = {"auc_labels_one_rank": "got 2 at index 2",
             "mrr_shape_one_rank": "got 2 rows for 3 positives",
             "recall_user_one_rank": "user index 5 is out of range",
             "topk_exclude_one_rank": "item id 1000000 is out of range",
             "topk_offsets_one_rank": "do not match the ranks' item counts"}
    for rank, res in enumerate(launches[p]):
        for name, needle in names.items():
            err = res["bad"][name]
            assert err["type"] == "ValueError", (p, rank, name, err)
            want = needle if rank == 0 else "invalid input on another rank"
            assert want in err["message"], (p, rank, name, err)


# ---- one process, no context: the plain computation ----------------------------------------
def test_one_process_cases():
    assert _check_values(lc["metric_cases"](1, 0), "local") == 31
    assert _check_values(lc["topk_cases"](1, 0), "local") == 126


def test_reexports():
    import pyg_sar.link as link
    import pyg_sar.link.metrics as metrics
    for name in ("roc_auc", "mrr", "hits_at_k", "bpr_loss", "recall_at_k", "precision_at_k",
                 "ndcg_at_k"):
        assert getattr(SF, name) is getattr(metrics, name) is getattr(link, name)
    assert link.topk_items is topk_items


def test_roc_auc_matches_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    s, y = lc["scores_data"](2, 57, True)
    assert abs(float(roc_auc(s, y)) - metrics.roc_auc_score(y.numpy(), s.numpy())) <= TOL


def test_bpr_loss_one_process_equals_pyg_with_gradient():
    from torch_geometric.nn.models.lightgcn import BPRLoss
    pos = torch.randn(9, dtype=torch.float64, requires_grad=True)
    neg = torch.randn(9, dtype=torch.float64, requires_grad=True)
    want = BPRLoss(lambda_reg=0)(pos, neg)
    g_want = torch.autograd.grad(want, (pos, neg))
    got = bpr_loss(pos, neg)
    g_got = torch.autograd.grad(got, (pos, neg))
    assert abs(float(got.detach() - want.detach())) <= 1e-14
    for a, b in zip(g_got, g_want):
        assert torch.allclose(a, b, rtol=1e-14, atol=0)
    none = bpr_loss(pos, neg, reduction="none")
    assert torch.equal(none, -F.logsigmoid(pos - neg))


S = torch.tensor([0.3, 0.1, 0.2], dtype=torch.float64)
BAD = [
    (lambda: roc_auc(S, torch.tensor([0, 1])), "got shapes (3,) and (2,)"),
    (lambda: roc_auc(S, torch.tensor([0, 1, 3])), "labels must be 0 or 1 (got 3 at index 2)"),
    (lambda: roc_auc(S, torch.tensor([0.0, 1.0, 0.5])), "got 0.5 at index 2"),
    (lambda: roc_auc(torch.tensor([0.1, float("nan")]), torch.tensor([0, 1])),
     "NaN (at index 1)"),
    (lambda: roc_auc(S, torch.tensor([1, 1, 1])), "3 positives and 0 negatives"),
    (lambda: mrr(S, torch.zeros(2, 4)), "got 2 rows for 3 positives"),
    (lambda: mrr(S[:, None], torch.zeros(3)), "pos_scores must be 1-d"),
    (lambda: mrr(S, torch.zeros(3, 2, 2)), "got shape (3, 2, 2)"),
    (lambda: hits_at_k(S, torch.zeros(3), 0), "k must be a positive integer (got 0)"),
    (lambda: hits_at_k(S, torch.zeros(3), -2), "(got -2)"),
    (lambda: hits_at_k(S, torch.zeros(3), 2.0), "(got 2.0)"),
    (lambda: bpr_loss(S, torch.zeros(2)), "got shapes (3,) and (2,)"),
    (lambda: bpr_loss(S, S, reduction="avg"), "(got 'avg')"),
    (lambda: bpr_loss(S[:0], S[:0]), "no element is selected on any rank"),
    (lambda: recall_at_k(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 4,
                                                                           dtype=torch.long), 2),
     "needs padded=True"),
    (lambda: recall_at_k(torch.zeros(3, 2, dtype=torch.long), torch.tensor([[0], [-4]]), 2),
     "item id -4 is negative"),
    (lambda: recall_at_k(torch.zeros(3, 2), torch.tensor([[0], [1]]), 2),
     "pred_item_ids must be an integer tensor"),
    (lambda: ndcg_at_k(torch.zeros(3, 2, dtype=torch.long), torch.zeros(2, 4,
                                                                         dtype=torch.long), 2,
                       padded=True), "[n_users=3, L] (got shape (2, 4))"),
    (lambda: ndcg_at_k(torch.zeros(3, 2, dtype=torch.long), torch.zeros(2, 0,
                                                                         dtype=torch.long), 0),
     "(got 0)"),
    (lambda: topk_items(torch.zeros(3, 2), torch.zeros(4, 3), 2), "got shapes (3, 2) and (4, 3)"),
    (lambda: topk_items(torch.zeros(3, 2), torch.zeros(4, 2), 0), "(got 0)"),
    (lambda: topk_items(torch.zeros(3, 2), torch.full((4, 2), float("nan")), 2),
     "item_emb contains NaN"),
    (lambda: topk_items(torch.zeros(3, 2), torch.zeros(4, 2), 2, item_offsets=[0, 5]),
     "item_offsets [0, 5] do not match the ranks' item counts (offsets [0, 4])"),
    (lambda: topk_items(torch.zeros(3, 2), torch.zeros(4, 2), 2,
                        exclude=torch.tensor([[3], [0]])), "user index 3 is out of range"),
    (lambda: topk_items(torch.zeros(3, 2), torch.zeros(4, 2), 2,
                        exclude=torch.tensor([0, 1])), "exclude must be [2, e] pairs"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_raises_value_error_naming_the_value(i):
    fn, needle = BAD[i]
    with pytest.raises(ValueError) as info:
        fn()
    assert needle in str(info.value)


@pytest.mark.parametrize("ties", [False, True])
def test_topk_items_in_small_chunks(monkeypatch, ties):
    """Scored a few items at a time (a block larger than the scratch bound): the same lists."""
    import pyg_sar.link.topk as topk
    users, items, exclude, _ = lc["rec_data"](4 if ties else 3, 19, 31, ties)
    monkeypatch.setattr(topk, "_CHUNK_ENTRIES", 19 * 3)  # 3 items per chunk
    for k in (1, 4, 40):
        s, i = topk_items(users, items, k, exclude=exclude)
        rs, ri = lc["ref_topk"](users, items, k, exclude)
        finite = torch.isfinite(rs)
        assert torch.equal(i, ri) and torch.equal(torch.isfinite(s), finite), k
        assert float((s[finite] - rs[finite]).abs().max() / rs[finite].abs().max()) <= TOL


def test_k_may_be_any_integer_type():
    import numpy as np
    pos, neg, pool = lc["ranking_data"](1, 23, 6, False)
    want = float(hits_at_k(pos, pool, 3))
    assert float(hits_at_k(pos, pool, np.int64(3))) == want
    assert float(hits_at_k(pos, pool, torch.tensor(3))) == want
    users, items, _, gt = lc["rec_data"](3, 19, 31, False)
    _, ids = topk_items(users, items, np.int32(4))
    assert ids.shape == (19, 4)
    assert float(ndcg_at_k(ids, gt, np.int64(4))) == float(ndcg_at_k(ids, gt, 4))
