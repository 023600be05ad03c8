"""The planner's per-rank prediction of a written partition (``plan.predict_partition``, CLI
``python -m pyg_sar.plan --parts DIR``): the per-rank sizes it reads, its agreement with the
mean-based prediction on an evenly split partition, and bad folders refused by name."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pyg_sar
from pyg_sar import plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    from pyg_sar.datasets import rmat
    base = tmp_path_factory.mktemp("predict_partition")
    data = rmat(2000, 10_000, seed=0)
    out = {}
    for name, kw in {"nodes": dict(method="metis", balance="nodes"),
                     "edges": dict(method="metis", balance="edges"),
                     "even": dict(method="contiguous")}.items():
        out[name] = pyg_sar.partition_graph(data, 4, base / name, **kw)
    return out


@pytest.mark.parametrize("name", ["nodes", "edges"])
def test_reads_each_ranks_sizes(folders, name):
    pp = plan.predict_partition(folders[name])
    assert [r.rank for r in pp.ranks] == [0, 1, 2, 3]
    assert pp.workload.world_size == 4 and pp.workload.num_nodes == 2000
    for r in pp.ranks:  # the loaded part is the oracle
        part = pyg_sar.load_partition(folders[name], r.rank)
        assert (r.num_nodes, r.num_edges) == (part.num_nodes, part.num_edges)
        assert r.halo_rows == sum(part.graph.recv_counts)
        assert r.send_rows == sum(int(idx.numel()) for idx in part.graph.send_idx)
        assert r.plan.local_nodes == part.num_nodes and r.plan.halo_rows == r.halo_rows
    # every row sent is received by someone
    assert sum(r.send_rows for r in pp.ranks) == sum(r.halo_rows for r in pp.ranks)
    assert pp.max_peak.plan.peak_bytes == max(r.plan.peak_bytes for r in pp.ranks)


def test_node_balanced_rmat_puts_the_peak_on_the_rank_with_most_edges(folders):
    pp = plan.predict_partition(folders["nodes"], plan.Workload(1, 1, 1, 1, mode="halo"))
    assert pp.workload.mode == "halo" and pp.workload.num_edges == 10_000  # sizes replaced
    busiest = max(pp.ranks, key=lambda r: r.num_edges)
    assert pp.max_peak.rank == busiest.rank  # halo mode holds per-edge tensors
    peaks = sorted(r.plan.peak_bytes for r in pp.ranks)
    assert peaks[-1] > peaks[0]


def test_even_partition_agrees_with_the_mean_prediction(folders):
    """Contiguous split: every rank holds N / P nodes, so the mean over ranks of the per-rank
    traffic equals predict() with the partition's mean halo fraction."""
    for model, heads, hidden in (("sage", 1, 256), ("gat", 4, 128)):
        w = plan.Workload(1, 1, 1, 1, hidden=hidden, heads=heads, model=model)
        pp = plan.predict_partition(folders["even"], w)
        assert {r.num_nodes for r in pp.ranks} == {500}
        mean = plan.predict(pp.workload)
        engine = [r.plan.bytes_per_epoch - r.plan.traffic["allreduce"] for r in pp.ranks]
        assert sum(engine) / 4 == pytest.approx(
            mean.bytes_per_epoch - mean.traffic["allreduce"], rel=1e-12)
        assert pp.ranks[0].plan.traffic["allreduce"] == mean.traffic["allreduce"]


def test_cli_prints_every_rank(folders, capsys):
    assert plan.main(["--parts", str(folders["edges"]), "--mode", "sar"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("rank "))
    rows = [ln.split() for ln in lines[start + 1:start + 5]]
    pp = plan.predict_partition(folders["edges"])
    for row, rp in zip(rows, pp.ranks):
        assert [int(v) for v in row[:5]] == [rp.rank, rp.num_nodes, rp.num_edges,
                                              rp.halo_rows, rp.send_rows]
        assert float(row[5]) == pytest.approx(rp.plan.peak_bytes / plan.MB, abs=0.06)
    assert lines[start + 5].startswith(f"max peak: rank {pp.max_peak.rank}")


def test_bad_folders_are_named(tmp_path, folders):
    with pytest.raises(ValueError, match="not a partition folder"):
        plan.predict_partition(tmp_path / "nowhere")
    r = subprocess.run([sys.executable, "-m", "pyg_sar.plan", "--parts",
                        str(tmp_path / "nowhere")], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "nowhere/meta.json not found" in r.stderr
    meta = json.loads((folders["edges"] / "meta.json").read_text())
    meta["part_num_edges"] = meta["part_num_edges"][:3]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="num_parts 4 but per-part lists of 4 / 3 / 4 / 4"):
        plan.predict_partition(tmp_path)
    del meta["parts"][0]["send_counts"]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="lacks per-part sizes.*send_counts"):
        plan.predict_partition(tmp_path)
    with pytest.raises(ValueError, match="bandwidth_bps must be a positive number"):
        plan.predict_partition(folders["edges"], bandwidth_bps=0)
