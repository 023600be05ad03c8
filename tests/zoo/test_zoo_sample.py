"""A sample of the three zoos in the first tier: one launch each at P = 2, a few recipes per
adapter family, run by the same harness as the full zoos of the second tier
(``test_zoo.py``, ``test_zoo_hetero.py``, ``test_zoo_bf16.py``, which run every recipe at
P = 1 and 3).

Each sampled recipe must have the outcome the full zoo records for it in
``docs/supported_layers.md`` (exact or refused): a sample that only asked for "exact or
refused" would pass on a layer that regressed from exact to refused.
"""
from __future__ import annotations

import pytest

from pyg_sar.testing.zoo import EXACT, REFUSED, run_zoo
from pyg_sar.testing.zoo_hetero import run_hetero_zoo
from pyg_sar.testing.zoo_precision import FAIL, PASS, PYG_FAILS, run_precision_zoo

P = (2,)  # the full zoos run P = 1 and 3; the sample runs the world size they do not

# One or two recipes per family of adapters (normalised, aggregation modules, Laplacian,
# softmax in message run by destination chunks, fused GAT, relational, global and linear attention,
# models, labels), and refusals of three kinds (aggregation, user preprocessing, pooling).
FLOAT64 = {
    "GCNConv": EXACT, "SAGEConv[multi]": EXACT, "ChebConv[rw]": EXACT, "GATConv[edge]": EXACT,
    "TransformerConv": EXACT, "RGATConv[within]": EXACT, "RGCNConv[bases]": EXACT,
    "EGConv[multi]": EXACT, "GPSConv": EXACT, "SGFormer": EXACT, "LabelPropagation": EXACT,
    "GraphSAGE[max_bn]": EXACT, "ARMAConv": EXACT, "LINKX": EXACT, "Polynormer": EXACT,
    "DeepGraphInfomax": EXACT, "SuperGATConv[MX_train]": EXACT, "ClusterGCNConv[diag]": EXACT,
    "MFConv": EXACT, "FastRGCNConv": EXACT, "CorrectAndSmooth[fixed_scale]": EXACT,
    "GraphConv[median]": EXACT, "UserSoftmaxConv": EXACT, "GraphConv[gru]": REFUSED,
    "SAGEConv[lstm]": REFUSED, "UserDegreeConv": REFUSED,
    "GraphUNet": REFUSED,
}
HETERO = ("HeteroConv[cat]", "to_hetero[GAT,max]", "to_hetero_with_bases", "HGTConv",
          "HANConv", "RGATConv[edge_dim]", "HeteroBatchNorm", "HeteroJumpingKnowledge[lstm]")
BF16 = ("GCNConv", "GATConv", "TransformerConv", "SAGEConv[lstm]")


@pytest.fixture(scope="module")
def float64_zoo(tmp_path_factory):
    results = run_zoo(tmp_path_factory.mktemp("zoo_sample"), world_sizes=P,
                      names=list(FLOAT64))
    return {rec["name"]: rec for rec in results["recipes"]}


@pytest.mark.parametrize("name", list(FLOAT64))
def test_float64_sample_has_its_outcome(float64_zoo, name):
    rec = float64_zoo[name]
    assert rec["outcome"] == FLOAT64[name], (
        f"{name} ({rec['class']}: {rec['options']}) at P = 2 is {rec['outcome']}, the zoo "
        f"records {FLOAT64[name]}: {rec['detail']}")


def test_hetero_sample_is_exact(tmp_path_factory):
    results = run_hetero_zoo(tmp_path_factory.mktemp("zoo_hetero_sample"), world_sizes=P,
                             names=list(HETERO))
    outcomes = {rec["name"]: (rec["outcome"], rec["detail"]) for rec in results["recipes"]}
    assert set(outcomes) == set(HETERO)
    wrong = {name: o for name, o in outcomes.items() if o[0] != EXACT}
    assert not wrong, f"heterogeneous recipes not exact at P = 2: {wrong}"


def test_bf16_sample_within_pyg(tmp_path_factory):
    results = run_precision_zoo(tmp_path_factory.mktemp("zoo_bf16_sample"), world_sizes=P,
                                names=list(BF16))
    outcomes = {rec["name"]: (rec["outcome"], rec["detail"]) for rec in results["recipes"]}
    assert set(outcomes) == set(BF16)
    assert outcomes["SAGEConv[lstm]"][0] == REFUSED, outcomes["SAGEConv[lstm]"]
    failed = {name: o for name, o in outcomes.items() if o[0] in (FAIL,)}
    assert not failed, f"bf16 results further from float32 than PyG's at P = 2: {failed}"
    passed = [name for name, o in outcomes.items() if o[0] == PASS]
    assert len(passed) == 3, f"expected GCNConv, GATConv, TransformerConv to pass: {outcomes}"
    assert PYG_FAILS not in {o[0] for o in outcomes.values()}
