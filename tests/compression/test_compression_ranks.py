"""Compression across real processes (``tests/compression/rank_cases.py``): ratio 1 is
bit-identical to no compression in modes sar/sa/halo on every engine path; under lossy codecs
SAR equals SA exactly and every mode equals plain PyG on each rank's compressed view of the
graph; the traffic ledger matches the communicator and the codec's wire format; eval mode sends
full rows.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import rank_cases as rc  # noqa: E402

# P = 3 (random partition): every group; P = 2 (METIS): a second layout for the exact checks.
LAUNCHES = {3: ("random", list(rc.GROUPS)), 2: ("metis", ["sar_vs_sa", "bytes", "eval"])}


@pytest.fixture(scope="module")
def results(compression_launches):
    """P -> the ranks' results of ``rank_cases.suite`` (one launch per P shared with the other
    compression file: tests/compression/conftest.py)."""
    return compression_launches["rank_cases"]


def _ranks(results, group):
    return rc.ranks_with(results, LAUNCHES, group)


def test_ratio_one_is_bit_identical_to_no_compression(results):
    seen = 0
    for where, got in _ranks(results, "ratio1"):
        for case, v in got.items():
            assert v["identical"], f"{where} {case}: outputs or gradients differ"
            assert v["ledger_equal"], f"{where} {case}: traffic differs"
            seen += 1
    # 5 models x 3 modes + 3 generic-attention plans, x 3 codecs, on 3 ranks
    assert seen == (5 * 3 + 3) * 3 * 3


def test_sar_equals_sa_under_lossy_compression(results):
    for where, got in _ranks(results, "sar_vs_sa"):
        assert len(got) == 6 * len(rc.LOSSY)
        for case, v in got.items():
            assert v["max_abs_diff"] == 0.0, f"{where} {case}: SAR != SA ({v})"
            # the compression really changed the result (else the check proves nothing)
            assert v["vs_uncompressed"] > 1e-4, f"{where} {case}: no effect ({v})"


def test_every_mode_equals_pyg_on_the_compressed_view(results):
    for where, got in _ranks(results, "oracle"):
        assert len(got) == 3 * 3 * len(rc.LOSSY)
        for case, v in got.items():
            assert v["max_rel"] <= 1e-10, f"{where} {case}: {v}"
            assert v["vs_uncompressed"] > 1e-4, f"{where} {case}: no effect ({v})"


def test_fused_attention_equals_pyg_message_under_compression(results):
    for where, got in _ranks(results, "fused_vs_generic"):
        assert len(got) == 2 * len(rc.LOSSY)
        for case, err in got.items():
            assert err <= 1e-10, f"{where} {case}: {err}"


def test_byte_counters_match_the_communicator_and_the_wire_format(results):
    for where, got in _ranks(results, "bytes"):
        for case, v in got.items():
            if case.startswith("edgeconv/"):
                continue
            assert v["ledger_sent"] == v["comm_sent"], f"{where} {case}: {v}"
            assert v["ledger"] == v["expected"], f"{where} {case}: {v}"
        full, trunc = got["sar/None1"]["ledger_sent"], got["sar/truncate4"]["ledger_sent"]
        assert 0 < trunc < full / 3, (where, full, trunc)
        assert set(got["edgeconv/sar"]["ledger"]["conv1"]) == {"rows", "refetch", "grads"}
        assert set(got["edgeconv/sa"]["ledger"]["conv1"]) == {"rows", "grads"}
        for layer in ("conv1", "conv2"):
            sar = got["edgeconv/sar"]["ledger"][layer]
            assert sar["refetch"] == sar["rows"], (where, layer, sar)


def test_eval_sends_full_rows_and_subsets_follow_the_step(results):
    for where, got in _ranks(results, "eval"):
        assert got["eval_identical"] and got["eval_calls"] == {}, (where, got)
        assert got["in_eval_differs"] > 1e-4, (where, got)
        assert got["same_step_identical"], (where, got)
        assert got["next_step_differs"] > 1e-4, (where, got)
