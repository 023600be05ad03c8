"""The heterogeneous memory benchmark (``benchmarks/hetero_memory.py``): a smoke run on a tiny
MAG-shaped graph at P = 1 and 2 writes valid JSON with every field, one row per (model, mode,
rank), the single-process PyG reference at P = 1, and SAR's promise in the bytes saved for
backward (no more than halo mode's; halved per rank when P doubles); the Markdown table and the
plots are made from it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyg_sar.testing import has_mpi
from tests.support import load_benchmark

hetero_memory = load_benchmark("hetero_memory")

ROW_FIELDS = {"model", "mode", "rank", "world_size", "workload", "epoch_s", "epoch_times_s",
              "peak_growth_mb", "peak_growth_all_mb", "saved_mb", "bytes_sent", "bytes_recv",
              "messages", "comm_wait_s", "allreduce_s", "allreduce_bytes", "compute_s",
              "num_nodes", "threads"}
SUMMARY_FIELDS = {"workload", "world_size", "model", "mode", "peak_growth_mb", "saved_mb",
                  "epoch_s", "bytes_sent_mb", "bytes_recv_mb"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One tiny run at P = 1 and 2: (result, its JSON file)."""
    if not has_mpi():
        pytest.skip("needs mpiexec (mpich/Open MPI) and mpi4py")
    work = tmp_path_factory.mktemp("hetero_memory")
    out = work / "hetero_memory.json"
    result = hetero_memory.measure(300, [1, 2], ["rgcn", "hgt"], ["sar", "halo", "pyg"],
                                   warmup=1, repeats=1, work=work, out=out, timeout=600)
    return result, out


def test_hetero_memory_tiny(tiny):
    result, out = tiny
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert result["failures"] == []
    assert {"machine", "graph", "models", "warmup", "repeats", "rows", "summary",
            "wall_s"} <= set(result)
    graph = result["graph"]
    assert graph["num_nodes"]["paper"] == 300 and set(graph["num_nodes"]) == {
        "paper", "author", "institution", "field_of_study"}
    assert len(graph["num_edges"]) == 7  # 4 MAG edge types + 3 reverse ones
    got = sorted((r["world_size"], r["model"], r["mode"], r["rank"]) for r in result["rows"])
    want = sorted([(1, m, mode, 0) for m in ("rgcn", "hgt") for mode in ("sar", "halo", "pyg")]
                  + [(2, m, mode, q) for m in ("rgcn", "hgt") for mode in ("sar", "halo")
                     for q in (0, 1)])
    assert got == want
    for r in result["rows"]:
        assert ROW_FIELDS <= set(r), ROW_FIELDS - set(r)
        assert len(r["epoch_times_s"]) == 1 and r["epoch_s"] > 0 and r["saved_mb"] > 0
        if r["world_size"] == 2:
            assert r["bytes_sent"] > 0 and r["bytes_recv"] > 0, r
    for s in result["summary"]:
        assert SUMMARY_FIELDS <= set(s), SUMMARY_FIELDS - set(s)
    by = {(s["world_size"], s["model"], s["mode"]): s for s in result["summary"]}
    for model in ("rgcn", "hgt"):
        assert by[(2, model, "sar")]["saved_mb"] <= by[(2, model, "halo")]["saved_mb"], model
        assert by[(2, model, "sar")]["saved_mb"] < by[(1, model, "sar")]["saved_mb"], model
    assert hetero_memory.table(result).count("\n") == len(result["summary"]) + 1


def test_hetero_memory_plots(tiny, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (not a dependency)")
    result, _ = tiny
    # run.plot names its files relative to the folder above its own (here: tmp_path)
    monkeypatch.setattr(hetero_memory.suite_run, "HERE", tmp_path / "benchmarks")
    plots = hetero_memory.suite_run.plot(result, tmp_path / "plots", "hetero_tiny")
    assert [Path(p).name for p in plots] == ["hetero_tiny_memory.png",
                                             "hetero_tiny_epoch_time.png"]
    assert all((tmp_path / "plots" / Path(p).name).stat().st_size > 0 for p in plots)
