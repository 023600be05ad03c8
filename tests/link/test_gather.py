"""pyg_sar.gather (pyg_sar.link.gather): the distributed ``z_global[index]``.

At P = 1, 3, 4 (one launch per P, shared with test_negatives.py: pairs_cases.py) the output
and the gradient of ``z`` equal the single-process ``z_global[index]`` and its gradient
(float64, uneven slices, a rank without rows, a rank with an empty index, repeats, random
order; offsets given as a list, a tensor, all-gathered, or from a DistGraph), float32 /
bfloat16 rows cross unchanged, the traffic ledger counts the bytes the requests imply, and bad
input on one rank raises ValueError on every rank. In one process: the same oracle and the
input checks.

Which ids (``ids=``): on a random partition (new ids differ from original ids) ``ids="original"``
returns the rows of those original nodes, ``ids="new"`` the rows of new ids, and ids left out
raise ValueError on every rank wherever the two numberings may differ, never wrong rows.
"""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.link.gather import gather

HERE = Path(__file__).resolve().parent
CASES = HERE / "gather_cases.py"
WORLD_SIZES = (1, 3, 4)
TOL = 1e-12
gc = runpy.run_path(str(CASES))


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    pairs = runpy.run_path(str(HERE / "pairs_cases.py"))["shared"]()
    return pairs.suite_results(tmp_path_factory, "gather")


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_gather_equals_single_process(launches, p):
    for rank, res in enumerate(launches[p]):
        assert len(res["exact"]) == 13
        for case, (fwd, grad) in res["exact"].items():
            assert fwd == 0.0, (p, rank, case)  # a copy: bit-exact
            assert grad <= TOL, (p, rank, case, grad)


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_low_precision_rows_cross_unchanged(launches, p):
    for rank, res in enumerate(launches[p]):
        assert res["dtypes"] == {"torch.float32": [True, True],
                                 "torch.bfloat16": [True, True]}, (p, rank)


@pytest.mark.parametrize("p", (3, 4))
def test_ledger_counts_the_bytes(launches, p):
    for rank, res in enumerate(launches[p]):
        assert res["ledger"]["got"] == res["ledger"]["want"], (p, rank)
        assert res["ledger"]["got"]["rows"]["sent"] > 0 or rank in (1, 2)


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_bad_input_raises_on_every_rank(launches, p):
    named = {"float_index": "dtype torch.float64", "two_d_index": "shape (1, 2)",
             "id_too_large": f"node id {gc['N'] + 5}", "negative_id": "node id -2",
             "bad_offsets": "node_offsets", "z_rows": "rows on rank 0"}
    for rank, res in enumerate(launches[p]):
        for case, msg in res["errors"].items():
            assert msg is not None and not msg.startswith("WRONG"), (p, rank, case, msg)
            if rank == 0:
                assert named[case] in msg, (case, msg)
            else:
                assert "rank(s) [0]" in msg, (case, msg)


def test_one_process_is_plain_indexing():
    z = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([5, 0, 5, 2])
    out = gather(z, idx)
    assert torch.equal(out, z.detach()[idx])
    out.sum().backward()
    assert torch.equal(z.grad[:, 0], torch.tensor([1.0, 0, 1, 0, 0, 2], dtype=torch.float64))
    assert gather(z, torch.zeros(0, dtype=torch.long)).shape == (0, 3)
    assert pyg_sar.gather is gather and pyg_sar.link.gather is gather


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_ids_original_and_new_give_the_right_rows(launches, p):
    for rank, res in enumerate(launches[p]):
        ids = res["ids"]
        assert ids["renumbered"] == (p > 1), (p, rank)  # else the check proves nothing
        for case in ("original/graph", "original/graph_part", "original/node_offsets",
                     "original/context", "new/node_offsets", "new/context", "new/graph",
                     "new/plain"):
            assert ids[case] is True, (p, rank, case)


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_ids_left_out_raise_where_they_may_differ(launches, p):
    for rank, res in enumerate(launches[p]):
        ids = res["ids"]
        for how in ("node_offsets", "context", "graph", "plain"):
            msg = ids[f"left_out/{how}"]
            if p == 1:  # one process, a one-part partition: new ids are the original ids
                assert msg is None, (rank, how, msg)
                continue
            assert msg is not None and not msg.startswith("WRONG"), (p, rank, how, msg)
            for words in ('ids="new"', 'ids="original"', "pyg_sar.distribute",
                          "load_link_split", "negative_sampling", "before partitioning",
                          f"{p} ranks"):
                assert words in msg, (p, rank, how, words, msg)
        for case, words in (("original_without_graph", "graph=part.edge_index"),
                            ("original_list_offsets", "graph=part.edge_index"),
                            ("bad_ids", "ids must be")):
            assert ids[case] is not None and words in ids[case], (p, rank, case, ids[case])
        msg = ids["original_out_of_range"]
        assert msg is not None and not msg.startswith("WRONG"), (p, rank, msg)
        if rank == 0:
            assert "out of range" in msg, msg


def _renumbered_one_part():
    """A one-process graph whose new ids are not its original ids: a one-part partition with
    its node_ids permuted (as if the nodes had come in another order)."""
    import copy
    import tempfile

    from torch_geometric.data import Data
    n = 9
    ei = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    with tempfile.TemporaryDirectory() as d:
        pyg_sar.partition_graph(Data(edge_index=ei, num_nodes=n), 1, d, method="random")
        graph = copy.deepcopy(pyg_sar.load_partition(d, 0).edge_index)
    graph.node_ids = torch.tensor([4, 7, 0, 8, 2, 1, 6, 3, 5])
    return graph


def test_one_process_ids():
    graph = _renumbered_one_part()
    z = torch.stack([graph.node_ids, 10 * graph.node_ids], 1).double().requires_grad_()
    orig = torch.tensor([3, 3, 0, 8, 5])
    rows = gather(z, orig, ids="original", graph=graph)
    assert torch.equal(rows.detach().long(), torch.stack([orig, 10 * orig], 1))
    rows[:, 0].sum().backward()
    assert torch.equal(z.grad[:, 0], torch.bincount(orig, minlength=9).double()[graph.node_ids])
    new = torch.tensor([0, 8, 8])
    assert torch.equal(gather(z, new, ids="new", node_offsets=graph)[:, 0].long(),
                       graph.node_ids[new])
    assert torch.equal(gather(z, new, ids="original", context=graph)[:, 0].long(), new)
    # left out with a renumbered graph: an error naming both choices, never rows
    for kw in ({"node_offsets": graph}, {"context": graph}, {"graph": graph}):
        with pytest.raises(ValueError, match=r'ids="new" .*ids="original"'):
            gather(z, orig, **kw)
    with pytest.raises(ValueError, match="not the identity"):
        gather(z, orig, graph=graph)
    with pytest.raises(ValueError, match=r'ids="original" needs the partition.s graph'):
        gather(z, orig, ids="original")
    with pytest.raises(ValueError, match="ids must be"):
        gather(z, orig, ids=True)
    # no partition, or a plain row layout: new ids are the only ids, ids may be left out
    assert torch.equal(gather(z, new), z[new])
    assert torch.equal(gather(z, new, node_offsets=[0, 9]), z[new])


@pytest.mark.parametrize("index, match", [
    (torch.tensor([0.0]), "integer"), (torch.tensor([[0]]), "1-d"),
    (torch.tensor([6]), "node id 6"), (torch.tensor([1, -1]), "node id -1"),
])
def test_one_process_errors(index, match):
    with pytest.raises(ValueError, match=match):
        gather(torch.randn(6, 2), index)
    with pytest.raises(ValueError, match="z has 6 rows"):
        gather(torch.randn(6, 2), torch.tensor([0]), node_offsets=[0, 5])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_equal_cpu(tmp_path):
    """Two ranks computing on CUDA (gloo, staged through the host): gather and negatives equal
    their CPU results."""
    from pyg_sar.testing import run_on_ranks
    nc = runpy.run_path(str(HERE / "negatives_cases.py"))
    pyg_sar.partition_graph(nc["graph"](), 2, tmp_path / "p2", method="random", seed=2)
    res = run_on_ranks(f"{HERE / 'pairs_cases.py'}:cuda_suite", 2, timeout=300,
                       device="cuda", kwargs={"parts": str(tmp_path / "p2")})
    for r in res:
        assert r["device"].startswith("cuda"), r
        assert r["out_equal"] and r["neg_equal"] and r["grad_rel"] <= TOL, r
