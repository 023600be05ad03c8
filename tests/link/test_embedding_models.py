"""Embedding tables sharded by owner rank (``pyg_sar.shard_embedding``) and PyG's LightGCN
converted: exact against single-process PyG (float64, rel. err <= 1e-10) at P = 1, 3, 4 in
modes sar / sa / halo on a generated user-item graph and on Cora: embedding rows, scores of
the rank's pairs (ends fetched with ``pyg_sar.gather``), the embedding gradient rows (mapped by
``node_ids``), the 20-step Adam curve of ``recommendation_loss`` (BPR + L2 over gathered rows)
and the final rows; a run resumed from a checkpoint halfway equals the uninterrupted one
(and the trained model deep-copies and pickles);
``recommend`` returns PyG's lists; ``link_pred_loss`` is the global BCE (value, gradient).
Rank side: ``embedding_cases.py`` (one launch per P)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn.models import LightGCN

import pyg_sar
from pyg_sar.nn.embedding import is_rank_local, shard_ids
from pyg_sar.nn.grad_sync import _synced
from tests.link import embedding_cases as ec

HERE = Path(__file__).resolve().parent

TOL = 1e-10
# (graph, mode, flags) per P; every mode at P = 3, both graphs at every P.
CASES = {
    1: [["bipartite", "sar", "recommend"], ["cora", "halo", ""]],
    3: [["bipartite", "sar", "resume,recommend"], ["bipartite", "sa", ""],
        ["bipartite", "halo", ""], ["cora", "sar", ""]],
    4: [["bipartite", "halo", "recommend"], ["cora", "sa", ""]],
}
KEYS = ("emb", "pos", "neg", "grad", "curve", "final", "bce", "bce_grad")


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("embedding")
    out = {}
    for p, cases in CASES.items():
        parts = {}
        for name in sorted({c[0] for c in cases}):
            data, _ = ec.make_graph(name)
            graph = Data(edge_index=data.edge_index, num_nodes=data.num_nodes)
            method = "metis" if p % 2 == 0 else "random"
            pyg_sar.partition_graph(graph, p, root / f"{name}{p}", method=method, seed=p)
            parts[name] = str(root / f"{name}{p}")
        out[p] = run_on_ranks(f"{HERE / 'embedding_cases.py'}:suite", p, timeout=300,
                              kwargs=dict(cases=cases, parts=parts,
                                          checkpoint_root=str(root / f"ck{p}")))
    return out


CASE_IDS = [(p, f"{n}/{m}/{f}" if f else f"{n}/{m}") for p, cs in CASES.items()
            for n, m, f in cs]


@pytest.mark.parametrize("p,key", CASE_IDS, ids=[f"P{p}-{k}" for p, k in CASE_IDS])
def test_lightgcn_exact(launches, p, key):
    ranks = [r[key] for r in launches[p]]
    for rank, res in enumerate(ranks):
        assert res["steps"] == ec.STEPS
        for k in KEYS:
            assert res[k] <= TOL, f"P={p} {key} rank {rank}: {k} rel. err {res[k]:.3g}"
        if "resume" in key:
            assert res["copies_equal"], f"P={p} {key} rank {rank}: deepcopy / pickle differ"
            assert res["helpers_skip"], f"P={p} {key} rank {rank}: all_reduce_gradients summed"
        if "recommend" in key:
            assert res["recommend_equal"], f"P={p} {key} rank {rank}: recommend differs"
    data, _ = ec.make_graph(key.split("/")[0])
    assert sum(r["rows"] for r in ranks) == data.num_nodes  # each row on exactly one rank


# ---- single process: shard_embedding, the rank-local mark, refusals -------------------------
def _table(n: int = 10, dim: int = 3) -> torch.nn.Embedding:
    torch.manual_seed(0)
    return torch.nn.Embedding(n, dim).double()


def test_shard_embedding_keeps_rows_in_local_order():
    emb = _table()
    full = emb.weight.detach().clone()
    param = emb.weight
    ids = torch.tensor([7, 2, 5])
    assert pyg_sar.shard_embedding(emb, ids) is emb
    assert emb.weight is param  # an optimizer created before still updates it
    assert torch.equal(emb.weight.detach(), full[ids]) and emb.num_embeddings == 3
    assert is_rank_local(emb.weight) and torch.equal(shard_ids(emb), ids)
    pyg_sar.shard_embedding(emb, ids.clone())  # again with the same ids: nothing changes
    assert torch.equal(emb.weight.detach(), full[ids])
    with pytest.raises(ValueError, match="sharded already"):
        pyg_sar.shard_embedding(emb, torch.tensor([1, 2, 3]))


@pytest.mark.parametrize("bad,match", [
    (torch.tensor([3, 10]), "node id 10 is outside the table of 10 rows"),
    (torch.tensor([-1]), "node id -1"),
    (torch.tensor([[1, 2]]), "1-d integer"),
    (Data(num_nodes=3), "has no node_ids"),
])
def test_shard_embedding_refuses_bad_ids(bad, match):
    with pytest.raises(ValueError, match=match):
        pyg_sar.shard_embedding(_table(), bad)


def test_shard_embedding_refuses_padding_idx_and_other_modules():
    with pytest.raises(ValueError, match="padding_idx=0"):
        pyg_sar.shard_embedding(torch.nn.Embedding(4, 2, padding_idx=0), torch.tensor([1]))
    with pytest.raises(ValueError, match="torch.nn.Embedding"):
        pyg_sar.shard_embedding(torch.nn.Linear(2, 2), torch.tensor([1]))


def test_rank_local_parameters_skip_gradient_sync_and_checkpoint_rows():
    from pyg_sar.checkpoint import _signature
    model = LightGCN(10, 4, num_layers=2)
    pyg_sar.convert(model)
    assert is_rank_local(model.embedding.weight)  # marked at convert time, before sharding
    assert all(p is not model.embedding.weight for p in _synced(model))
    pyg_sar.shard_embedding(model.embedding, torch.tensor([4, 0, 9]))
    assert _signature(model)["embedding.weight"] == [[-1, 4], "float32"]


def test_converted_lightgcn_on_a_tensor_graph_is_pyg():
    torch.manual_seed(0)
    ref = LightGCN(6, 4, num_layers=2).double()
    model = LightGCN(6, 4, num_layers=2).double()
    model.load_state_dict(ref.state_dict())
    pyg_sar.convert(model)
    ei = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    pairs = torch.tensor([[0, 3], [2, 5]])
    assert torch.equal(model(ei, pairs), ref(ei, pairs))
    assert torch.equal(model.recommend(ei, k=2), ref.recommend(ei, k=2))
    assert shard_ids(model.embedding) is None  # a Tensor graph leaves the table whole


def test_lightgcn_over_a_partition_needs_pairs_and_node_ids(tmp_path):
    data, _ = ec.make_graph("bipartite")
    pyg_sar.partition_graph(Data(edge_index=data.edge_index, num_nodes=data.num_nodes), 1,
                            tmp_path / "p1", method="random")
    part = pyg_sar.load_partition(tmp_path / "p1", 0)
    model = LightGCN(data.num_nodes, 4, num_layers=1).double()
    pyg_sar.convert(model)
    with pytest.raises(ValueError, match="needs edge_label_index"):
        model(part.edge_index)
    graph = part.edge_index
    ids, graph.node_ids = graph.node_ids, None
    try:
        with pytest.raises(ValueError, match=r"shard_embedding\(model.embedding, part\)"):
            model.get_embedding(graph)
    finally:
        graph.node_ids = ids
    other = LightGCN(data.num_nodes, 4, num_layers=1).double()
    pyg_sar.convert(other)
    pyg_sar.shard_embedding(other.embedding, torch.arange(5))
    with pytest.raises(ValueError, match="holds 5 rows but this rank has 65 nodes"):
        other.get_embedding(part.edge_index)


def test_unconvert_gives_back_pyg_lightgcn():
    model = LightGCN(6, 4, num_layers=1)
    pyg_sar.convert(model)
    pyg_sar.unconvert(model)
    assert type(model) is LightGCN and not is_rank_local(model.embedding.weight)
