"""PyG's graph auto-encoders (GAE, VGAE, ARGVA) converted by ``pyg_sar.convert``: exact against
single-process PyG on the whole graph (float64, rel. err <= 1e-10) at P = 1 and P = 3.

The launch (``autoencoder_cases.py``) trains each model a few Adam steps calling ``encode``,
``recon_loss`` (negatives drawn inside, keyed by the model's draw counter), ``kl_loss``,
``discriminator_loss`` / ``reg_loss`` and ``test`` as PyG's examples do, on the parts of
``pyg_sar.distribute`` of PyG's ``RandomLinkSplit`` (``split_labels=False`` and ``True``), and
compares the per-step losses, the final parameters, the test encoding's rows and (AUC, AP)
with PyG's run given the same draws (VGAE in training mode: keyed reparametrization noise).
The single-process tests below check the global average precision, the keyed noise, a plain
Tensor graph (PyG's own methods) and copies of a converted model.
"""
from __future__ import annotations

import copy
import io
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.nn.models import ARGVA, GAE, VGAE

import pyg_sar
from pyg_sar.link.metrics import average_precision, roc_auc
from pyg_sar.nn.autoencoder import keyed_normal
from tests.link import autoencoder_cases as ac

HERE = Path(__file__).resolve().parent

TOL = 1e-10
KINDS = ("gae", "vgae", "argva")


def _split_labels_supported() -> bool:
    from pyg_sar.partition import link_split
    return "pos_edge_label" in getattr(link_split, "PAIR_SETS", ())


FORMS = (False, True) if _split_labels_supported() else (False,)
CASES = [[kind, labels] for labels in FORMS for kind in KINDS]
WORLD_SIZES = (1, 3)
KEYS = ("losses", "params", "z", "decode", "auc", "ap")


@pytest.fixture(scope="module")
def launches() -> dict[int, list[dict]]:
    from pyg_sar.testing import run_on_ranks
    return {p: run_on_ranks(f"{HERE / 'autoencoder_cases.py'}:suite", p, timeout=240,
                            kwargs=dict(cases=CASES))
            for p in WORLD_SIZES}


CASE_IDS = [(p, f"{k}/{'split' if s else 'mixed'}") for p in WORLD_SIZES for k, s in CASES]


@pytest.mark.parametrize("p,key", CASE_IDS, ids=[f"P{p}-{k}" for p, k in CASE_IDS])
def test_autoencoder_exact(launches, p, key):
    ranks = [r[key] for r in launches[p]]
    for rank, res in enumerate(ranks):
        assert res["steps"] == ac.STEPS
        for k in KEYS + tuple(k for k in ("auc_sklearn", "ap_sklearn") if k in res):
            assert res[k] <= TOL, f"P={p} {key} rank {rank}: {k} rel. err {res[k]:.3g}"
        assert res["negatives_drawn"] == ac.STEPS  # one draw per recon_loss call
        assert res["values"] == ranks[0]["values"]  # the same numbers on every rank
    auc, ap = ranks[0]["values"][:2]
    assert 0.0 < auc < 1.0 and 0.0 < ap <= 1.0


# ---- single process -----------------------------------------------------------------------
def test_average_precision_matches_the_step_sum_with_ties():
    g = torch.Generator().manual_seed(1)
    for n in (1, 7, 50):
        scores = torch.randint(0, 6, (n,), generator=g).double()  # many ties
        labels = torch.randint(0, 2, (n,), generator=g)
        labels[0] = 1
        want_auc, want_ap = ac.auc_ap(scores, labels)
        assert abs(float(average_precision(scores, labels)) - want_ap) <= 1e-15
        if (labels == 0).any():
            assert abs(float(roc_auc(scores, labels)) - want_auc) <= 1e-15
    # a perfect ranking, and one positive under every negative
    assert float(average_precision(torch.tensor([3.0, 2.0, 1.0]), torch.tensor([1, 1, 0]))) == 1
    ap = average_precision(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1, 0, 0]))
    assert float(ap) == pytest.approx(1 / 3)


def test_average_precision_against_sklearn_when_installed():
    metrics = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(2)
    scores = torch.rand(200, generator=g).double().round(decimals=1)
    labels = torch.randint(0, 2, (200,), generator=g)
    want = metrics.average_precision_score(labels.numpy(), scores.numpy())
    assert abs(float(average_precision(scores, labels)) - want) <= 1e-12


@pytest.mark.parametrize("bad,match", [
    ((torch.zeros(3), torch.zeros(3)), "no positive"),
    ((torch.zeros(3), torch.tensor([0, 2, 1])), "labels must be 0 or 1"),
    ((torch.zeros(3), torch.zeros(2)), "same length"),
])
def test_average_precision_refuses_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        average_precision(*bad)


def test_keyed_normal_is_a_function_of_the_node_and_standard_normal():
    ids = torch.arange(4000)
    a = keyed_normal(ids, 8, seed=0, epoch=3)
    perm = torch.randperm(4000)
    assert torch.equal(keyed_normal(ids[perm], 8, seed=0, epoch=3), a[perm])
    assert not torch.equal(keyed_normal(ids, 8, seed=0, epoch=4), a)
    assert not torch.equal(keyed_normal(ids, 8, seed=0, epoch=3, kind="prior"), a)
    assert abs(float(a.mean())) < 0.03 and abs(float(a.std()) - 1) < 0.03
    with pytest.raises(ValueError, match="kind must be one of"):
        keyed_normal(ids, 2, seed=0, epoch=0, kind="other")


def test_converted_autoencoders_on_a_tensor_graph_are_pyg():
    triple = ac.make_split(False)
    train = triple[0]
    pos, _ = ac.pairs(train, False)
    for kind in KINDS:
        ref = ac.make_model(kind)
        model = copy.deepcopy(ref)
        pyg_sar.convert(model)
        assert type(model).__module__ == "pyg_sar.nn.autoencoder"
        assert isinstance(model, type(ref))
        results = []
        for m in (ref, model):
            # PyG's own draws: reparametrize, negative_sampling (torch, Python, NumPy), prior
            torch.manual_seed(5)
            random.seed(5)
            np.random.seed(5)
            z = m.encode(train.x, train.edge_index)
            loss = m.recon_loss(z, pos)
            if kind != "gae":
                loss = loss + m.kl_loss()
            if kind == "argva":
                loss = loss + m.reg_loss(z) + m.discriminator_loss(z)
            results.append(float(loss.detach()))
        assert results[0] == results[1], kind


def test_convert_accepts_the_autoencoders_and_their_copies_load():
    for model in (GAE(ac.GCNEncoder(3, 2)), VGAE(ac.VariationalGCNEncoder(3, 2)),
                  ARGVA(ac.VariationalGCNEncoder(3, 2), ac.Discriminator(2, 4, 1))):
        pyg_sar.convert(model)
        model.sar_seed = 7
        inner = getattr(model, "VGAE", None)
        assert inner is None or inner.sar_seed == 7  # ARGVA's VGAE draws with the same seed
        model.__dict__["_sar_graph"] = object()  # the graph of an encode: not copied
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        for copied in (copy.deepcopy(model), torch.load(buffer, weights_only=False)):
            assert type(copied) is type(model) and copied.sar_seed == 7
            assert "_sar_graph" not in copied.__dict__
        with pytest.raises(ValueError, match="non-negative integer"):
            model.sar_seed = -1
