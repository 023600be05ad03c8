"""HGTConv and HANConv after ``pyg_sar.convert``, called as PyG users call them
(``conv(part.x_dict, part.edge_index_dict)``), against single-process PyG on the whole
HeteroData: P = 1 and 3, modes sar / sa / halo, float64, every node type's output (and HAN's
semantic attention weights), every input and parameter gradient within 1e-10, including a
rank holding no node of a type and a node type no given edge type reaches; SAR keeps no
remote row between forward and backward; bad input names the type.

One launch per P runs every case on a hand-built partition and on one written by
``pyg_sar.partition_graph`` (``hetero_attention_cases.both``).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pyg_sar.testing import run_on_ranks
from tests.hetero import hetero_attention_cases as hac
from tests.hetero import hetero_cases as hc

HERE = Path(__file__).resolve().parent

TOL = 1e-10
MODES = ("sar", "sa", "halo")
CASES = [[name, mode] for name in hac.MODELS for mode in MODES]
WORLD_SIZES = (1, 3)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    import pyg_sar
    root = tmp_path_factory.mktemp("hetero_attention_parts")
    out = {}
    for p in WORLD_SIZES:
        pyg_sar.partition_graph(hac.make_data(), p, root / f"p{p}", method="metis")
        res = run_on_ranks(f"{HERE / 'hetero_attention_cases.py'}:both", p, timeout=300,
                           kwargs=dict(cases=CASES, parts=str(root / f"p{p}")))
        for which in ("hand", "partition"):
            out[p, which] = [r[which] for r in res]
    return out


@pytest.mark.parametrize("which", ("hand", "partition"))
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "/".join(c))
def test_matches_pyg(results, world_size, which, case):
    for rank, res in enumerate(results[world_size, which]):
        got = res["/".join(case)]
        assert "error" not in got, f"rank {rank} of {world_size}: {got.get('error')}"
        worst = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"
        if case[0] == "han_weights":
            assert any(k.startswith("attn:") for k in got["errors"])


@pytest.mark.parametrize("which", ("hand", "partition"))
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("layer", ("hgt", "han"))
def test_sar_keeps_no_remote_rows(results, world_size, which, layer):
    """SA keeps exactly the fetched source rows (HGT: k and v over the combined graph; HAN:
    x_j and alpha_j per edge type) for backward; SAR keeps none."""
    for rank, res in enumerate(results[world_size, which]):
        saved = res[f"saved_bytes/{layer}"]
        assert "error" not in saved, saved
        assert saved["sa"] - saved["sar"] == saved["fetched_bytes"], (rank, saved)
        if world_size > 1:
            assert saved["fetched_bytes"] > 0, (rank, saved)


def test_a_rank_holds_no_node_of_a_type(results):
    """The hand-built P = 3 partition leaves rank 2 without "venue" nodes (2 of them), so
    the cases above include a rank that joins HAN's global mean with no node of a type."""
    assert [r["local_nodes"]["venue"] for r in results[3, "hand"]] == [1, 1, 0]


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_bad_input_names_the_type(results, world_size):
    for res in results[world_size, "hand"]:
        bad = res["bad_input"]
        assert bad["hgt_rows"].startswith("ValueError") and "'author'" in bad["hgt_rows"]
        assert bad["hgt_missing_type"].startswith("ValueError")
        assert "'inst'" in bad["hgt_missing_type"]
        for key in ("han_mixed", "hgt_mixed"):
            assert bad[key].startswith("ValueError") and "rev_employs" in bad[key], bad[key]


def test_combined_graph_holds_every_edge_once():
    """The combined graph (P = 3, rank by rank, no communication): every edge of every type
    appears once, from (edge type, source) to the destination type's row, with its type."""
    from pyg_sar.nn.adapters.hetero_attention import combined_graph
    data, world = hac.make_data(), 3
    parts = [hc.hand_partition(data, world, r) for r in range(world)]
    ets = list(data.edge_types)
    dst_types = [t for t in data.node_types if any(et[-1] == t for et in ets)]
    combos = [combined_graph(p.edge_index_dict, dst_types) for p in parts]
    got = set()
    for r, (graph, kind) in enumerate(combos):
        assert graph.is_bipartite and graph.num_edges == kind.numel()
        assert graph.num_nodes == sum(parts[r].x_dict[t].shape[0] for t in dst_types)
        for s, block in enumerate(graph.blocks):
            owner = combos[s][0]
            for e in range(block.num_edges):
                row, col = int(block.row[e]), int(block.col[e])
                src_row = col if s == r else int(owner.send_idx[r][col])
                et = ets[int(kind[block.edge_start + e])]
                # the source: which edge type's slice of s's rows, and the node in it
                base = sum(parts[s].edge_index_dict[x].num_src_nodes for x in ets[:ets.index(et)])
                src = int(parts[s].node_ids_dict[et[0]][src_row - base])
                lo = sum(parts[r].x_dict[t].shape[0] for t in dst_types[:dst_types.index(et[-1])])
                dst = int(parts[r].node_ids_dict[et[-1]][row - lo])
                assert (et, src, dst) not in got
                got.add((et, src, dst))
    want = {(et, int(a), int(b)) for et in ets for a, b in data[et].edge_index.t()}
    assert got == want
    assert int(sum(g.in_degree.sum() for g, _ in combos)) == len(want)
    # cached per graph dict: the same object again
    assert combined_graph(parts[0].edge_index_dict, dst_types)[0] is combos[0][0]
    assert torch.equal(combos[0][1], combined_graph(parts[0].edge_index_dict, dst_types)[1])
