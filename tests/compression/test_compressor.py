"""The Compressor: steps, binding, state, per-layer resolution, what convert attaches, the
traffic ledger, and SARConfig validation."""
from __future__ import annotations

import pytest
from torch_geometric.nn import GCN, GraphSAGE

import pyg_sar
from pyg_sar.compression import (
    Compressor,
    Quantize,
    RandomSubset,
    Truncate,
    all_but_last,
    compressors_of,
    make_compressor,
    resolve,
    step_all,
    varco,
)
from pyg_sar.distributed.traffic import TrafficLedger, merge
from pyg_sar.nn.conversion.wire import layer_wire


def test_step_and_bind():
    comp = Compressor(Truncate(), varco(16.0, 1.0, 1.0, 10), seed=4)
    first, second, other = comp.bind(0), comp.bind(0), comp.bind(2)
    assert (first.step, first.layer, first.call, first.ratio) == (0, 0, 0, 16.0)
    assert (second.call, other.call, other.layer) == (1, 0, 2)
    comp.step()
    assert comp.t == 1 and comp.bind(0).call == 0  # calls count from 0 in every step
    comp.step(8)
    assert comp.t == 8 and comp.ratio() == 1.0 and comp.bind(0).ratio == 1.0
    with pytest.raises(ValueError, match="t must be an integer >= 0"):
        comp.step(-3)


def test_eval_binds_count_apart_and_are_saved():
    """An evaluation-mode bind has its own call counter (saved in the state) and no feedback;
    a training bind carries the compressor's feedback and its compressed directions."""
    comp = Compressor(Quantize(), 8.0, seed=1, in_eval=True, error_feedback="rows",
                      directions="rows")
    train = comp.bind(0)
    assert train.feedback is comp.feedback and train.directions == frozenset({"rows"})
    assert train.compresses("rows") and not train.compresses("grads")
    assert comp.bind(0, training=False).call == 0 and comp.bind(0, training=False).call == 1
    assert comp.bind(0, training=False).feedback is None and comp.bind(0).call == 1
    state = comp.state_dict()
    assert state["calls"] == {"0": 2} and state["eval_calls"] == {"0": 3}
    again = Compressor(Quantize(), 8.0, seed=1, in_eval=True, error_feedback="rows",
                       directions="rows")
    again.load_state_dict(state)
    assert again.bind(0, training=False).call == 3 and again.bind(0).call == 2
    comp.step()
    assert comp.bind(0, training=False).call == 0 and "eval_calls" not in Compressor(
        Quantize()).state_dict()
    assert train == Compressor(Quantize(), 8.0, seed=1, directions="rows").bind(0)  # feedback
    # is not part of a bound codec's identity


def test_state_dict_round_trip_and_mismatch():
    comp = Compressor(Quantize(), varco(16.0, 1.0, 5.0, 100), seed=2)
    comp.step(7)
    comp.bind(1)
    state = comp.state_dict()
    again = Compressor(Quantize(), varco(16.0, 1.0, 5.0, 100), seed=2)
    again.load_state_dict(state)
    assert again.t == 7 and again.bind(1).call == 1
    other = Compressor(Truncate(), varco(16.0, 1.0, 5.0, 100), seed=2)
    with pytest.raises(ValueError, match="saved by"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="malformed"):
        again.load_state_dict({"t": "x"})


def test_bad_arguments():
    with pytest.raises(TypeError, match="codec must be a Codec"):
        Compressor("truncate")
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        Compressor(Truncate(), seed=-1)
    with pytest.raises(ValueError, match="ratio must be a finite number >= 1"):
        Compressor(Truncate(), 0.5)
    with pytest.raises(ValueError, match="unknown compression 'zip'"):
        make_compressor("zip")


def test_resolve_per_layer():
    a, b = Compressor(Truncate(), 2.0), Compressor(RandomSubset(), 4.0)
    names = ["convs.0", "convs.1", "convs.2"]
    assert resolve(a, names) == {n: a for n in names}
    assert resolve(None, names) == {n: None for n in names}
    assert resolve({"convs.1": b}, names) == {"convs.0": None, "convs.1": b, "convs.2": None}
    assert resolve(all_but_last(a), names) == {"convs.0": a, "convs.1": a, "convs.2": None}
    with pytest.raises(ValueError, match=r"names layers \['conv9'\]"):
        resolve({"conv9": a}, names)
    with pytest.raises(ValueError, match="returned 3"):
        resolve(lambda name, i, n: 3, names)


def test_sarconfig_checks_compression():
    with pytest.raises(ValueError, match="compression must be None, a Compressor"):
        pyg_sar.SARConfig(compression="truncate")
    with pytest.raises(ValueError, match="compression must map layer names"):
        pyg_sar.SARConfig(compression={"convs.0": "truncate"})
    config = pyg_sar.SARConfig(compression={"convs.0": Compressor(Truncate(), 2.0)})
    hash(config)  # still hashable


def test_convert_attaches_names_indices_and_compressors():
    comp = Compressor(Truncate(), 4.0)
    model = GraphSAGE(4, 8, num_layers=3, out_channels=2)
    pyg_sar.convert(model, pyg_sar.SARConfig(compression=all_but_last(comp)))
    convs = list(model.convs)
    assert [c._sar_name for c in convs] == ["convs.0", "convs.1", "convs.2"]
    assert [c._sar_layer_index for c in convs] == [0, 1, 2]
    assert [c._sar_compressor for c in convs] == [comp, comp, None]
    assert compressors_of(model) == {"convs.0": comp}
    step_all(model, 5)
    assert comp.t == 5
    # training mode binds the compressor; eval mode and the last layer do not
    model.train()
    assert layer_wire(convs[0]).codec.layer == 0 and layer_wire(convs[2]).codec is None
    model.eval()
    wire = layer_wire(convs[0])
    assert wire.codec is None and wire.label == "convs.0"
    # a second convert replaces the compression
    pyg_sar.convert(model, pyg_sar.SARConfig())
    assert compressors_of(model) == {}
    with pytest.raises(ValueError, match="not message-passing layers"):
        pyg_sar.convert(GCN(4, 8, 2), pyg_sar.SARConfig(compression={"lin": comp}))


def test_traffic_ledger():
    ledger = TrafficLedger()
    ledger.add("convs.0", "rows", 10, 12)
    ledger.add("convs.0", "rows", 1, 2)
    ledger.add("convs.1", "grads", 5, 0)
    assert ledger.as_dict() == {"convs.0": {"rows": {"sent": 11, "recv": 14}},
                                "convs.1": {"grads": {"sent": 5, "recv": 0}}}
    assert ledger.totals() == {"sent": 16, "recv": 14}
    assert merge([ledger.as_dict(), ledger.as_dict()])["convs.0"]["rows"] == {"sent": 22,
                                                                               "recv": 28}
    with pytest.raises(ValueError, match="direction must be one of"):
        ledger.add("convs.0", "up", 1, 1)
    ledger.reset()
    assert ledger.as_dict() == {} and ledger.totals() == {"sent": 0, "recv": 0}


def test_a_failed_attention_call_leaves_no_held_wire():
    """A halo-mode GAT call holds its wire from edge_updater to propagate; if the call fails
    in between, the next call must bind afresh (new keys), not reuse the stale wire."""
    import torch
    from torch_geometric.nn import GATConv

    from pyg_sar.nn.conversion.wire import hold_wire
    conv = GATConv(8, 4, heads=2)
    pyg_sar.convert(conv, pyg_sar.SARConfig(mode="halo",
                                            compression=Compressor(Truncate(), 4.0)))
    edge_index = torch.tensor([[0, 1, 2], [1, 2, 0]])
    stale = layer_wire(conv)
    hold_wire(conv, stale)
    with pytest.raises(RuntimeError):
        conv(torch.randn(3, 5), edge_index)  # wrong feature width: fails inside the call
    fresh = layer_wire(conv)
    assert fresh is not stale and fresh.codec.call == stale.codec.call + 1
    hold_wire(conv, fresh)
    conv(torch.randn(3, 8), edge_index)  # a plain edge_index never takes the wire
    assert layer_wire(conv) is not fresh
