"""Chi-square tests at fixed seeds: the samplers draw from their target distributions.

GraphSAGE: every neighbour of a row is equally likely, and every ``s``-subset too. LADIES: a
single pick is proportional to the summed squared row-normalised values; ``s`` picks follow
successive sampling without replacement (inclusion probabilities enumerated exactly).
"""
from __future__ import annotations

import itertools

import pytest
import torch
from scipy.stats import chisquare

from pyg_sar.ops import sampling as ops
from pyg_sar.ops import sampling_rng as rng
from pyg_sar.ops.sampling import native_sampling_available
from pyg_sar.sampling import SamplingGraph

from .helpers import random_graph

BACKENDS = ["reference"] + (["native"] if native_sampling_available() else [])
P_MIN = 1e-3  # at a fixed seed these are deterministic; a wrong sampler gives p ~ 0


def _keys(n: int, salt: int) -> torch.Tensor:
    return rng.combine_tensor(torch.full((n,), rng.make_key(salt)), torch.arange(n))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("deg,fanout", [(20, 5), (7, 6), (200, 15)])
def test_graphsage_neighbours_are_uniform(backend, deg, fanout):
    trials = 40_000 if deg < 100 else 8_000
    rowptr = torch.tensor([0, deg])
    rows = torch.zeros(trials, dtype=torch.long)
    ptr, pos = ops.sample_uniform(rowptr, rows, _keys(trials, deg), fanout, backend=backend)
    assert torch.equal(ptr.diff(), torch.full((trials,), fanout))
    counts = torch.bincount(pos, minlength=deg).double()
    expected = torch.full((deg,), trials * fanout / deg, dtype=torch.float64)
    assert chisquare(counts, expected).pvalue > P_MIN


@pytest.mark.parametrize("backend", BACKENDS)
def test_graphsage_subsets_are_uniform(backend):
    deg, fanout, trials = 6, 3, 40_000
    ptr, pos = ops.sample_uniform(torch.tensor([0, deg]), torch.zeros(trials, dtype=torch.long),
                                  _keys(trials, 1), fanout, backend=backend)
    subsets = {s: i for i, s in enumerate(itertools.combinations(range(deg), fanout))}
    index = torch.tensor([subsets[tuple(r)] for r in pos.view(trials, fanout).tolist()])
    counts = torch.bincount(index, minlength=len(subsets)).double()
    assert chisquare(counts, torch.full_like(counts, trials / len(subsets))).pvalue > P_MIN


@pytest.mark.parametrize("backend", BACKENDS)
def test_ladies_single_pick_is_proportional_to_squared_values(backend):
    data = random_graph(60, 300, seed=2)
    g = SamplingGraph.from_edge_index(data.edge_index, 60)
    frontier = torch.tensor([0, 1, 2, 10, 11, 30])
    ptr, cand, weight = ops.ladies_weights(g.rowptr, g.col, g.values, frontier,
                                           torch.tensor([0, frontier.numel()]), 60,
                                           backend=backend)
    assert cand.numel() > 5
    trials = 60_000 if backend == "native" else 8_000  # the reference loops over rows
    rep_ptr = torch.arange(trials + 1) * cand.numel()
    out_ptr, pos = ops.sample_weighted(rep_ptr, weight.repeat(trials), _keys(trials, 3), 1,
                                       backend=backend)
    counts = torch.bincount(pos % cand.numel(), minlength=cand.numel()).double()
    expected = weight / weight.sum() * trials
    assert chisquare(counts, expected).pvalue > P_MIN


def _successive_inclusion(w: list[float], s: int) -> list[float]:
    """Exact inclusion probabilities of successive sampling without replacement."""
    incl = [0.0] * len(w)
    for order in itertools.permutations(range(len(w)), s):
        p, left = 1.0, sum(w)
        for j in order:
            p *= w[j] / left
            left -= w[j]
        for j in order:
            incl[j] += p
    return incl


@pytest.mark.parametrize("backend", BACKENDS)
def test_ladies_several_picks_follow_successive_sampling(backend):
    w = [0.05, 0.4, 0.0, 0.1, 0.25, 0.7, 0.02]
    s, trials = 3, (40_000 if backend == "native" else 8_000)
    weight = torch.tensor(w, dtype=torch.float64).repeat(trials)
    ptr = torch.arange(trials + 1) * len(w)
    out_ptr, pos = ops.sample_weighted(ptr, weight, _keys(trials, 4), s, backend=backend)
    assert torch.equal(out_ptr.diff(), torch.full((trials,), s))
    local = (pos % len(w)).view(trials, s)
    assert bool((local[:, 1:] > local[:, :-1]).all()), "a pick repeated (or unsorted)"
    counts = torch.bincount(local.reshape(-1), minlength=len(w)).double()
    assert counts[2] == 0  # zero weight: never picked
    incl = torch.tensor(_successive_inclusion(w, s), dtype=torch.float64)
    keep = incl > 0
    assert chisquare(counts[keep], incl[keep] * trials).pvalue > P_MIN
