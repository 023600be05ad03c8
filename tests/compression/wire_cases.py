"""Rank-side cases of tests/compression/test_wire.py (many cases per launch, float64).

* ``sa_memory``: mode ``sa`` keeps what it received (the compressed payload), not decoded
  full-size rows, in the block walk and in destination chunks alike: the bytes it saves for
  backward beyond what mode ``sar`` saves (measured on the tensors given to autograd, with
  ``saved_tensors_hooks``) equal the bytes its forward received, and SA's results stay exactly
  SAR's. A linear aggregation (GCN) whose backward needs no rows keeps nothing; with a learned
  edge weight (GraphConv) it keeps the payload.
* ``logits``: attention logits (GAT's ``alpha_src``) cross the network raw while features are
  compressed: a spying codec sees only feature rows, and every path (fused, generic, halo)
  equals plain PyG where only the remote feature rows went through the codec.
* ``halo``: one forward of a halo-mode GAT/GATv2 layer binds its compressor once and sends
  each source tensor once, so halo draws the same keys as sar/sa: equal results under random
  codecs, equal bytes in the traffic ledger, one bind per layer call.
* ``wire_dtype``: bf16 on the wire (``wire_dtype_cases.py``).
"""
from __future__ import annotations

import importlib

import torch
from torch_geometric.nn import EdgeConv, GATConv, GATv2Conv, GCNConv, GraphConv, TransformerConv

import pyg_sar
from pyg_sar.compression import BoundCodec, Compressor, Truncate
from pyg_sar.compression.keys import MessageKey
from tests.closeness import rel_error
from tests.compression.rank_cases import (
    CODECS,
    IN,
    SEED,
    Stack,
    Views,
    _mlp,
    _weights,
    make_graph,
)


class LearnedWeightStack(torch.nn.Module):
    """Two GraphConvs on edge weights scaled by a learned factor: the linear aggregation's
    backward needs the rows for the edge-weight gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(IN, 32)  # rows of 32 values cross in both layers
        self.conv1, self.conv2 = GraphConv(32, 32), GraphConv(32, 16)
        self.scale = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x, edge_index, edge_weight):
        w = edge_weight * self.scale
        return self.conv2(self.conv1(self.lin(x), edge_index, w).relu(), edge_index, w)


MODELS = {
    "gcn": lambda: Stack(GCNConv(IN, 32), GCNConv(32, 16)),
    "graphconv_w": LearnedWeightStack,
    "edgeconv": lambda: Stack(EdgeConv(_mlp(2 * IN, 32)), EdgeConv(_mlp(64, 16), aggr="mean")),
    "gat": lambda: Stack(GATConv(IN, 4, heads=2), GATConv(8, 5, heads=3, concat=False)),
    "gatv2": lambda: Stack(GATv2Conv(IN, 4, heads=2), GATv2Conv(8, 5, heads=2, concat=False)),
    # a softmax inside message: run by destination chunks (pyg_sar/core/dst_chunks.py)
    "transformer": lambda: Stack(TransformerConv(IN, 8, heads=2),
                                 TransformerConv(16, 5, heads=2, concat=False)),
}


def _compressor(codec, ratio: float, t: int = 3) -> Compressor:
    comp = Compressor(codec if not isinstance(codec, str) else CODECS[codec](), ratio,
                      seed=SEED)
    comp.step(t)
    return comp


def _saved_bytes(fn):
    """``fn()`` and the bytes of the distinct storages autograd saved while it ran."""
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        storages[s.data_ptr()] = s.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(storages.values())


def run(ctx, part, data, name: str, mode: str, comp=None, kernels: bool = True) -> dict:
    """One forward (saved bytes measured) and backward of ``MODELS[name]``."""
    torch.manual_seed(7)
    model = MODELS[name]().double()
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, use_kernels=kernels, compression=comp,
                                             pipeline_depth=1, check_loss=False))
    model.train()
    nid = part.node_ids
    x = data.x[nid].clone().requires_grad_()
    ctx.comm.traffic.reset()
    args = (x, part.graph)
    if isinstance(model, LearnedWeightStack):  # a fixed weight per input edge
        args += (0.5 + (part.edge_ids % 7).to(torch.float64) / 7,)
    out, saved = _saved_bytes(lambda: model(*args))
    forward_ledger = ctx.comm.traffic.as_dict()
    (out * _weights(data.num_nodes, out.shape[1])[nid]).sum().backward()
    ledger = ctx.comm.traffic.as_dict()
    pyg_sar.all_reduce_gradients(model)
    return {"out": out.detach(), "grads": [x.grad] + [p.grad for p in model.parameters()],
            "saved": saved, "forward_ledger": forward_ledger, "ledger": ledger}


def _pairs(a: dict, b: dict):
    return [(a["out"], b["out"]), *zip(a["grads"], b["grads"])]


def _identical(a: dict, b: dict) -> bool:
    return all(torch.equal(u, v) for u, v in _pairs(a, b))


def _max_rel(a: dict, b: dict) -> float:
    return max(rel_error(u, v) for u, v in _pairs(a, b))


def _recv(ledger: dict) -> int:
    return sum(d.get("rows", {}).get("recv", 0) for d in ledger.values())


# ------------------------------------------------------------------------------ sa memory
SA_CODECS = [("truncate", 4.0), ("subset", 4.0), ("quantize", 4.0), ("quantize", 16.0)]


def sa_memory(ctx, part, data) -> dict:
    out = {}
    plans = [("gcn", True), ("graphconv_w", True), ("edgeconv", True), ("gat", True),
             ("gat", False), ("gatv2", True), ("transformer", True)]
    for name, kernels in plans:
        sar_plain = run(ctx, part, data, name, "sar", kernels=kernels)
        sa_plain = run(ctx, part, data, name, "sa", kernels=kernels)
        for codec, ratio in SA_CODECS:
            sar = run(ctx, part, data, name, "sar", _compressor(codec, ratio), kernels)
            sa = run(ctx, part, data, name, "sa", _compressor(codec, ratio), kernels)
            out[f"{name}/k{int(kernels)}/{codec}{ratio:g}"] = {
                # bytes SA keeps for the remote rows: what it saves beyond SAR
                "kept": sa["saved"] - sar["saved"],
                "kept_plain": sa_plain["saved"] - sar_plain["saved"],
                "received": _recv(sa["forward_ledger"]),
                "received_plain": _recv(sa_plain["forward_ledger"]),
                "sar_equals_sa": _identical(sar, sa),
                "vs_uncompressed": _max_rel(sa, sa_plain)}
    return out


# --------------------------------------------------------------------------------- logits
class SpyTruncate(Truncate):
    """Truncate that records the key tensor and row shape of everything it encodes."""

    seen: list = []

    def encode(self, rows: torch.Tensor, ratio: float, key: MessageKey) -> torch.Tensor:
        SpyTruncate.seen.append((key.tensor, tuple(rows.shape[1:])))
        return super().encode(rows, ratio, key)

    def encode_rows(self, source: torch.Tensor, index: torch.Tensor, ratio: float,
                    key: MessageKey) -> torch.Tensor:
        SpyTruncate.seen.append((key.tensor, tuple(source.shape[1:])))
        return super().encode_rows(source, index, ratio, key)


def _seen_hook(views: Views, r: int, bound: BoundCodec):
    def hook(module, inputs):
        edge_index, size, kwargs = inputs
        kwargs = dict(kwargs)
        src, dst = kwargs["x"] if isinstance(kwargs["x"], tuple) else (kwargs["x"],) * 2
        kwargs["x"] = (views.seen_by(r, src, bound), dst)
        return edge_index, size, kwargs
    return hook


def _oracle_layer(conv, h, edge_index, views: Views, bound: BoundCodec):
    """``conv`` as every rank computes it: remote *feature* rows through the codec (GAT: the
    projected ``x`` of propagate; GATv2: ``x_l``, which its scores and messages both read),
    GAT's logits exact; rows assembled by owner."""
    out = None
    for r in range(views.world):
        if isinstance(conv, GATv2Conv):
            def lin_hook(module, inputs, x_l, r=r):
                rows = x_l.view(-1, conv.heads, conv.out_channels)
                return views.seen_by(r, rows, bound).view(x_l.shape)
            handles = [conv.lin_l.register_forward_hook(lin_hook)]
        else:
            handles = [conv.register_propagate_forward_pre_hook(_seen_hook(views, r, bound))]
        try:
            mine = conv(h, edge_index)
        finally:
            for handle in handles:
                handle.remove()
        out = mine.new_zeros(mine.shape) if out is None else out
        out = out.index_put((views.owned[r],), mine[views.owned[r]])
    return out


def _oracle(part, data, views: Views, name: str, codec: str, ratio: float, t: int) -> dict:
    torch.manual_seed(7)
    ref = MODELS[name]().double()
    x = data.x.clone().requires_grad_()
    bounds = [BoundCodec(CODECS[codec](), ratio, SEED, t, layer, 0) for layer in (0, 1)]
    h = _oracle_layer(ref.conv1, x, data.edge_index, views, bounds[0]).relu()
    out = _oracle_layer(ref.conv2, h, data.edge_index, views, bounds[1])
    (out * _weights(data.num_nodes, out.shape[1])).sum().backward()
    nid = part.node_ids
    return {"out": out.detach()[nid], "grads": [x.grad[nid]] + [p.grad for p in ref.parameters()]}


def logits(ctx, part, data, parts: str) -> dict:
    out = {"spy": {}, "oracle": {}}
    plans = [("gat", "sar", True), ("gat", "sa", True), ("gat", "sar", False),
             ("gat", "halo", True), ("gatv2", "sar", True), ("gatv2", "halo", True)]
    for name, mode, kernels in plans:
        SpyTruncate.seen = []
        run(ctx, part, data, name, mode, _compressor(SpyTruncate(), 2.0), kernels)
        out["spy"][f"{name}/{mode}/k{int(kernels)}"] = sorted(set(SpyTruncate.seen))
    views = Views(parts, ctx.world_size)
    for name in ("gat", "gatv2"):
        for codec, ratio in (("truncate", 2.0), ("subset", 2.5)):
            ref = _oracle(part, data, views, name, codec, ratio, t=3)
            plain = run(ctx, part, data, name, "sar")
            for mode, kernels in (("sar", True), ("sa", True), ("sar", False), ("halo", True)):
                got = run(ctx, part, data, name, mode, _compressor(codec, ratio), kernels)
                out["oracle"][f"{name}/{mode}/k{int(kernels)}/{codec}{ratio:g}"] = {
                    "max_rel": _max_rel(got, ref), "vs_uncompressed": _max_rel(got, plain)}
    return out


# ----------------------------------------------------------------------------------- halo
HALO_CODECS = [("subset", 2.5), ("quantize", 4.0), ("quantize", 16.0)]


def halo(ctx, part, data) -> dict:
    out = {}
    g = part.graph
    rows_out = sum(g.send_counts)
    widths = {"gat": {"conv1": (2, 4), "conv2": (3, 5)},
              "gatv2": {"conv1": (2, 4), "conv2": (2, 5)}}
    for name in ("gat", "gatv2"):
        plain = run(ctx, part, data, name, "sar")
        for codec, ratio in HALO_CODECS:
            got, binds = {}, {}
            for mode, kernels in (("sar", True), ("sa", True), ("sar", False), ("halo", True)):
                comp = _compressor(codec, ratio)
                got[f"{mode}/k{int(kernels)}"] = run(ctx, part, data, name, mode, comp, kernels)
                binds[f"{mode}/k{int(kernels)}"] = dict(comp._calls)
            expected = {}
            for layer, (heads, channels) in widths[name].items():
                row = CODECS[codec]().wire_bytes(1, (heads, channels), torch.float64, ratio)
                if name == "gat":  # alpha_src ([H] per row) goes raw
                    row += heads * 8
                expected[layer] = rows_out * row
            ref = got["sar/k1"]
            out[f"{name}/{codec}{ratio:g}"] = {
                "halo_vs_sar": _max_rel(got["halo/k1"], ref),
                "generic_vs_sar": _max_rel(got["sar/k0"], ref),
                "sa_identical": _identical(got["sa/k1"], ref),
                "vs_uncompressed": _max_rel(ref, plain),
                "binds": binds,
                "rows_sent": {m: {layer: d["rows"]["sent"] for layer, d in r["ledger"].items()}
                              for m, r in got.items()},
                "grads_sent": {m: {layer: d["grads"]["sent"] for layer, d in r["ledger"].items()}
                               for m, r in got.items()},
                "expected_rows_sent": expected}
    return out


GROUPS = {
    "sa_memory": lambda ctx, part, data, parts: sa_memory(ctx, part, data),
    "logits": logits,
    "halo": lambda ctx, part, data, parts: halo(ctx, part, data),
    # SARConfig(wire_dtype=...): wire_dtype_cases.py (imported when run: it imports this file)
    "wire_dtype": lambda ctx, part, data, parts: importlib.import_module(
        "tests.compression.wire_dtype_cases").wire_dtype(ctx, part, data, parts),
}


def suite(ctx, parts: str, groups: list) -> dict:
    """The case groups ``groups`` (keys of :data:`GROUPS`), in one launch."""
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    return {name: GROUPS[name](ctx, part, data, parts) for name in groups}

