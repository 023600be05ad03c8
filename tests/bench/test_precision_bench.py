"""The precision benchmark (``benchmarks/precision.py``): a smoke run on a tiny graph checks every
field of its JSON and the exact bytes of bf16 on the wire; the generated docs tables must equal
what ``--write-docs`` makes of the committed JSON."""
from __future__ import annotations

import json

import pytest

from pyg_sar.testing import has_mpi
from tests.support import ROOT, load_benchmark

precision = load_benchmark("precision")

ROW_FIELDS = {"model", "variant", "rank", "autocast", "wire_dtype", "width", "mode", "num_nodes",
              "halo_rows", "threads", "step_s", "step_times_s", "peak_growth_mb",
              "peak_growth_all_mb", "saved_mb", "bytes_sent", "bytes_recv", "messages",
              "comm_wait_s", "allreduce_s", "traffic_sent", "output_dtype", "first_loss",
              "last_loss", "error", "workload", "world_size"}
SUMMARY_FIELDS = {"workload", "world_size", "model", "variant", "error", "step_s",
                  "peak_growth_mb", "saved_mb", "bytes_sent_mb", "bytes_recv_mb",
                  "bytes_sent_total", "bytes_recv_total", "traffic_sent", "comm_wait_s",
                  "output_dtype", "first_loss", "speedup_vs_float32", "peak_ratio_vs_float32",
                  "saved_ratio_vs_float32", "bytes_ratio_vs_float32"}


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec (mpich/Open MPI) and mpi4py")
def test_precision_harness_tiny(tmp_path):
    out = tmp_path / "precision.json"
    result = precision.measure(["tiny"], [1, 2], ["sage"], list(precision.VARIANTS), warmup=2,
                               repeats=5, work=tmp_path, out=out, timeout=600)
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert result["failures"] == []
    assert {"machine", "warmup", "repeats", "workloads", "rows", "summary"} <= set(result)
    errors = [(r["world_size"], r["variant"], r["error"]) for r in result["rows"] if r["error"]]
    assert errors == []
    # P = 1: float32 and bf16 on one rank; P = 2: every variant on both ranks
    got = sorted((r["world_size"], r["variant"], r["rank"]) for r in result["rows"])
    want = sorted([(1, v, 0) for v in ("float32", "bf16")]
                  + [(2, v, q) for v in precision.VARIANTS for q in (0, 1)])
    assert got == want
    for r in result["rows"]:
        assert ROW_FIELDS <= set(r), ROW_FIELDS - set(r)
        assert len(r["step_times_s"]) == 5 and r["step_s"] > 0 and r["saved_mb"] > 0
        assert r["output_dtype"] in ("float32", "bfloat16")
    for s in result["summary"]:
        assert SUMMARY_FIELDS <= set(s), SUMMARY_FIELDS - set(s)
    rows = {(r["world_size"], r["variant"], r["rank"]): r for r in result["rows"]}
    for q in (0, 1):
        f32 = rows[(2, "float32", q)]
        assert f32["bytes_sent"] > 0 and f32["bytes_recv"] > 0
        for v in ("float32_wire", "bf16_wire"):
            # every row and gradient crosses as bf16: exactly half of float32's bytes
            assert 2 * rows[(2, v, q)]["bytes_sent"] == f32["bytes_sent"], v
            assert 2 * rows[(2, v, q)]["bytes_recv"] == f32["bytes_recv"], v
            for d, b in f32["traffic_sent"].items():
                assert 2 * rows[(2, v, q)]["traffic_sent"][d] == b, (v, d)
    by = {(s["world_size"], s["variant"]): s for s in result["summary"]}
    assert by[(2, "float32_wire")]["bytes_ratio_vs_float32"] == 0.5
    assert by[(2, "bf16_wire")]["bytes_ratio_vs_float32"] == 0.5
    # autocast keeps bf16 activations for backward: fewer bytes saved than float32
    for p in (1, 2):
        assert by[(p, "bf16")]["saved_mb"] < by[(p, "float32")]["saved_mb"]
    assert precision.table(result).count("\n") == len(result["summary"]) + 1


@pytest.mark.parametrize("path", precision.DOC_FILES, ids=lambda p: p.name)
def test_docs_table_is_generated_from_committed_json(path):
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} does not exist in this tree")
    result, acc = precision.load_results()
    assert result is not None, "benchmarks/results/precision.json is missing"
    text = path.read_text()
    assert precision.BEGIN in text and precision.END in text, f"{path}: markers missing"
    assert precision.marked_section(text) == precision.docs_section(result, acc), (
        f"{path}: the table differs from the JSON; run python benchmarks/precision.py "
        "--write-docs")


def test_splice_needs_markers(tmp_path):
    with pytest.raises(ValueError, match="markers"):
        precision.splice("no markers here", "x", tmp_path / "f.md")
    text = f"a\n{precision.BEGIN}\nold\n{precision.END}\nb\n"
    new = precision.splice(text, "new", tmp_path / "f.md")
    assert new == f"a\n{precision.BEGIN}\nnew\n{precision.END}\nb\n"
    assert precision.marked_section(new) == "new"
