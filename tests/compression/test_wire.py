"""How compression meets the engine's wire, across real processes
(``tests/compression/wire_cases.py``): mode sa keeps the compressed payload it received, not
decoded rows; attention logits cross raw while features are compressed; a halo-mode GAT/GATv2
layer binds its compressor once per forward and sends each source tensor once, so halo, sar
and sa agree under random codecs. ``SARConfig(wire_dtype=torch.bfloat16)``
(``wire_dtype_cases.py``): every mode equals PyG on the bf16-rounded view, SA equals SAR bit
for bit, and the ledger counts the narrower bytes.
"""
from __future__ import annotations

import pytest

from tests.compression import rank_cases as rc
from tests.compression import wire_cases as wc

# P = 3 (random partition): every group; P = 2 (METIS): the halo key check on another layout.
LAUNCHES = {3: ("random", list(wc.GROUPS)), 2: ("metis", ["halo"])}


@pytest.fixture(scope="module")
def results(compression_launches):
    """P -> the ranks' results of ``wire_cases.suite`` (one launch per P shared with the other
    compression file: tests/compression/conftest.py)."""
    return compression_launches["wire_cases"]


def _ranks(results, group):
    return rc.ranks_with(results, LAUNCHES, group)


# Lower bounds of (bytes of full rows) / (bytes kept) for the learned-weight GraphConv
# stack (float64 rows of 32 values): channel codecs at ratio 4 keep a quarter of the
# channels; quantisation at 8 bits keeps 1 byte a value plus a 16-byte header per row (>= 4x
# on 32 values), at 2 bits a quarter byte a value plus the header (>= 8x).
SHRINK = {"truncate4": 4.0, "subset4": 4.0, "quantize4": 4.0, "quantize16": 8.0}


def test_sa_keeps_the_compressed_payload_not_decoded_rows(results):
    seen = 0
    plans = 7
    for where, got in _ranks(results, "sa_memory"):
        assert len(got) == plans * len(wc.SA_CODECS)
        for case, v in got.items():
            name, _, codec = case.split("/")
            assert v["received"] > 0 and v["received_plain"] > 0, f"{where} {case}: {v}"
            if name == "gcn":
                # a linear aggregation without an edge-weight gradient: backward needs no
                # rows, so SA keeps nothing beyond what SAR saves
                assert v["kept_plain"] == v["kept"] == 0, f"{where} {case}: {v}"
            else:
                # without compression SA keeps the rows it received, byte for byte
                assert v["kept_plain"] == v["received_plain"], f"{where} {case}: {v}"
                # with compression it keeps exactly what crossed the network
                assert v["kept"] == v["received"], f"{where} {case}: {v}"
                assert v["kept"] < v["kept_plain"], f"{where} {case}: {v}"
            if name == "graphconv_w":
                shrink = v["kept_plain"] / v["kept"]
                assert shrink >= SHRINK[codec], f"{where} {case}: shrinks {shrink:.2f}x ({v})"
            # the results are those of SAR, bit for bit, and really compressed
            assert v["sar_equals_sa"], f"{where} {case}: SAR != SA"
            assert v["vs_uncompressed"] > 1e-6, f"{where} {case}: no effect ({v})"
            seen += 1
    assert seen == 3 * plans * len(wc.SA_CODECS)


def test_attention_logits_cross_raw_and_features_compressed(results):
    for where, got in _ranks(results, "logits"):
        assert len(got["spy"]) == 6
        for case, encoded in got["spy"].items():
            # only feature rows (tensor 0, [heads, channels]) were ever encoded
            assert encoded, f"{where} {case}: nothing was compressed"
            assert all(t == 0 and len(shape) == 2 for t, shape in encoded), (where, case,
                                                                           encoded)
        assert len(got["oracle"]) == 2 * 2 * 4
        for case, v in got["oracle"].items():
            assert v["max_rel"] <= 1e-10, f"{where} {case}: {v}"
            assert v["vs_uncompressed"] > 1e-4, f"{where} {case}: no effect ({v})"


def test_halo_attention_binds_once_and_sends_each_tensor_once(results):
    for where, got in _ranks(results, "halo"):
        assert len(got) == 2 * len(wc.HALO_CODECS)
        for case, v in got.items():
            assert v["halo_vs_sar"] <= 1e-10, f"{where} {case}: {v['halo_vs_sar']}"
            assert v["generic_vs_sar"] <= 1e-10, f"{where} {case}: {v['generic_vs_sar']}"
            assert v["sa_identical"], f"{where} {case}"
            assert v["vs_uncompressed"] > 1e-4, f"{where} {case}: no effect"
            for mode, binds in v["binds"].items():
                assert binds == {"0": 1, "1": 1}, f"{where} {case} {mode}: binds {binds}"
            for mode, sent in v["rows_sent"].items():
                assert sent == v["expected_rows_sent"], f"{where} {case} {mode}: {sent}"
            grads = v["grads_sent"]
            assert grads["halo/k1"] == grads["sar/k1"], f"{where} {case}: {grads}"


# ----------------------------------------------------------------- SARConfig(wire_dtype=...)
def _wire_dtype(results, part):
    for where, got in _ranks(results, "wire_dtype"):
        yield where, got[part]


def test_bf16_wire_equals_pyg_on_the_rounded_view(results):
    """Every mode equals plain PyG where remote rows and their returned gradients are rounded
    to bf16 (after the codec, if any); SA equals SAR bit for bit; the rounding is visible."""
    seen = 0
    for where, got in _wire_dtype(results, "oracle"):
        assert len(got) == 3 * 3 * 3 + 8 * 2, (where, sorted(got))
        for case, v in got.items():
            name, mode, _, setting = case.split("/")
            assert v["vs_oracle"] <= 1e-10, f"{where} {case}: {v}"
            assert v["ledger_is_comm"], f"{where} {case}: ledger != bytes sent"
            if mode == "sa":
                assert v["sa_identical_to_sar"], f"{where} {case}: SA != SAR"
            # the cast changed the result (else the oracle check proves nothing) ...
            assert v["vs_plain"] > 1e-5, f"{where} {case}: no effect ({v})"
            if setting == "cast1" and name in ("gcn", "sage", "gat"):
                # ... by bf16's rounding of a few remote rows (EdgeConv's differences
                # x_j - x_i and GATv2's scores amplify it; the oracle shows it is only that)
                assert v["vs_plain"] < 2e-2, f"{where} {case}: {v}"
            seen += 1
    assert seen == 3 * 43


def test_bf16_wire_bytes_in_the_ledger(results):
    for where, got in _wire_dtype(results, "bytes"):
        for mode in ("sar", "sa", "halo"):
            for dtypes in ("float32/bfloat16", "float64/bfloat16", "float64/float32"):
                v = got[f"gcn/{mode}/{dtypes}"]
                # every (layer, direction, sent/recv) entry: exactly the plain bytes / factor
                assert set(v["got"]) == set(v["plain"]), (where, mode, dtypes, v)
                assert v["factor"] in (2, 4)
                for entry, n in v["plain"].items():
                    assert n > 0 and v["got"][entry] * v["factor"] == n, (where, mode, dtypes,
                                                                         entry, v)
                assert v["ledger_sent"] == v["comm_sent"], (where, mode, dtypes, v)
                assert v["vs_plain"] > 0, (where, mode, dtypes, v)
            t = got[f"truncate2/{mode}"]
            assert t["ledger"] == t["expected"], (where, mode, t)
            assert t["ledger_sent"] == t["comm_sent"], (where, mode, t)
            q = got[f"quantize4/{mode}"]
            assert q["identical"] and q["ledger_equal"], (where, mode, q)
        for case in ("gat/sar/k1", "gat/sar/k0", "gat/halo/k1"):
            assert got[case]["rows_sent"] == got[case]["expected"], (where, case, got[case])
        ev = got["eval"]
        assert 2 * ev["rows"] == ev["plain_rows"] > 0 and ev["vs_plain"] > 0, (where, ev)
