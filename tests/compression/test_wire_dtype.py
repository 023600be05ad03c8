"""``SARConfig(wire_dtype=...)`` in one process: validation, the :class:`Transport` of one
message (payload dtype, bytes, round trip, codecs under a cast) and P = 1 unchanged. The
multi-rank checks (oracle, SAR = SA, ledger) are in test_wire.py."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import GATConv, GCNConv

import pyg_sar
from pyg_sar.compression import (
    BoundCodec,
    Quantize,
    RandomSubset,
    Transport,
    Truncate,
    payload_dtype,
    roundtrip,
)
from pyg_sar.partition import load_partition, partition_graph
from pyg_sar.testing.zoo_rank import make_graph

BF16 = torch.bfloat16


@pytest.mark.parametrize("value, expected", [
    (None, None), (torch.bfloat16, BF16), ("bfloat16", BF16), ("bf16", BF16), (" BF16 ", BF16),
    ("torch.bfloat16", BF16), (torch.float32, torch.float32), ("float32", torch.float32),
    ("fp32", torch.float32)])
def test_config_normalises_the_wire_dtype(value, expected):
    assert pyg_sar.SARConfig(wire_dtype=value).wire_dtype == expected


@pytest.mark.parametrize("value", [torch.float16, "float16", torch.float64, torch.int8, "int8",
                                   "bfloat", 16, True])
def test_config_refuses_other_wire_dtypes_naming_them(value):
    with pytest.raises(ValueError, match="wire_dtype") as err:
        pyg_sar.SARConfig(wire_dtype=value)
    assert repr(value) in str(err.value)
    if value in (torch.float16, "float16"):
        assert "65504" in str(err.value)


@pytest.mark.parametrize("dtype, wire, expected", [
    (torch.float32, BF16, BF16), (torch.float64, BF16, BF16), (BF16, BF16, BF16),
    (torch.float16, BF16, torch.float16), (torch.float64, torch.float32, torch.float32),
    (torch.float32, torch.float32, torch.float32), (BF16, torch.float32, BF16),
    (torch.int64, BF16, torch.int64), (torch.uint8, BF16, torch.uint8),
    (torch.float32, None, torch.float32)])
def test_payload_dtype_only_narrows_floats(dtype, wire, expected):
    assert payload_dtype(dtype, wire) == expected


def _send(t: Transport, x: torch.Tensor, direction: str = "rows"):
    key = t.key(0, 0, 1, direction)
    payload = t.encode_rows(x, torch.arange(x.shape[0]), key)
    assert torch.equal(payload, t.encode(x, key))
    like = t.wire_like(x)
    assert payload.dtype == like.dtype and payload.shape[1:] == like.shape[1:]
    assert payload.numel() * payload.element_size() == t.wire_bytes(x.shape[0], x.shape[1:],
                                                                    x.dtype)
    out = t.decode(payload, tuple(x.shape[1:]), x.dtype, key)
    into = torch.full_like(x, float("nan") if x.is_floating_point() else -1)
    t.decode_into(into, payload, key)
    assert torch.equal(into, out)
    return payload, out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cast_alone_rounds_to_bf16_and_back(dtype):
    x = torch.randn(7, 3, 5, dtype=dtype, generator=torch.Generator().manual_seed(0))
    t = Transport(None, BF16)
    assert not t.is_raw(x) and not t.keyed and t.key(0, 0, 1) is None
    payload, out = _send(t, x)
    assert payload.dtype == BF16 and payload.shape == x.shape
    assert out.dtype == dtype and torch.equal(out, x.to(BF16).to(dtype))
    assert 0 < float((out - x).abs().max() / x.abs().max()) <= 2.0 ** -8
    # deterministic: a second send (a re-fetch) decodes to the same rows
    assert torch.equal(_send(t, x)[1], out)


@pytest.mark.parametrize("x", [torch.randn(4, 6).to(BF16), torch.randn(4, 6).half(),
                               torch.arange(24).view(4, 6)])
def test_rows_no_wider_than_the_wire_cross_as_they_are(x):
    t = Transport(None, BF16)
    assert t.is_raw(x)
    payload, out = _send(t, x)
    assert payload.dtype == x.dtype and torch.equal(out, x)


@pytest.mark.parametrize("codec", [Truncate(), RandomSubset(), RandomSubset(rescale=True)],
                         ids=repr)
def test_channel_codecs_send_their_kept_channels_as_bf16(codec):
    x = torch.randn(9, 8, generator=torch.Generator().manual_seed(1))
    bound = BoundCodec(codec, 2.0, 3, 4, 0, 0)
    t = Transport(bound, BF16)
    payload, out = _send(t, x)
    key = bound.key(0, 0, 1)
    alone = bound.encode(x, key)
    assert payload.dtype == BF16 and torch.equal(payload, alone.to(BF16))
    assert payload.numel() * 2 == x.numel() * 4 // 4  # ratio 2, then half the bytes
    want = bound.decode(alone.to(BF16).float(), (8,), torch.float32, key)
    assert torch.equal(out, want)


def test_quantize_payload_is_left_alone():
    x = torch.randn(9, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    bound = BoundCodec(Quantize(), 4.0, 3, 4, 0, 0)
    t = Transport(bound, BF16)
    payload, out = _send(t, x)
    key = bound.key(0, 0, 1)
    assert payload.dtype == torch.uint8 and torch.equal(payload, bound.encode(x, key))
    assert torch.equal(out, bound.decode(payload, (16,), torch.float64, key))
    # at ratio 1 quantisation sends raw rows: those are cast
    raw = Transport(BoundCodec(Quantize(), 1.0, 3, 4, 0, 0), BF16)
    assert _send(raw, x)[0].dtype == BF16


def test_roundtrip_with_a_transport_rounds_rows_and_gradients():
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    y = roundtrip(x, Transport(None, BF16))
    assert torch.equal(y, x.detach().to(BF16).double())
    g = torch.randn(5, 4, dtype=torch.float64)
    y.backward(g)
    assert torch.equal(x.grad, g.to(BF16).double())


class Net(torch.nn.Module):
    def __init__(self, in_channels: int) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_channels, 8)
        self.conv2 = GATConv(8, 3, heads=2)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def test_one_process_is_unchanged(tmp_path):
    """P = 1: nothing crosses the network, so a wire dtype changes no bit."""
    data = make_graph()
    part = load_partition(partition_graph(data, 1, tmp_path / "p", method="random"), 0,
                          world_size=1)
    results = []
    for wire in (None, BF16):
        torch.manual_seed(0)
        model = pyg_sar.convert(Net(data.x.shape[1]), pyg_sar.SARConfig(wire_dtype=wire))
        x = part.x.float().clone().requires_grad_()
        out = model(x, part.graph)
        out.square().sum().backward()
        results.append([out.detach(), x.grad, *[p.grad for p in model.parameters()]])
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)
