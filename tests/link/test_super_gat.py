"""SuperGATConv's self-supervised attention loss over a partition, exact for given negatives:
two SuperGATConv layers trained 5 Adam steps on the task loss + 4 x the attention loss, the
negatives of each step from ``pyg_sar.link.negative_sampling`` keyed by (seed, epoch) and the
same pairs given to single-process PyG, or (PyG's example unchanged: edge_sample_ratio=0.8, no
negatives passed) drawn by pyg_sar and the same draws given to PyG; outputs, attention loss,
every parameter gradient, the input gradient and the loss curve within 1e-10 at P = 1, 3 in
modes sar / sa / halo, both attention types. Rank side: ``super_gat_cases.py`` (one launch
per P)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch_geometric.nn import SuperGATConv

import pyg_sar
from tests.link import super_gat_cases as sc

HERE = Path(__file__).resolve().parent

TOL = 1e-10
STEPS = 5
# (mode, attention type, negatives "given" or "sampled" by pyg_sar with PyG's example's
# edge_sample_ratio=0.8)
CASES = {1: [["sar", "MX", "given"], ["halo", "SD", "sampled"]],
         3: [["sar", "MX", "given"], ["sa", "SD", "given"], ["halo", "MX", "given"],
             ["sar", "MX", "sampled"], ["sa", "SD", "sampled"]]}
CASE_IDS = [(p, "/".join(c)) for p, cs in CASES.items() for c in cs]


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("super_gat")
    out = {}
    for p, cases in CASES.items():
        pyg_sar.partition_graph(sc.make_graph(), p, root / f"g{p}", method="random", seed=p)
        out[p] = run_on_ranks(f"{HERE / 'super_gat_cases.py'}:suite", p, timeout=300,
                              kwargs=dict(parts=str(root / f"g{p}"), cases=cases,
                                          steps=STEPS))
    return out


@pytest.mark.parametrize("p,key", CASE_IDS, ids=[f"P{p}-{k}" for p, k in CASE_IDS])
def test_attention_loss_exact(launches, p, key):
    for rank, res in enumerate(r[key] for r in launches[p]):
        assert res["steps"] == STEPS
        errors = {k: v for k, v in res.items() if k != "steps"}
        assert {"out", "att", "x_grad", "curve", "grad:conv1.lin.weight"} <= set(errors)
        bad = {k: v for k, v in errors.items() if not v <= TOL}
        assert not bad, f"P={p} {key} rank {rank}: {bad}"


def _one_part(tmp_path):
    data = sc.make_graph()
    pyg_sar.partition_graph(data, 1, tmp_path / "p", method="random")
    return pyg_sar.load_partition(tmp_path / "p", 0)


def test_a_training_forward_without_negatives_draws_them(tmp_path):
    part = _one_part(tmp_path)
    layer = pyg_sar.convert(SuperGATConv(8, 3, heads=2).double()).train()
    layer(part.x.double(), part.edge_index)
    first = layer.get_attention_loss().detach()
    assert first.dim() == 0 and float(first) > 0
    layer(part.x.double(), part.edge_index)  # the next epoch draws other negatives
    assert float(layer.get_attention_loss().detach()) != float(first)


def test_refused_options_name_the_value(tmp_path):
    part = _one_part(tmp_path)
    layer = pyg_sar.convert(SuperGATConv(8, 3).double()).train()
    with pytest.raises(ValueError, match=r"neg_edge_index must be \[2, n\].*\(3,\)"):
        layer(part.x.double(), part.edge_index, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match=r"batch .*not supported"):
        layer(part.x.double(), part.edge_index, batch=torch.zeros(part.num_nodes,
                                                                   dtype=torch.long))
