"""Compression across real processes (``tests/compression/rank_cases.py``): ratio 1 is
bit-identical to no compression in modes sar/sa/halo on every engine path; under lossy codecs
SAR equals SA exactly and every mode equals plain PyG on each rank's compressed view of the
graph; the traffic ledger matches the communicator and the codec's wire format; eval mode sends
full rows. Error feedback over several SGD steps keeps SAR == SA bitwise (residuals included)
and the traffic unchanged; ``directions`` and ``bit_stages`` show in the ledger.
"""
from __future__ import annotations

import pytest

from tests.compression import rank_cases as rc

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
    # 5 models x 3 modes + 3 generic-attention plans, x 3 codecs + 2 with error feedback,
    # on 3 ranks
    assert seen == (5 * 3 + 3) * 5 * 3


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


def test_error_feedback_over_steps_sar_equals_sa_and_halo_follows(results):
    seen = 0
    for where, got in _ranks(results, "ef_steps"):
        assert len(got) == 5 * 2, (where, sorted(got))
        for case, v in got.items():
            assert v["sar_eq_sa"] == [True] * 3, f"{where} {case}: SAR != SA ({v})"
            # residuals exist after every step, and are not all zero
            assert all(n > 0 for n in v["residual_keys"]), (where, case, v)
            assert all(r > 1e-6 for r in v["residual_norm"]), (where, case, v)
            # step 1 reads no residual: it equals the run without feedback ...
            assert v["first_step_as_noef"], (where, case)
            # ... and the later steps differ from it
            assert v["vs_noef"] > 1e-6, (where, case, v)
            assert v["ledger_as_noef"] == [True] * 3, (where, case)
            if "halo_diff" in v:
                assert v["halo_keys"] == [True] * 3, (where, case, v)
                # quantize: a 1e-16 difference may flip a stochastic-rounding code later on
                checked = v["halo_diff"] if "subset" in case else v["halo_diff"][:1]
                assert max(checked) <= 1e-10, (where, case, v)
            seen += 1
    assert seen == 5 * 2 * 3


def _sent(ledger: dict, direction: str) -> int:
    return sum(d[direction]["sent"] for d in ledger.values() if direction in d)


def test_directions_compress_only_their_messages(results):
    for where, got in _ranks(results, "directions"):
        ef_rows = got.pop("ef_rows")
        assert ef_rows == {"res_directions": ["rows"], "ledger_as_rows": True}, (where, ef_rows)
        for name, v in got.items():
            none, rows, grads, both = v["none"], v["rows"], v["grads"], v["both"]
            for layer in none:
                assert rows[layer]["grads"] == none[layer]["grads"], (where, name, layer, v)
                assert grads[layer]["rows"] == none[layer]["rows"], (where, name, layer, v)
                assert grads[layer].get("refetch") == none[layer].get("refetch"), (where, v)
                assert both[layer]["rows"] == rows[layer]["rows"], (where, name, layer, v)
                assert both[layer]["grads"] == grads[layer]["grads"], (where, name, layer, v)
            if _sent(none, "rows"):
                assert _sent(rows, "rows") < _sent(none, "rows"), (where, name, v)
                assert _sent(grads, "grads") < _sent(none, "grads"), (where, name, v)


def test_bit_stages_ledger_follows_the_wire_format_step_by_step(results):
    for where, got in _ranks(results, "stages_bytes"):
        stages = [tuple(s) for s in got["stages"]]
        assert stages == [(16.0, 4), (8.0, 6), (4.0, 10)], stages
        ratios = {int(t): s["ratio"] for t, s in got["steps"].items()}
        assert ratios == {0: 16.0, 3: 16.0, 4: 8.0, 5: 8.0, 6: 4.0, 9: 4.0, 10: 1.0}, ratios
        for t, s in got["steps"].items():
            assert s["ledger"] == s["expected"], (where, t, s)
        # 2, 4, 8 bits, then raw: every stage sends more (a rank that sends nothing: all 0)
        sent = [_ledger_sent(got["steps"][str(t)]["ledger"]) for t in (0, 4, 6, 10)]
        assert all(a < b for a, b in zip(sent, sent[1:])) or not any(sent), (where, sent)


def _ledger_sent(ledger: dict) -> int:
    return sum(v["sent"] for d in ledger.values() for v in d.values())


def test_error_feedback_resumes_bitwise_from_a_checkpoint(results):
    for where, got in _ranks(results, "ef_resume"):
        for case in ("quantize4", "subset2.5"):
            v = got[case]
            assert v["straight_eq_resumed"] == [True] * 4, (where, case, v)
            assert v["loaded_t"] == v["comp_t"] == 5, (where, case, v)
            assert v["residual_keys"] > 0, (where, case, v)
        for pair, message in got["refused"].items():
            assert message is not None and "was compressed with" in message, (where, pair)
            assert "error_feedback" in message, (where, pair, message)


def test_logits_cross_as_bf16_while_lossy_and_raw_at_ratio_one(results):
    seen = 0
    for where, got in _ranks(results, "logits"):
        assert len(got) == 2 * 4, (where, sorted(got))
        for kernels in ("k1", "k0"):
            for codec in ("quantize16", "truncate2"):
                v = got[f"{kernels}/{codec}"]
                case = f"{where} {kernels}/{codec}"
                assert v["sar_eq_sa"] == [True] * 3, f"{case}: SAR != SA"
                # bf16 logits change the result (else the checks above prove nothing)
                assert v["vs_raw_logits"] > 1e-6, (case, v["vs_raw_logits"])
                assert v["ledgers"] == [v["expected"]] * 3, (case, v)
                assert {k: {d: n for d, n in dirs.items() if d != "refetch"}
                        for k, dirs in v["ledgers_sa"][0].items()} == {
                    k: {d: n for d, n in dirs.items() if d != "refetch"}
                    for k, dirs in v["expected"].items()}, (case, v)
                assert v["raw_logits_ledger"] == v["expected_raw_logits"], (case, v)
                if kernels == "k1":  # halo mode casts the logits alike and sends their bytes
                    # quantize: a 1e-16 difference may flip a rounding code after step 1
                    checked = v["halo_diff"] if codec == "truncate2" else v["halo_diff"][:1]
                    assert len(checked) and max(checked) <= 1e-10, (case, v["halo_diff"])
                    assert [sum(d["rows"] for d in h.values()) for h in v["halo_ledgers"]] == [
                        sum(d["rows"] for d in v["expected"].values())] * 3, (case, v)
            one = got[f"{kernels}/ratio1"]
            assert one["identical"] == [True] * 3 and one["ledger_equal"] == [True] * 3, \
                (where, kernels, one)
            st = got[f"{kernels}/stages"]
            assert st["sar_eq_sa"] == [True] * 3, (where, kernels, st)
            assert st["ledgers"][:2] == [st["expected_lossy"]] * 2, (where, kernels, st)
            # the last stage is raw: logits and features cross as without compression
            assert st["ledgers"][2] == st["expected_raw"] == st["plain"], (where, kernels, st)
            seen += 1
    assert seen == 2 * 3
