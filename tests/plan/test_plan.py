"""The capacity planner (``pyg_sar.plan``): monotonicity, bad input, the CLI, and one prediction
checked against a real measured run (bytes exactly, step memory within 15%)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pyg_sar
from pyg_sar import plan
from pyg_sar.testing import has_mpi, run_on_ranks

ROOT = Path(__file__).resolve().parents[2]
CORA = dict(num_nodes=2708, num_edges=10556, num_features=1433, num_classes=7)


def _w(**kw) -> plan.Workload:
    return plan.Workload(**{**CORA, **kw})


# --------------------------------------------------------------------------- monotonicity
@pytest.mark.parametrize("model,heads", [("sage", 1), ("gcn", 1), ("gat", 4)])
@pytest.mark.parametrize("mode", plan.MODES)
def test_memory_per_rank_falls_with_ranks(model, mode, heads):
    big = dict(num_nodes=10_000_000, num_edges=200_000_000, num_features=128, num_classes=10)
    peaks = [plan.predict(plan.Workload(**big, model=model, mode=mode, heads=heads,
                                        world_size=p, partitioning="random")).peak_bytes
             for p in (1, 2, 4, 8, 16, 32)]
    assert all(a > b for a, b in zip(peaks, peaks[1:])), peaks


def test_sar_needs_least_memory_and_halo_most():
    for model, heads in (("sage", 1), ("gat", 4)):
        step = {m: plan.predict(_w(model=model, mode=m, heads=heads, world_size=4,
                                   halo_fraction=0.5)).step_bytes for m in plan.MODES}
        assert step["sar"] < step["sa"] < step["halo"], (model, step)


def test_bytes_grow_with_halo_and_width_and_time_falls_with_bandwidth():
    by_halo = [plan.predict(_w(world_size=4, halo_fraction=f)).bytes_per_epoch
               for f in (0.0, 0.1, 0.5, 1.0)]
    assert by_halo[0] == plan.predict(_w(world_size=4, halo_fraction=0.0)).traffic["allreduce"]
    assert all(a < b for a, b in zip(by_halo, by_halo[1:]))
    by_hidden = [plan.predict(_w(world_size=4, hidden=hd, halo_fraction=0.3))
                 for hd in (64, 128, 256)]
    assert all(a.bytes_per_epoch < b.bytes_per_epoch and a.peak_bytes < b.peak_bytes
               for a, b in zip(by_hidden, by_hidden[1:]))
    times = [plan.predict(_w(world_size=4, halo_fraction=0.3), bw).epoch_s
             for bw in (1e8, 1e9, 1e10)]
    assert times[0] > times[1] > times[2] > 0


def test_gat_sar_refetches_and_sage_does_not():
    gat = plan.predict(_w(model="gat", heads=4, hidden=128, world_size=2, halo_fraction=0.2))
    assert gat.traffic["refetch"] == gat.traffic["rows"] > 0
    sage = plan.predict(_w(world_size=2, halo_fraction=0.2))
    assert sage.traffic["refetch"] == 0 and sage.traffic["rows"] > 0
    sa = plan.predict(_w(model="gat", heads=4, hidden=128, mode="sa", world_size=2,
                         halo_fraction=0.2))
    assert sa.traffic["refetch"] == 0


def test_random_halo_estimate():
    # (P - 1) / P of the edges are cut; a node is needed by a rank if one of its d out-edges
    # lands there: 1 - (1 - 1/P)^d
    assert plan.estimate_halo_fraction(1000, 10_000, 1, "random") == 0.0
    assert plan.estimate_halo_fraction(1000, 10_000, 2, "random") == pytest.approx(1 - 0.5**10)
    fr = [plan.estimate_halo_fraction(1000, 10_000, p, "random") for p in (2, 4, 8, 16)]
    assert all(a > b for a, b in zip(fr, fr[1:]))
    assert (plan.estimate_halo_fraction(1000, 10_000, 4, "metis")
            <= plan.estimate_halo_fraction(1000, 10_000, 4, "random"))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("field,value", [
    ("num_nodes", 0), ("num_edges", -1), ("num_features", 2.5), ("hidden", 0), ("layers", -3),
    ("world_size", 0), ("model", "gin"), ("mode", "full"), ("halo_fraction", 1.5),
    ("halo_fraction", float("nan")), ("partitioning", "spectral"), ("pipeline_depth", -1),
    ("dtype_bytes", 2)])
def test_bad_workload_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        _w(**{field: value})


def test_bad_combinations_are_named():
    with pytest.raises(ValueError, match="world_size 5000 exceeds num_nodes 2708"):
        _w(world_size=5000)
    with pytest.raises(ValueError, match="hidden 130 must be a multiple of heads 4"):
        _w(model="gat", hidden=130, heads=4)
    with pytest.raises(ValueError, match="bandwidth_bps"):
        plan.predict(_w(), bandwidth_bps=-1.0)
    with pytest.raises(ValueError, match="compute_speedup"):
        plan.predict(_w(), compute_speedup=0.0)
    with pytest.raises(ValueError, match="'fast'"):
        plan.parse_bandwidth("fast")
    with pytest.raises(ValueError, match="partitioning"):
        plan.estimate_halo_fraction(10, 10, 2, "kahip")


def test_partition_stats_reads_meta(tmp_path):
    with pytest.raises(ValueError, match="not a partition folder"):
        plan.partition_stats(tmp_path)
    (tmp_path / "meta.json").write_text(json.dumps({"num_nodes": 10}))
    with pytest.raises(ValueError, match="lacks partition sizes"):
        plan.partition_stats(tmp_path)
    from pyg_sar.datasets import sbm
    data = sbm(num_nodes=300, num_edges=2000, num_classes=3, homophily=0.5, seed=0)
    pyg_sar.partition_graph(data, 3, tmp_path / "p3", method="random")
    st = plan.partition_stats(tmp_path / "p3")
    assert (st["num_nodes"], st["num_edges"], st["world_size"]) == (300, 2000, 3)
    meta = json.loads((tmp_path / "p3" / "meta.json").read_text())
    sizes, recv = meta["part_num_nodes"], [sum(p["recv_counts"]) for p in meta["parts"]]
    expect = sum(r / (300 - n) for r, n in zip(recv, sizes)) / 3
    assert st["halo_fraction"] == pytest.approx(expect)
    # random partitioning: the estimate is in the right range for this graph (d = 6.7)
    est = plan.estimate_halo_fraction(300, 2000, 3, "random")
    assert abs(st["halo_fraction"] - est) < 0.1, (st["halo_fraction"], est)


# --------------------------------------------------------------------------- CLI
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyg_sar.plan", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_preset_papers100m_prints_paper_figures():
    r = _cli("--preset", "papers100m")
    assert r.returncode == 0, r.stderr
    lines = [ln.split() for ln in r.stdout.splitlines()]
    rows = [ln for ln in lines if ln and ln[0] in ("sage", "gat")]
    assert [(ln[0], ln[2], ln[-1]) for ln in rows] == [
        ("sage", "32", "95"), ("sage", "64", "47"), ("sage", "128", "25"),
        ("gat", "32", "67"), ("gat", "64", "35"), ("gat", "128", "19")]
    peaks = [float(ln[4]) for ln in rows]
    assert peaks[0] > peaks[1] > peaks[2] and peaks[3] > peaks[4] > peaks[5]


def test_cli_sizes_and_bad_input():
    r = _cli("--nodes", "2708", "--edges", "10556", "--features", "1433", "--classes", "7",
             "--mode", "sar", "halo", "--world-sizes", "1", "2", "--bandwidth", "1gbit")
    assert r.returncode == 0, r.stderr
    assert len([ln for ln in r.stdout.splitlines() if ln.startswith("sage")]) == 4
    r = _cli("--nodes", "2708", "--edges", "10556", "--features", "1433")
    assert r.returncode == 2 and "--classes" in r.stderr
    r = _cli("--nodes", "2708", "--edges", "10556", "--features", "1433", "--classes", "7",
             "--halo-fraction", "3")
    assert r.returncode == 2 and "halo_fraction must be in [0, 1] (got 3.0)" in r.stderr
    r = _cli("--preset", "papers100m", "--bandwidth", "slow")
    assert r.returncode == 2 and "'slow'" in r.stderr


# --------------------------------------------------------------------------- a real run
@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec (mpich/Open MPI) and mpi4py")
def test_prediction_matches_a_measured_run(tmp_path):
    """Dense SBM, 12k nodes, SAGE and GAT in mode sar at P = 2 (one launch; ~25 s here
    under load): each rank's engine bytes per epoch equal the per-rank prediction
    (``predict_partition``); the step's peak RSS growth is
    within 15% (measured as benchmarks/plan_validation.py does, with its own code)."""
    from pyg_sar.datasets import sbm
    data = sbm(num_nodes=12_000, num_edges=110_000, num_classes=16, homophily=0.2, seed=0)
    pyg_sar.partition_graph(data, 2, tmp_path / "p2", method="metis")
    st = plan.partition_stats(tmp_path / "p2")
    target = f"{ROOT / 'benchmarks' / 'plan_validation.py'}:rank_measure"
    from tests.support import load_benchmark
    MALLOC_ENV = load_benchmark("procmem").MALLOC_ENV  # RSS follows live memory
    ranks = run_on_ranks(target, 2, timeout=300, env=MALLOC_ENV,
                         kwargs={"parts": str(tmp_path / "p2"), "models": ["sage", "gat"],
                                 "modes": ["sar"], "warmup": 1, "repeats": 2,
                                 "count_saved": False})
    for model, hidden, heads in (("sage", 256, 1), ("gat", 128, 4)):
        rows = [r for rank in ranks for r in rank if r["model"] == model]
        pl = plan.predict(plan.Workload(st["num_nodes"], st["num_edges"], st["num_features"],
                                        st["num_classes"], hidden, 3, heads, model, "sar", 2,
                                        halo_fraction=st["halo_fraction"]))
        # per rank from the partition's own sizes (exact for any balance)
        pp = plan.predict_partition(tmp_path / "p2", plan.Workload(
            1, 1, 1, 1, hidden, 3, heads, model, "sar"))
        for r in rows:
            rp = pp.ranks[r["rank"]].plan
            assert r["bytes_sent"] == pytest.approx(
                rp.bytes_per_epoch - rp.traffic["allreduce"], rel=1e-9), (model, r["rank"])
        measured = max(r["peak_growth_mb"] for r in rows) * plan.MB
        assert abs(pl.step_bytes - measured) <= 0.15 * measured, (model, pl.step_bytes,
                                                                  measured)
