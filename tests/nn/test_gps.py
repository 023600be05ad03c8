"""PyG's GPSConv across ranks (:mod:`pyg_sar.nn.global_attention`): GINConv local layer and
``torch.nn.MultiheadAttention`` global attention through the ring
(:func:`~pyg_sar.core.global_attention.ring_attention`), or PyG's PerformerAttention, against
PyG's GPSConv on the whole graph in one process.

P = 1 (in process) and P = 3 (one launch, a random partition of unequal parts), float64, modes
sar / sa / halo: each rank's output rows and input gradient rows, the loss and every parameter
gradient (summed over ranks) within 1e-10 relative; batch norm (training and eval mode) or no
norm, 2 heads or 1, without the local conv, without projection biases; the performer variant.
Attention dropout (p = 0.3, needs the native library): P = 3 equals P = 1 under the same torch
seed, in every mode (the mask is drawn from original node ids, not from the partition). The
ledger's attention traffic is the ring's formula. Refused with a reason: add_bias_kv,
add_zero_attn, kdim/vdim other than embed_dim, another attn_type, a batch of several graphs.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.closeness import rel_error
from tests.nn import gps_cases as gc

HERE = Path(__file__).resolve().parent

TOL = 1e-10


def _native() -> bool:
    from pyg_sar.ops import native_available
    return native_available()


DROPOUT = [v for v in gc.VARIANTS if v.startswith("dropout/")]
EXACT = [v for v in gc.VARIANTS if v not in DROPOUT]
RUN = EXACT + (DROPOUT if _native() else [])
needs_native = pytest.mark.skipif(not _native(), reason="attention dropout draws its mask with "
                                  "the native library (pyg_sar.ops), not built here")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[int, list[dict]]:
    """P -> the ranks' results (P = 1 in this process, P = 3 in one launch)."""
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("gps")
    data = gc.make_data()
    pyg_sar.partition_graph(data, 1, root / "p1", method="random")
    part = pyg_sar.load_partition(root / "p1", 0)
    single = {"rows": int(len(part.node_ids))}
    for v in RUN:
        single[v] = gc.run_case(v, data, part.graph, part.node_ids, None)
    single["refusals"] = gc.refusals(part.graph, part.node_ids, 0)
    pyg_sar.partition_graph(data, 3, root / "p3", method="random", seed=3)
    three = run_on_ranks(f"{HERE / 'gps_cases.py'}:ranks", 3, timeout=300,
                         kwargs=dict(parts=str(root / "p3"), variants=RUN))
    return {1: [single], 3: three}


def test_partition_has_unequal_nonempty_parts(results):
    rows = [r["rows"] for r in results[3]]
    assert sum(rows) == gc.NUM_NODES and min(rows) > 0 and len(set(rows)) > 1, rows


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("variant", EXACT)
def test_matches_pyg(results, world_size, variant):
    for rank, res in enumerate(results[world_size]):
        errors = res[variant]["errors"]
        assert any(k.startswith("param:") and "attn." in k for k in errors), sorted(errors)
        worst = {k: v for k, v in errors.items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


def _gathered(ranks: list[dict], variant: str) -> dict:
    """A dropout case's results of all ranks: output and input-gradient rows in original id
    order, the loss and the (already summed) parameter gradients."""
    ids = torch.cat([torch.tensor(r[variant]["dropout"]["ids"], dtype=torch.long)
                     for r in ranks])
    order = torch.argsort(ids)
    rows = {key: torch.cat([torch.tensor(r[variant]["dropout"][key], dtype=torch.float64)
                            .reshape(-1, gc.C) for r in ranks])[order] for key in ("out", "x")}
    first = ranks[0][variant]["dropout"]
    return {**rows, "loss": first["loss"],
            "params": {k: torch.tensor(v, dtype=torch.float64)
                       for k, v in first["params"].items()}}


@needs_native
@pytest.mark.parametrize("path", ("convert", "direct"))
@pytest.mark.parametrize("mode", gc.MODES)
def test_attention_dropout_independent_of_ranks(results, mode, path):
    """p = 0.3 in training mode: outputs, input gradients, loss and every parameter gradient
    at P = 3 equal P = 1's (same torch seed), and dropout did act (output differs from the
    dropout-free run of the same parameters)."""
    variant = f"dropout/{mode}/{path}"
    one, three = _gathered(results[1], variant), _gathered(results[3], variant)
    assert rel_error(three["out"], one["out"]) <= TOL
    assert rel_error(three["x"], one["x"]) <= TOL
    assert abs(three["loss"] - one["loss"]) <= TOL * abs(one["loss"])
    # a gradient zero in exact arithmetic (a bias right before a training-mode batch norm) is
    # rounding noise: compared against the largest parameter gradient
    top = max(float(g.abs().max()) for g in one["params"].values())
    for k, g in one["params"].items():
        err = float((three["params"][k] - g).abs().max())
        assert err <= TOL * max(float(g.abs().max()), 1e-12 * top) or err <= 1e-14 * top, k
    undropped = gc.reference("dropout", gc.make_data(), attention_dropout=0.0)
    assert rel_error(one["out"], undropped["out"]) > 1e-3  # the mask changed something
    # sar, sa and halo draw the same mask
    other = _gathered(results[1], "dropout/sar/direct")
    assert rel_error(one["out"], other["out"]) <= TOL


@pytest.mark.parametrize("path", ("convert", "direct"))
@pytest.mark.parametrize("mode", gc.MODES)
def test_attention_traffic_is_the_ring_formula(results, mode, path):
    """Per rank and call of the ring (C = H (d + d_v) = 2 * 8 numbers per row, 8 bytes):
    forward receives (N - n_r) C b; sar re-fetches as much in backward; every mode returns
    (N - n_r) C b of key/value gradients."""
    variant = f"mha_bn/{mode}/{path}"
    for rank, res in enumerate(results[3]):
        n_r, row, world = res["rows"], 2 * gc.C * 8, 3
        got = res[variant]["traffic"].get("GPSConv.attn")
        assert got is not None, sorted(res[variant]["traffic"])
        fetched = {"recv": (gc.NUM_NODES - n_r) * row, "sent": (world - 1) * n_r * row}
        expect = {"rows": fetched,
                  "grads": {"sent": fetched["recv"], "recv": fetched["sent"]}}
        if mode == "sar":
            expect["refetch"] = fetched
        assert got == expect, (rank, got)


@pytest.mark.parametrize("mode", gc.MODES)
def test_model_ledger_labels(results, mode):
    """A GPSConv inside a model is labelled by its name there: its ring traffic is
    ``convs.0.attn`` (the performer layer all-reduces its sums, no ring)."""
    for rank, res in enumerate(results[3]):
        labels = sorted(res[f"model_two_layers/{mode}/convert"]["traffic"])
        assert "convs.0.attn" in labels and "convs.1.attn" not in labels, (rank, labels)


@pytest.mark.parametrize("world_size", (1, 3))
def test_refusals_name_the_option(results, world_size):
    for rank, res in enumerate(results[world_size]):
        ref = res["refusals"]
        assert "add_bias_kv=True" in ref["add_bias_kv"], (rank, ref)
        assert "add_zero_attn=True" in ref["add_zero_attn"], (rank, ref)
        assert "kdim=9, vdim=9" in ref["kdim"], (rank, ref)
        assert "attn_type='bigbird'" in ref["attn_type"], (rank, ref)
        if world_size > 1:  # the graph id 1 sits on the last rank only: every rank refuses
            assert "batch names 2 graphs" in ref["batch"], (rank, ref)


def test_separate_projection_weights():
    """``_qkv_same_embed_dim=False`` (q/k/v_proj_weight): the same rows as torch's module."""
    from pyg_sar.nn.global_attention import mha_forward
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(gc.C, 2, kdim=gc.C + 1, vdim=gc.C + 1).double()
    with torch.no_grad():  # square key/value weights: self-attention over the nodes again
        mha.k_proj_weight = torch.nn.Parameter(torch.randn(gc.C, gc.C, dtype=torch.float64))
        mha.v_proj_weight = torch.nn.Parameter(torch.randn(gc.C, gc.C, dtype=torch.float64))
    mha.kdim = mha.vdim = gc.C
    assert not mha._qkv_same_embed_dim
    x = torch.randn(20, gc.C, dtype=torch.float64)
    ref = mha(x, x, x, need_weights=False)[0]
    from tests.core import ring_attention_cases as rac
    got = mha_forward(mha, x, rac.bare_graph(0, [0, 20]))
    assert rel_error(got.detach(), ref.detach()) <= TOL


@pytest.mark.parametrize("option", ("add_bias_kv", "add_zero_attn"))
def test_convert_refuses_extra_key_rows(option):
    """Refused by pyg_sar.convert before it changes anything, naming the layer and option."""
    import pyg_sar
    from pyg_sar.nn.layers import UnsupportedLayerError
    model = gc.GPSConv(gc.C, None, heads=2, attn_kwargs={option: True})
    with pytest.raises(UnsupportedLayerError, match=f"layer 'GPSConv' .*{option}=True"):
        pyg_sar.convert(model)
    assert type(model) is gc.GPSConv


def test_converted_gps_keeps_pyg_forward_without_a_distgraph():
    """One process, a plain edge_index: the converted GPSConv runs PyG's own forward."""
    import pyg_sar
    data = gc.make_data()
    ref = gc.build("mha_bn")
    model = pyg_sar.convert(gc.build("mha_bn"))
    assert type(model).__name__ == "GPSConv" and type(model) is not gc.GPSConv
    assert torch.equal(model(data.x, data.edge_index), ref(data.x, data.edge_index))


def test_convert_refuses_a_graph_layer_norm():
    """GPSConv(norm="layer_norm") normalises over the whole graph (PyG's default mode):
    refused by convert, naming the norm; mode="node" runs (case mha_layernorm_node)."""
    import pyg_sar
    from pyg_sar.nn.layers import UnsupportedLayerError
    model = gc.GPSConv(gc.C, None, heads=2, norm="layer_norm")
    with pytest.raises(UnsupportedLayerError, match="LayerNorm, mode='graph'"):
        pyg_sar.convert(model)
