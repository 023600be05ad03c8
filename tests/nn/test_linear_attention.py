"""Linear global attention across ranks (:mod:`pyg_sar.nn.adapters.linear_attention`): PyG's
SGFormerAttention, PolynormerAttention and PerformerAttention on one rank's rows, with their
global sums added over ranks, against PyG's module on the whole graph in one process.

P = 1 (in process) and P = 3 (one launch, a random partition of unequal parts): float64, each
rank's output rows, input gradient rows and every parameter gradient (summed over ranks) within
1e-10 relative; with a PyG mask and with PyG's dense ``[1, n, F]`` input too. The models
SGModule, SGFormer and Polynormer likewise (their GNN parts converted by ``pyg_sar.convert``).
The numbers all-reduced per forward + backward equal the size of the sums (independent of the
node count);
a batch of several graphs is refused on every rank with a message naming it.

Whole models through ``pyg_sar.convert`` (``registry.MODULE_FORWARDS``): SGFormer, Polynormer
and a user model calling SGModule and the attention modules through their own forwards, one
training step with pyg_sar's global ``nll_loss`` (gradients summed by grad_sync), in modes
sar / sa / halo, vs PyG on the whole graph: outputs, loss, input and every parameter gradient.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.nn import linear_attention_cases as lac

HERE = Path(__file__).resolve().parent

TOL = 1e-10
VARIANTS = list(lac.VARIANTS)
MODELS = list(lac.MODELS)
CONVERT_CASES = [list(c) for c in lac.CONVERT_CASES]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[int, list[dict]]:
    """P -> the ranks' results (P = 1 in this process, P = 3 in one launch)."""
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("linear_attention")
    data = lac.make_data()
    out = {}
    pyg_sar.partition_graph(data, 1, root / "p1", method="random")
    part = pyg_sar.load_partition(root / "p1", 0)
    single = {"rows": int(len(part.node_ids))}
    for v in VARIANTS:
        single[v] = lac.run_case(v, data, part.graph, part.node_ids, None)
    for name in MODELS:
        single[f"model/{name}"] = lac.run_model_case(name, data, part.graph, part.node_ids, None)
    single["refusals"] = lac.refusals(part.graph, part.node_ids, 0)
    single["convert"] = lac.convert_ranks(None, str(root / "p1"), CONVERT_CASES)
    out[1] = [single]
    pyg_sar.partition_graph(data, 3, root / "p3", method="random", seed=3)
    out[3] = run_on_ranks(f"{HERE / 'linear_attention_cases.py'}:ranks", 3, timeout=420,
                          kwargs=dict(parts=str(root / "p3"), variants=VARIANTS, models=MODELS,
                                      convert=dict(parts=str(root / "p3"),
                                                   cases=CONVERT_CASES)))
    return out


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("variant", VARIANTS)
def test_matches_pyg(results, world_size, variant):
    for rank, res in enumerate(results[world_size]):
        got = res[variant]
        assert "error" not in got, f"rank {rank} of {world_size}: {got.get('error')}"
        assert any(k.startswith("param:") for k in got["errors"])
        worst = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("name", MODELS)
def test_model_matches_pyg(results, world_size, name):
    """SGModule, SGFormer and Polynormer (global and local phase) over a DistGraph, their
    GNN parts converted by pyg_sar.convert, vs PyG on the whole graph with ``batch`` zeros."""
    test_matches_pyg(results, world_size, f"model/{name}")


@pytest.mark.parametrize("name", list(lac.CASES))
def test_a_rank_without_rows(results, name):
    """P = 3 with rows 0-29 / 30-60 / none: the empty rank joins the all-reduces, the others
    still equal PyG (its output and gradient rows are empty)."""
    got = [r[f"empty_rank/{name}"] for r in results[3]]
    for rank, res in enumerate(got):
        assert "error" not in res, f"rank {rank}: {res.get('error')}"
        worst = {k: v for k, v in res["errors"].items() if v > TOL}
        assert not worst, f"rank {rank}: errors above {TOL}: {worst}"
        assert res["all_reduced"] == res["expected_all_reduced"], (rank, res)


def test_partition_has_unequal_nonempty_parts(results):
    rows = [r["rows"] for r in results[3]]
    assert sum(rows) == lac.NUM_NODES and min(rows) > 0 and len(set(rows)) > 1, rows


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("variant", VARIANTS)
def test_all_reduces_only_the_sums(results, world_size, variant):
    """One all-reduce of the sums forward, one of their gradient backward: H*M*(M+1)
    numbers for SGFormer (and the like for the others), nothing of size N; none at P = 1."""
    for rank, res in enumerate(results[world_size]):
        got = res[variant]
        assert got["all_reduced"] == got["expected_all_reduced"], (rank, got)
        if world_size > 1:
            assert got["all_reduced"] > 0


@pytest.mark.parametrize("world_size", (1, 3))
def test_several_graphs_refused(results, world_size):
    for rank, res in enumerate(results[world_size]):
        ref = res["refusals"]
        if world_size > 1:  # the 1 sits on the last rank only: every rank refuses
            assert "batch names 2 graphs" in ref["batch_vector"], (rank, ref)
        assert "batch of 2 graphs" in ref["dense_batch"], (rank, ref)
        assert f"holds {res['rows']} nodes" in ref["rows"], (rank, ref)
        assert ref["zeros_batch_rows"] == res["rows"]


@pytest.mark.parametrize("world_size", (1, 3))
def test_performer_projection_differing_between_ranks_refused(results, world_size):
    """A projection matrix redrawn on one rank only: every rank raises, naming the buffer
    (one process has nothing to compare)."""
    for rank, res in enumerate(results[world_size]):
        msg = res["refusals"]["performer_redrawn"]
        if world_size == 1:
            assert msg is None
        else:
            assert msg is not None and "projection_matrix differs between ranks" in msg, rank


def test_sum_over_ranks_grad_moved():
    """HAN imports it from its new home; the old name still resolves to the same function."""
    from pyg_sar.core.collectives import sum_over_ranks_grad
    from pyg_sar.nn.adapters import hetero_attention
    assert hetero_attention.sum_over_ranks_grad is sum_over_ranks_grad


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("case", ["/".join(c) for c in CONVERT_CASES])
def test_converted_model_matches_pyg(results, world_size, case):
    """``pyg_sar.convert(model, SARConfig(mode=...))`` with no other change to the model:
    one training step equals PyG's on the whole graph (float64, rel. err <= 1e-10)."""
    for rank, res in enumerate(results[world_size]):
        got = res["convert"][case]
        assert "error" not in got, f"rank {rank} of {world_size}: {got.get('error')}"
        assert {"out", "loss", "x"} <= set(got["errors"]) and got["params"] > 10
        assert sum(k.startswith("param") for k in got["errors"]) == got["params"]
        assert got["classes"], got
        for cls, modules in got["classes"].items():  # PyG's forward except where it sums
            want = ("pyg_sar.nn.module_forwards" if lac.ATTENTION_CLASSES[cls]
                    else "torch_geometric.")
            assert all(m.startswith(want) for m in modules), (cls, modules)
        worst = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


@pytest.mark.parametrize("world_size", (1, 3))
def test_converted_model_refusals(results, world_size):
    """A batch of two graphs (the second only on the last rank) raises on every rank; a call
    without a DistGraph in a run of several ranks raises instead of attending to the rank's
    rows (one process: PyG's own forward)."""
    for rank, res in enumerate(results[world_size]):
        ref = res["convert"]["refusals"]
        assert "SGModule: batch names 2 graphs" in ref["batch/sgformer"], (rank, ref)
        assert "Polynormer: batch names 2 graphs" in ref["batch/polynormer_global"], (rank, ref)
        # SGFormer runs PyG's forward: its SGModule refuses
        for name, cls in (("sgformer", "SGModule"), ("polynormer_global", "Polynormer")):
            msg = ref[f"no_graph/{name}"]
            if world_size == 1:
                assert msg is None, (rank, msg)
            else:
                assert msg is not None and (f"{cls} was called without a DistGraph in a run "
                                            f"of 3 ranks") in msg, (rank, msg)
