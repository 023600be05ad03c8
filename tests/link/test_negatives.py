"""Negatives keyed by (seed, epoch) (pyg_sar.link.negatives).

At P = 1, 3, 4 (one launch per P, shared with test_gather.py: pairs_cases.py) every rank's
negatives, mapped to original ids, equal the columns of its keys in the single-process
reference on the whole graph, so the union over ranks is the same for every P (uniform and
degree-weighted, with and without rejection of existing edges, kept sources, several negatives
per key, two epochs); bad keys on one rank raise ValueError on every rank. In one process:
independence of the thread count, plausible distributions (chi-square bounds, fixed seed),
rejection never returning an edge or a self-loop, new epochs drawing new negatives, argument
checks.
"""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.link.negatives import negative_sampling, reference_negative_sampling

HERE = Path(__file__).resolve().parent
CASES = HERE / "negatives_cases.py"
WORLD_SIZES = (1, 3, 4)
nc = runpy.run_path(str(CASES))
N = nc["N"]


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    pairs = runpy.run_path(str(HERE / "pairs_cases.py"))["shared"]()
    return pairs.suite_results(tmp_path_factory, "negatives")


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_each_rank_equals_the_reference(launches, p):
    for rank, res in enumerate(launches[p]):
        assert len(res["equal"]) == len(nc["CASES"]) == 16
        assert all(res["equal"].values()), (p, rank, res["equal"])


def test_union_over_ranks_is_the_same_for_every_p(launches):
    def union(p):
        cols = {}
        for res in launches[p]:
            for case, (keys, orig) in res["columns"].items():
                m = len(orig[0]) // max(len(keys), 1)
                for i, k in enumerate(keys):
                    cols[(case, k)] = [orig[0][i * m:(i + 1) * m], orig[1][i * m:(i + 1) * m]]
        return cols
    one = union(1)
    assert len(one) == 16 * nc["K"]
    assert union(3) == one and union(4) == one


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_bad_keys_raise_on_every_rank(launches, p):
    named = {"float_keys": "dtype torch.float64", "negative_key": "(got -4)",
             "src_out_of_range": f"src node id {N + 2}", "src_length": "one node id per key"}
    for rank, res in enumerate(r["errors"] for r in launches[p]):
        for case, msg in res.items():
            assert msg is not None and not msg.startswith("WRONG"), (p, rank, case, msg)
            assert named[case] in msg if rank == 0 else "another rank" in msg, (case, msg)


# ---- one process -------------------------------------------------------------------------
def _edges():
    return nc["graph"]().edge_index


def test_thread_count_does_not_matter():
    keys = torch.arange(5000)
    before = torch.get_num_threads()
    try:
        got = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append([reference_negative_sampling(_edges(), keys, num_nodes=N, seed=1,
                                                    epoch=2, num_neg=2, method=m,
                                                    reject_existing=True)
                        for m in ("uniform", "degree")])
        assert all(torch.equal(a, b) for a, b in zip(*got))
    finally:
        torch.set_num_threads(before)


def _chi2(counts: torch.Tensor, expected: torch.Tensor) -> float:
    keep = expected > 0
    assert int(counts[~keep].sum()) == 0  # nothing drawn where nothing is expected
    return float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())


def test_distributions_are_plausible():
    """Chi-square statistics of 60000 draws, far below a loose bound (2x the degrees of
    freedom; the expected value is the degrees of freedom), with a fixed seed."""
    ei = _edges()
    m = 60000
    neg = reference_negative_sampling(ei, torch.arange(m), num_nodes=N, seed=5, epoch=0)
    for row in (0, 1):  # both ends uniform
        counts = torch.bincount(neg[row], minlength=N).double()
        assert _chi2(counts, torch.full((N,), m / N, dtype=torch.float64)) < 2 * (N - 1)
    neg = reference_negative_sampling(ei, torch.arange(m), num_nodes=N, seed=5, epoch=0,
                                      method="degree")
    indeg = torch.bincount(ei[1], minlength=N).double()
    counts = torch.bincount(neg[1], minlength=N).double()
    dof = int((indeg > 0).sum()) - 1
    assert _chi2(counts, indeg / indeg.sum() * m) < 2 * dof
    counts = torch.bincount(neg[0], minlength=N).double()  # the source stays uniform
    assert _chi2(counts, torch.full((N,), m / N, dtype=torch.float64)) < 2 * (N - 1)


@pytest.mark.parametrize("method", ["uniform", "degree"])
@pytest.mark.parametrize("kept", [False, True])
def test_rejection_never_returns_an_edge(method, kept):
    ei = _edges()
    m = 3000
    src = torch.randint(0, N, (m,), generator=torch.Generator().manual_seed(3)) if kept else None
    kw = dict(num_nodes=N, seed=2, epoch=0, method=method, src=src)
    plain = reference_negative_sampling(ei, torch.arange(m), **kw)
    neg = reference_negative_sampling(ei, torch.arange(m), reject_existing=True, **kw)
    existing = set(map(tuple, ei.t().tolist()))

    def bad(pairs):
        return sum((s, d) in existing or s == d for s, d in pairs.t().tolist())
    assert bad(plain) > 0  # the draws without rejection do hit edges
    assert bad(neg) == 0
    if kept:
        assert torch.equal(neg[0], src)
    # an accepted first draw is kept: rejection only changes the rejected columns
    ok = torch.tensor([(s, d) not in existing and s != d for s, d in plain.t().tolist()])
    assert torch.equal(neg[:, ok], plain[:, ok])


def test_epochs_seeds_and_keys_change_the_draws():
    ei = _edges()
    keys = torch.arange(400)

    def draw(**kw):
        args = dict(num_nodes=N, seed=0, epoch=0, num_neg=2) | kw
        return reference_negative_sampling(ei, args.pop("keys", keys), **args)
    base = draw()
    for other in (draw(epoch=1), draw(seed=1)):
        assert float((other != base).double().mean()) > 0.9
    assert torch.equal(draw(keys=keys[100:200]), base[:, 200:400])  # a pure function of key
    assert torch.equal(draw(num_neg=3)[:, 0::3], base[:, 0::2])  # and of (key, j)


def test_partitioned_one_process():
    """A DistGraph of one part without any context equals the reference."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        pyg_sar.partition_graph(nc["graph"](), 1, d)
        part = pyg_sar.load_partition(d, 0)
        new_of = torch.empty(N, dtype=torch.long)
        new_of[part.node_ids] = torch.arange(N)
        for method in ("uniform", "degree"):
            neg = negative_sampling(part if method == "degree" else part.edge_index,
                                    torch.arange(30), seed=4, epoch=3,
                                    method=method, reject_existing=True, num_neg=2)
            ref = reference_negative_sampling(_edges(), torch.arange(30), num_nodes=N,
                                              seed=4, epoch=3, method=method,
                                              reject_existing=True, num_neg=2)
            assert torch.equal(part.node_ids[neg], ref)
    assert pyg_sar.link.negative_sampling is negative_sampling


@pytest.mark.parametrize("kw, match", [
    (dict(method="popular"), "method must be one of"),
    (dict(num_neg=0), "num_neg must be an integer >= 1"),
    (dict(max_tries=0), "max_tries"),
    (dict(seed=-1), "seed"),
    (dict(keys=torch.tensor([[0]])), "1-d integer"),
    (dict(keys=torch.tensor([0, -3])), "non-negative"),
    (dict(src=torch.tensor([0, N])), f"src node id {N}"),
    (dict(edge_index=torch.zeros(3, 2, dtype=torch.long)), r"shape \[2, E\]"),
    (dict(method="degree", edge_index=torch.zeros(2, 0, dtype=torch.long)), "needs a graph"),
])
def test_bad_arguments(kw, match):
    args = dict(edge_index=_edges(), keys=torch.arange(2), num_nodes=N, seed=0, epoch=0) | kw
    with pytest.raises(ValueError, match=match):
        reference_negative_sampling(args.pop("edge_index"), args.pop("keys"), **args)
