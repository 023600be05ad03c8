"""Rank-side cases of the engine tests: many cases per launch, compared with single-process PyG.

Every rank builds the same graph and the same reference model, runs plain PyG on the whole graph
(the oracle) and the converted model on its partition, and reports relative errors of outputs (its
own rows, in original order), input gradients and every parameter gradient (after the gradient
all-reduce). The pytest side asserts the tolerances.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import (
    GAT,
    GCN,
    GIN,
    EdgeConv,
    GATConv,
    GATv2Conv,
    GCNConv,
    GINConv,
    GINEConv,
    GraphConv,
    GraphSAGE,
    MessagePassing,
    SAGEConv,
    TransformerConv,
)

import pyg_sar
from pyg_sar.core.dst_chunks import chunk_plan
from pyg_sar.core.views import stored_view
from tests.closeness import rel_error

IN = 6


def make_graph(num_nodes: int = 70, num_edges: int = 420, seed: int = 0) -> Data:
    """Directed, duplicate-free edges with a few self-loops, isolated nodes and edge data."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - 5  # the last 5 nodes are isolated
    src = torch.randint(0, active, (num_edges,), generator=g)
    dst = torch.randint(0, active, (num_edges,), generator=g)
    loops = torch.arange(0, active, 9)
    ei = torch.cat([torch.stack([src, dst]), torch.stack([loops, loops])], dim=1)
    ei = torch.unique(ei, dim=1)
    ei = ei[:, torch.randperm(ei.shape[1], generator=g)]
    e = ei.shape[1]
    return Data(
        x=torch.randn(num_nodes, IN, generator=g, dtype=torch.float64),
        edge_index=ei,
        edge_attr=torch.randn(e, 4, generator=g, dtype=torch.float64),
        edge_weight=torch.rand(e, generator=g, dtype=torch.float64) + 0.5,
        y=torch.randint(0, 3, (num_nodes,), generator=g),
        train_mask=torch.rand(num_nodes, generator=g) < 0.6,
    )


class WeightedDropoutConv(MessagePassing):
    """A user layer with randomness inside ``message`` (checks RNG replay in SAR mode)."""

    def __init__(self, channels: int, p: float = 0.3) -> None:
        super().__init__(aggr="sum")
        self.lin = torch.nn.Linear(channels, channels)
        self.p = p

    def forward(self, x, edge_index, edge_attr):
        return self.propagate(edge_index, x=x, edge_attr=edge_attr)

    def message(self, x_j, x_i, edge_attr):
        m = torch.tanh(self.lin(x_j) + x_i) * edge_attr[:, :1]
        return F.dropout(m, p=self.p, training=self.training)


class Stack(torch.nn.Module):
    """A user model of PyG convs (two layers, edge data passed through)."""

    def __init__(self, conv1, conv2, edge: str | None = None) -> None:
        super().__init__()
        self.conv1, self.conv2, self.edge = conv1, conv2, edge

    def forward(self, x, edge_index, edge_attr=None, edge_weight=None):
        extra = {}
        if self.edge == "attr":
            extra = {"edge_attr": edge_attr}
        elif self.edge == "weight":
            extra = {"edge_weight": edge_weight}
        return self.conv2(self.conv1(x, edge_index, **extra).relu(), edge_index, **extra)


def _mlp(i: int, o: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(i, 8), torch.nn.ReLU(), torch.nn.Linear(8, o))


LAYERS = {
    "gcn": lambda: Stack(GCNConv(IN, 8), GCNConv(8, 5)),
    "gcn_weighted_improved": lambda: Stack(GCNConv(IN, 8, improved=True),
                                           GCNConv(8, 5, improved=True), edge="weight"),
    "gcn_no_loops": lambda: Stack(GCNConv(IN, 8, add_self_loops=False),
                                  GCNConv(8, 5, add_self_loops=False)),
    "sage_mean": lambda: Stack(SAGEConv(IN, 8), SAGEConv(8, 5)),
    "sage_sum_project": lambda: Stack(SAGEConv(IN, 8, aggr="sum", project=True),
                                      SAGEConv(8, 5, aggr="sum")),
    "sage_max_normalize": lambda: Stack(SAGEConv(IN, 8, aggr="max", normalize=True),
                                        SAGEConv(8, 5, aggr="max", root_weight=False)),
    "sage_min": lambda: Stack(SAGEConv(IN, 8, aggr="min"), SAGEConv(8, 5, aggr="min")),
    "sage_softmax_learn": lambda: Stack(SAGEConv(IN, 8, aggr="softmax",
                                                 aggr_kwargs={"learn": True, "t": 0.7,
                                                              "channels": IN}),
                                        SAGEConv(8, 5, aggr="softmax",
                                                 aggr_kwargs={"semi_grad": True, "t": 2.0})),
    "graphconv": lambda: Stack(GraphConv(IN, 8), GraphConv(8, 5, aggr="mean"), edge="weight"),
    "gin": lambda: Stack(GINConv(_mlp(IN, 8), train_eps=True), GINConv(_mlp(8, 5))),
    "gine": lambda: Stack(GINEConv(_mlp(IN, IN), edge_dim=4), GINEConv(_mlp(IN, 5), edge_dim=4),
                          edge="attr"),
    "edgeconv": lambda: Stack(EdgeConv(_mlp(2 * IN, 8)), EdgeConv(_mlp(16, 5), aggr="mean")),
    "gat": lambda: Stack(GATConv(IN, 4, heads=2), GATConv(8, 5, heads=3, concat=False)),
    "gat_edge_no_loops": lambda: Stack(GATConv(IN, 4, heads=2, edge_dim=4),
                                       GATConv(8, 5, heads=2, edge_dim=4, add_self_loops=False,
                                               residual=True), edge="attr"),
    "gat_edge_fill": lambda: Stack(GATConv(IN, 4, heads=2, edge_dim=4, fill_value=0.5),
                                   GATConv(8, 5, heads=1, edge_dim=4, fill_value="add"),
                                   edge="attr"),
    "gatv2_edge": lambda: Stack(GATv2Conv(IN, 4, heads=2, edge_dim=4),
                                GATv2Conv(8, 5, heads=2, edge_dim=4, concat=False,
                                          share_weights=True), edge="attr"),
    "transformer_edge": lambda: Stack(TransformerConv(IN, 4, heads=2, edge_dim=4),
                                      TransformerConv(8, 5, heads=2, edge_dim=4, beta=True,
                                                      concat=False), edge="attr"),
    "transformer": lambda: Stack(TransformerConv(IN, 4, heads=3), TransformerConv(12, 5)),
    "basic_gat_bn_jk": lambda: GAT(IN, 8, num_layers=2, out_channels=5, heads=2,
                                   norm="batch_norm", jk="cat"),
    "basic_gatv2": lambda: GAT(IN, 8, num_layers=2, out_channels=5, heads=2, v2=True),
    "basic_sage_bn_jk": lambda: GraphSAGE(IN, 8, num_layers=3, out_channels=5,
                                          norm="batch_norm", jk="cat"),
    "basic_gcn_bn": lambda: GCN(IN, 8, num_layers=2, out_channels=5, norm="batch_norm"),
    "basic_gin_jk_max": lambda: GIN(IN, 8, num_layers=2, out_channels=5, jk="max"),
}

EDGE_INPUT = {"gine": "attr", "gcn_weighted_improved": "weight", "graphconv": "weight"}


def _forward(model, x, edge_index, edge_attr, edge_weight):
    if isinstance(model, Stack):
        return model(x, edge_index, edge_attr=edge_attr, edge_weight=edge_weight)
    return model(x, edge_index)


def one_case(ctx, part, data: Data, layer: str, mode: str, dtype: torch.dtype,
             depth: int = 1, use_kernels: bool = True) -> dict:
    """Errors of one (layer, mode, dtype) case on this rank."""
    torch.manual_seed(7)
    ref = LAYERS[layer]().to(dtype)
    dist = copy.deepcopy(ref)
    pyg_sar.convert(dist, pyg_sar.SARConfig(mode=mode, pipeline_depth=depth,
                                            use_kernels=use_kernels, check_loss=False))
    nid = part.node_ids
    x_ref = data.x.to(dtype).clone().requires_grad_()
    x_loc = data.x[nid].to(dtype).clone().requires_grad_()
    out_ref = _forward(ref, x_ref, data.edge_index, data.edge_attr.to(dtype),
                       data.edge_weight.to(dtype))
    out = _forward(dist, x_loc, part.graph, part.edge_attr.to(dtype), part.edge_weight.to(dtype))
    weight = torch.randn(out_ref.shape, generator=torch.Generator().manual_seed(3),
                         dtype=torch.float64).to(dtype)
    (out_ref * weight).sum().backward()
    (out * weight[nid]).sum().backward()
    pyg_sar.all_reduce_gradients(dist)
    errs = {"out": rel_error(out.detach(), out_ref.detach()[nid]),
            "x_grad": rel_error(x_loc.grad, x_ref.grad[nid])}
    # Parameter gradients: error relative to the largest entry of the whole gradient, since
    # some entries are zero in exact arithmetic (a bias followed by batch norm) and any
    # rounding residue there has no meaningful relative size of its own.
    pairs = list(zip(ref.named_parameters(), dist.parameters()))
    scale = max(float(p_ref.grad.abs().max()) for (_, p_ref), _ in pairs
                if p_ref.grad is not None)
    for (name, p_ref), p in pairs:
        if p_ref.grad is None:
            errs[f"grad:{name}"] = 0.0 if p.grad is None or not p.grad.any() else 1.0
        else:
            errs[f"grad:{name}"] = float((p.grad - p_ref.grad).abs().max()) / scale
    return {"max": max(errs.values()), "errors": errs}


def exactness(ctx, parts: str, cases: list) -> dict:
    """Run ``cases`` = [[layer, mode, dtype_name, depth, use_kernels], ...] on this rank."""
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    results = {}
    for layer, mode, dtype_name, depth, kernels in cases:
        key = f"{layer}/{mode}/{dtype_name}/d{depth}/k{int(kernels)}"
        results[key] = one_case(ctx, part, data, layer, mode, getattr(torch, dtype_name),
                                depth, kernels)
    results["rng_replay"] = rng_replay(ctx, part, data)
    results["saved_bytes"] = saved_bytes(ctx, part, data)
    return results


DROPOUT_LAYERS = {
    "user_message_dropout": lambda: WeightedDropoutConv(IN),
    "gat_attention_dropout": lambda: GATConv(IN, 4, heads=2, dropout=0.4, edge_dim=4),
    # attention dropout inside message, run by destination chunks (core/dst_chunks)
    "transformer_attention_dropout": lambda: TransformerConv(IN, 4, heads=2, dropout=0.4,
                                                             edge_dim=4),
}


def rng_replay(ctx, part, data: Data) -> dict:
    """Gradients of SAR mode equal SA mode's with dropout inside the block (same seed)."""
    out = {}
    for name, make in DROPOUT_LAYERS.items():
        grads = {}
        for mode in ("sa", "sar"):
            torch.manual_seed(11)
            model = make().double()
            pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, check_loss=False))
            model.train()
            x = data.x[part.node_ids].clone().requires_grad_()
            torch.manual_seed(100 + ctx.rank)
            y = model(x, part.graph, part.edge_attr.double())
            y.square().sum().backward()
            grads[mode] = [x.grad] + [p.grad for p in model.parameters()]
        err = max(float((a - b).abs().max()) for a, b in zip(grads["sa"], grads["sar"]))
        nonzero = all(bool(g.abs().sum() > 0) for g in grads["sar"][1:])
        out[name] = {"max_abs_diff": err, "grads_nonzero": nonzero}
    return out


def saved_bytes(ctx, part, data: Data) -> dict:
    """Bytes saved for backward by the engine in each mode: one generic-path layer (the block
    walk), and one run by destination chunks (``chunks``: TransformerConv, whose ``key_j`` and
    ``value_j`` of 2 heads x 4 channels are fetched)."""
    result = _saved_bytes(part, data, lambda: EdgeConv(_mlp(2 * IN, 8)))
    result["halo_bytes"] = sum(part.graph.recv_counts) * IN * 8
    chunks = _saved_bytes(part, data, lambda: TransformerConv(IN, 4, heads=2))
    fetched = sum(sum(ch.recv_counts) for ch in chunk_plan(stored_view(part.graph)))
    chunks["fetched_bytes"] = fetched * 2 * 8 * 8
    result["chunks"] = chunks
    return result


def _saved_bytes(part, data: Data, make) -> dict:
    result = {}
    for mode in ("sar", "sa"):
        torch.manual_seed(5)
        model = make()
        model.double()
        pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, check_loss=False))
        x = data.x[part.node_ids].clone().requires_grad_()
        sizes: list[int] = []

        def pack(t, sizes=sizes):
            sizes.append(t.numel() * t.element_size())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(x, part.graph)
        result[mode] = sum(sizes)
        out.sum().backward()
    return result


def training_curve(ctx, parts: str, steps: int) -> list[float]:
    """Loss of ``steps`` Adam steps of a 2-layer GraphSAGE with batch norm on a small SBM."""
    part = pyg_sar.load_partition(parts, ctx.rank)
    torch.manual_seed(0)
    model = GraphSAGE(part.x.shape[1], 16, num_layers=2, out_channels=4,
                      norm="batch_norm").double()
    pyg_sar.convert(model)
    pyg_sar.broadcast_parameters(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x = part.x.double()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = pyg_sar.nn.functional.cross_entropy(model(x, part.graph), part.y, part.train_mask)
        loss.backward()
        pyg_sar.all_reduce_gradients(model)
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def suite(ctx, parts: str, sbm_parts: str, cases: list, steps: int) -> dict:
    """Everything the engine tests need from one launch."""
    out = exactness(ctx, parts, cases)
    out["training_curve"] = training_curve(ctx, sbm_parts, steps)
    return out
