"""Rank-side cases of the graph-with-values tests: layers called with ``data.adj_t`` (a DistGraph
carrying GCN-normalised edge values) against single-process PyG called with the sparse
``adj_t`` of the whole graph (torch's CSR, or torch_sparse's SparseTensor where installed).

Every rank builds the same graph and models; the oracle is PyG on the whole graph, the
distributed run is the converted copy on the rank's part. Errors of outputs (the rank's rows),
input gradients and every parameter gradient (after the gradient all-reduce) are returned.
"""
from __future__ import annotations

import copy

import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.nn import (
    APPNP,
    GatedGraphConv,
    GCN2Conv,
    GCNConv,
    GraphConv,
    LGConv,
    SGConv,
    SimpleConv,
    TAGConv,
)

import pyg_sar
import pyg_sar.nn.functional as SF
from tests.closeness import rel_error

IN = 6
HID = 8


def make_data(num_nodes: int = 64, num_edges: int = 360, seed: int = 0) -> Data:
    """A directed random graph (a few self-loops, isolated nodes) with random edge weights,
    GCN-normalised and turned into a sparse ``adj_t`` as in PyG's ``gcn2_cora.py``."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - 4
    src = torch.randint(0, active, (num_edges,), generator=g)
    dst = torch.randint(0, active, (num_edges,), generator=g)
    loops = torch.arange(0, active, 7)
    ei = torch.unique(torch.cat([torch.stack([src, dst]), torch.stack([loops, loops])], 1), dim=1)
    data = Data(x=torch.randn(num_nodes, IN, generator=g, dtype=torch.float64), edge_index=ei,
                edge_weight=torch.rand(ei.shape[1], generator=g, dtype=torch.float64) + 0.5,
                y=torch.randint(0, 3, (num_nodes,), generator=g))
    return T.Compose([T.GCNNorm(), T.ToSparseTensor()])(data)


class Stack(torch.nn.Module):
    """Two layers called as PyG's examples call them with ``adj_t``."""

    def __init__(self, conv1, conv2) -> None:
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2

    def forward(self, x, adj_t):
        return self.conv2(self.conv1(x, adj_t).relu(), adj_t)


class GCN2Net(torch.nn.Module):
    """The model of PyG's ``examples/gcn2_cora.py`` (no dropout), as written there."""

    def __init__(self, hidden: int = HID, num_layers: int = 3, shared: bool = True) -> None:
        super().__init__()
        self.lins = torch.nn.ModuleList([torch.nn.Linear(IN, hidden), torch.nn.Linear(hidden, 3)])
        self.convs = torch.nn.ModuleList(
            GCN2Conv(hidden, 0.1, 0.5, layer + 1, shared, normalize=False)
            for layer in range(num_layers))

    def forward(self, x, adj_t):
        x = x_0 = self.lins[0](x).relu()
        for conv in self.convs:
            x = conv(x, x_0, adj_t).relu()
        return self.lins[1](x).log_softmax(dim=-1)


class APPNPNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(IN, 4)
        self.prop = APPNP(K=4, alpha=0.1, normalize=False)

    def forward(self, x, adj_t):
        return self.prop(self.lin(x), adj_t)


MODELS = {
    "gcn2_cora": GCN2Net,
    "gcn2_separate_weights": lambda: GCN2Net(num_layers=2, shared=False),
    "gcn_normalize_false": lambda: Stack(GCNConv(IN, HID, normalize=False),
                                         GCNConv(HID, 4, normalize=False)),
    "appnp_normalize_false": APPNPNet,
    "tag_weighted_norm": lambda: Stack(TAGConv(IN, HID, K=2), TAGConv(HID, 4, K=1)),
    "sg_no_loops": lambda: Stack(SGConv(IN, HID, K=2, add_self_loops=False),
                                 SGConv(HID, 4, K=1, add_self_loops=False)),
    "lg": lambda: Stack(LGConv(), LGConv(normalize=False)),
    "graphconv": lambda: Stack(GraphConv(IN, HID), GraphConv(HID, 4, aggr="mean")),
    "gated": lambda: Stack(GatedGraphConv(IN, num_layers=2), GatedGraphConv(IN, num_layers=1)),
    "simple_sum_root": lambda: Stack(SimpleConv(combine_root="sum"), SimpleConv()),
}
MODES = ("sar", "sa", "halo")


def one_case(part, data: Data, name: str, mode: str) -> dict:
    torch.manual_seed(3)
    ref = MODELS[name]().double()
    dist = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(mode=mode))
    nid = part.node_ids
    x_ref = data.x.clone().requires_grad_()
    x_loc = part.x.clone().requires_grad_()
    out_ref = ref(x_ref, data.adj_t)
    out = dist(x_loc, part.adj_t)
    weight = torch.randn(out_ref.shape, generator=torch.Generator().manual_seed(5),
                         dtype=torch.float64)
    (out_ref * weight).sum().backward()
    # this rank's share of the global loss; gradients are summed over ranks
    SF.global_loss((out * weight[nid]).sum()).backward()
    pyg_sar.all_reduce_gradients(dist)  # a no-op where they were summed already
    errs = {"out": rel_error(out.detach(), out_ref.detach()[nid]),
            "x_grad": rel_error(x_loc.grad, x_ref.grad[nid])}
    pairs = list(zip(ref.named_parameters(), dist.parameters()))
    grads = [p.grad.abs().max() for (_, p), _ in pairs if p.grad is not None]
    scale = max((float(g) for g in grads), default=1.0) or 1.0
    for (pname, p_ref), p in pairs:
        if p_ref.grad is None:
            errs[f"grad:{pname}"] = 0.0 if p.grad is None or not p.grad.any() else 1.0
        else:
            errs[f"grad:{pname}"] = float((p.grad - p_ref.grad).abs().max()) / scale
    # The values change the result: the same model over the graph without values differs.
    with torch.no_grad():
        plain = None
        try:
            plain = dist(part.x, part.edge_index)
        except ValueError:
            pass
        differs = plain is None or rel_error(plain, out.detach()) > 1e-6
    return {"errors": errs, "values_matter": bool(differs)}


def _scaled_whole(data: Data) -> dict[str, torch.Tensor]:
    """PyG's ``correct_and_smooth.py`` normalisations of the whole graph, densely:
    ``deg = adj_t.sum(dim=1)``, ``DAD = d A d`` and ``DA = d d A`` with ``d = deg^-1/2``."""
    dense = (data.adj_t.to_dense() != 0).to(torch.float64)  # the structure, as ones
    weighted = data.adj_t.to_dense()
    deg = dense.sum(dim=1)
    d = deg.pow(-0.5)
    d[d == float("inf")] = 0
    return {"deg": deg, "weighted_deg": weighted.sum(dim=1),
            "DAD": d.view(-1, 1) * dense * d.view(1, -1),
            "DA": d.view(-1, 1) * d.view(-1, 1) * dense,
            "weighted_cols": weighted * d.view(1, -1)}


def arithmetic_case(part, data: Data) -> dict:
    """``adj_t`` arithmetic on the rank's graph (as PyG's ``correct_and_smooth.py`` writes it)
    against the same arithmetic on the whole graph's dense matrix, entry by entry through the
    rank's edges in original ids; then ``CorrectAndSmooth`` over the scaled graphs against
    PyG's over the whole graph with the same weights as ``edge_weight``."""
    from torch_geometric.nn import CorrectAndSmooth
    whole = _scaled_whole(data)
    nid = part.node_ids
    src, dst = part.global_edge_index()
    adj_t = part.edge_index  # the graph without values: ones
    deg = adj_t.sum(dim=1)
    d = deg.to(torch.float64).pow_(-0.5)
    d[d == float("inf")] = 0
    DAD = d.view(-1, 1) * adj_t * d.view(1, -1)
    DA = d.view(-1, 1) * d.view(-1, 1) * adj_t
    errs = {"deg": rel_error(deg.to(torch.float64), whole["deg"][nid]),
            "deg_dtype": 0.0 if deg.dtype == torch.long else 1.0,
            "weighted_deg": rel_error(part.adj_t.sum(dim=1), whole["weighted_deg"][nid]),
            "DAD": rel_error(DAD.edge_values, whole["DAD"][dst, src]),
            "DA": rel_error(DA.edge_values, whole["DA"][dst, src]),
            "weighted_cols": rel_error((part.adj_t * d.view(1, -1)).edge_values,
                                       whole["weighted_cols"][dst, src]),
            "scalar": rel_error((2.0 * part.adj_t).edge_values, 2 * part.adj_t.edge_values)}
    if adj_t.world_size > 1:  # ranks that scale differently all raise (no rank left waiting)
        n, rank = adj_t.num_nodes, adj_t.rank
        for name, other in (
                ("disagreeing_ranks_raise", d.view(1, -1) if rank == 0 else d.view(-1, 1)),
                ("one_bad_shape_raises_everywhere",
                 torch.ones(n + 1, 1, dtype=torch.float64) if rank == 1 else d.view(1, -1))):
            try:
                adj_t * other
                errs[name] = 1.0
            except ValueError as err:
                errs[name] = 0.0 if ("every rank must scale" in str(err)
                                     or f"[1, {n}]" in str(err)) else 1.0
        # the ranks are still in step: the column scaling runs again, exact
        again = d.view(-1, 1) * adj_t * d.view(1, -1)
        errs["in_step_after_refusals"] = rel_error(again.edge_values, whole["DAD"][dst, src])
    # CorrectAndSmooth as the script calls it: PyG's reference gets the same weights as an
    # edge_index with edge_weight (what a SparseTensor with those values means to it).
    ei = data.adj_t.to_sparse_coo().indices().flip(0)  # (source, destination)
    g = torch.Generator().manual_seed(11)
    n, c = data.num_nodes, 3
    y_soft = torch.softmax(torch.randn(n, c, generator=g, dtype=torch.float64), -1)
    y = torch.randint(0, c, (n, 1), generator=g)
    train = torch.arange(0, n, 3)
    post = CorrectAndSmooth(num_correction_layers=5, correction_alpha=1.0,
                            num_smoothing_layers=5, smoothing_alpha=0.8, autoscale=False,
                            scale=20.)
    ref = post.correct(y_soft, y[train], train, ei, whole["DAD"][ei[1], ei[0]])
    ref = post.smooth(ref, y[train], train, ei, whole["DA"][ei[1], ei[0]])
    dist = pyg_sar.convert(copy.deepcopy(post))
    local_train = part.local_index(train)
    out = dist.correct(y_soft[nid], y[nid][local_train], local_train, DAD)
    out = dist.smooth(out, y[nid][local_train], local_train, DA)
    errs["correct_and_smooth"] = rel_error(out, ref[nid])
    try:  # an input adj_t's values: PyG's meaning depends on its sparse format
        dist.smooth(y_soft[nid], y[nid][local_train], local_train, part.adj_t)
        errs["input_adj_t_refused"] = 1.0
    except ValueError as err:
        errs["input_adj_t_refused"] = 0.0 if "LabelPropagation" in str(err) else 1.0
    return errs


def suite(ctx, parts: str) -> dict:
    data = make_data()
    part = pyg_sar.load_partition(parts, ctx.rank)
    out = {"has_values": part.adj_t.edge_values is not None,
           "shares_structure": part.adj_t.blocks is part.edge_index.blocks}
    for name in MODELS:
        for mode in MODES:
            out[f"{name}/{mode}"] = one_case(part, data, name, mode)
    out["arithmetic"] = arithmetic_case(part, data)
    return out
