"""Rank-side cases of the heterogeneous exactness tests: many cases per launch.

Every rank builds the same :class:`~torch_geometric.data.HeteroData` and the same reference
model, runs plain PyG on the whole graph (the oracle) and the converted model on its part, and
reports relative errors of every node type's output (its own rows, in original order), every
node type's input gradient and every parameter gradient (after the gradient sum over ranks).
The pytest side asserts the tolerance.

The rank's part is either a real partition (``pyg_sar.load_partition`` of a folder written by
``pyg_sar.partition_graph(HeteroData, ...)``) or a hand-built one (:func:`hand_partition`:
random node order per type, contiguous ranges, each edge type a bipartite DistGraph from
``hand_graphs.build_graph``), which checks the engine independently of the partitioner.
"""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Optional

import torch
from torch_geometric.data import HeteroData
from torch_geometric.nn import (
    BatchNorm,
    GATConv,
    GATv2Conv,
    GINConv,
    GINEConv,
    GraphConv,
    HeteroConv,
    HeteroDictLinear,
    HeteroLinear,
    Linear,
    SAGEConv,
    to_hetero,
)

import pyg_sar
from tests.closeness import rel_error
from tests.hetero.hand_graphs import build_graph, even_offsets

NUM = {"paper": 40, "author": 26, "inst": 9}
DIM = {"paper": 5, "author": 4, "inst": 3}
EDGES = {("author", "writes", "paper"): 90, ("paper", "cites", "paper"): 110,
         ("paper", "rev_writes", "author"): 80, ("inst", "employs", "author"): 30,
         ("author", "rev_employs", "inst"): 30}
EDGE_DIM = 3


def make_hetero(seed: int = 0, num: Optional[dict] = None) -> HeteroData:
    """Three node types, five edge types (one within a type, with self-loops), duplicate-free
    edges, isolated nodes of every type, edge attributes on every edge type. ``num``
    overrides node counts (a type of 2 nodes: one rank of 3 holds none of it)."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    num = {**NUM, **(num or {})}
    for t, n in num.items():
        data[t].x = torch.randn(n, DIM[t], generator=g, dtype=torch.float64)
    for (s, r, d), e in EDGES.items():
        # the last 2 nodes of a type (of 3 or more): no out-edges and no in-edges
        src = torch.randint(0, max(1, num[s] - 2), (e,), generator=g)
        dst = torch.randint(0, max(1, num[d] - 2), (e,), generator=g)
        ei = torch.stack([src, dst])
        if s == d:
            loops = torch.arange(0, max(1, num[s] - 2), 5)
            ei = torch.cat([ei, torch.stack([loops, loops])], dim=1)
        ei = torch.unique(ei, dim=1)
        ei = ei[:, torch.randperm(ei.shape[1], generator=g)]
        data[s, r, d].edge_index = ei
        data[s, r, d].edge_attr = torch.randn(ei.shape[1], EDGE_DIM, generator=g,
                                              dtype=torch.float64)
    return data


def hand_partition(data: HeteroData, world: int, rank: int, seed: int = 0) -> SimpleNamespace:
    """This rank's part of ``data``: per node type a random order cut into contiguous ranges;
    fields named as :class:`pyg_sar.HeteroPartition`'s."""
    g = torch.Generator().manual_seed(1000 + seed)
    offsets, new_of, node_ids = {}, {}, {}
    for t in data.node_types:
        n = data[t].num_nodes
        perm = torch.randperm(n, generator=g)  # perm[new id] = original id
        new_of[t] = torch.empty_like(perm)
        new_of[t][perm] = torch.arange(n)
        offsets[t] = even_offsets(n, world)
        node_ids[t] = perm[offsets[t][rank]:offsets[t][rank + 1]]
    graphs, attrs = {}, {}
    for et in data.edge_types:
        s, _, d = et
        ei = data[et].edge_index
        new_ei = torch.stack([new_of[s][ei[0]], new_of[d][ei[1]]])
        graph, ids = build_graph(new_ei, offsets[s], offsets[d], rank, bipartite=s != d)
        graphs[et], attrs[et] = graph, data[et].edge_attr[ids]
    return SimpleNamespace(
        rank=rank, world_size=world, node_types=data.node_types, edge_types=data.edge_types,
        metadata=lambda: data.metadata(), node_ids_dict=node_ids, node_offsets_dict=offsets,
        x_dict={t: data[t].x[node_ids[t]] for t in data.node_types},
        edge_index_dict=graphs, edge_attr_dict=attrs)


# ------------------------------------------------------------------------------ models
def _mlp(i: int, o: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(i, 8), torch.nn.ReLU(), torch.nn.Linear(8, o))


class Homo(torch.nn.Module):
    """A homogeneous model for ``to_hetero``: per-type input projection, two convs, an
    optional batch norm between them (per node type after to_hetero)."""

    def __init__(self, conv1, conv2, norm: bool = False, skip: bool = False) -> None:
        super().__init__()
        self.lin = Linear(-1, 8)
        self.conv1, self.conv2 = conv1, conv2
        self.norm = BatchNorm(8) if norm else None
        self.skip = Linear(-1, 8) if skip else None

    def forward(self, x, edge_index):
        x = self.lin(x).relu()
        h = self.conv1(x, edge_index)
        if self.skip is not None:
            h = h + self.skip(x)
        if self.norm is not None:
            h = self.norm(h)
        return self.conv2(h.relu(), edge_index)


class HomoEdge(torch.nn.Module):
    """A homogeneous model with edge attributes for ``to_hetero``: GINE then GAT with
    ``edge_dim`` (edge attributes of every edge type, in the graph's stored edge order)."""

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.lin = Linear(-1, 8)
        self.conv1 = GINEConv(_mlp(8, 8), edge_dim=EDGE_DIM, train_eps=True)
        self.conv2 = GATConv((-1, -1), 5, heads=2, edge_dim=EDGE_DIM, add_self_loops=False,
                             dropout=dropout)

    def forward(self, x, edge_index, edge_attr):
        x = self.lin(x).relu()
        x = self.conv1(x, edge_index, edge_attr).relu()
        return self.conv2(x, edge_index, edge_attr)


HOMO = {
    "sage_mean": lambda: Homo(SAGEConv((-1, -1), 8), SAGEConv((-1, -1), 5)),
    "sage_sum": lambda: Homo(SAGEConv((-1, -1), 8, aggr="sum"),
                             SAGEConv(8, 5, aggr="sum", project=True)),
    "sage_max": lambda: Homo(SAGEConv((-1, -1), 8, aggr="max"),
                             SAGEConv((-1, -1), 5, aggr="max", normalize=True)),
    "gat": lambda: Homo(GATConv((-1, -1), 4, heads=2, add_self_loops=False),
                        GATConv((-1, -1), 5, heads=2, concat=False, add_self_loops=False),
                        skip=True),
    "gatv2": lambda: Homo(GATv2Conv((-1, -1), 4, heads=2, add_self_loops=False),
                          GATv2Conv((-1, -1), 5, add_self_loops=False)),
    "graphconv": lambda: Homo(GraphConv((-1, -1), 8), GraphConv((-1, -1), 5, aggr="max")),
    "gin": lambda: Homo(GINConv(_mlp(8, 8), train_eps=True), GINConv(_mlp(8, 5))),
    "sage_bn": lambda: Homo(SAGEConv((-1, -1), 8), SAGEConv((-1, -1), 5), norm=True),
    "gine_gat_edge": lambda: HomoEdge(),
}


WITH_EDGE_ATTR = (("author", "writes", "paper"), ("inst", "employs", "author"))


def _hetero_conv(aggr: Optional[str], out: int = 5) -> HeteroConv:
    return HeteroConv({
        ("author", "writes", "paper"): GINEConv(_mlp(8, out), edge_dim=EDGE_DIM),
        ("paper", "cites", "paper"): GATConv(-1, out, heads=2, concat=False),  # self-loops
        ("paper", "rev_writes", "author"): GraphConv((-1, -1), out, aggr="mean"),
        ("inst", "employs", "author"): GATv2Conv((-1, -1), out, add_self_loops=False,
                                                 edge_dim=EDGE_DIM),
        ("author", "rev_employs", "inst"): SAGEConv((-1, -1), out, aggr="max"),
    }, aggr=aggr)


class DictModel(torch.nn.Module):
    """HeteroDictLinear -> HeteroConv(aggr) with edge attributes -> optional HeteroLinear."""

    def __init__(self, aggr: Optional[str], hetero_linear: bool = False) -> None:
        super().__init__()
        self.lin = HeteroDictLinear(-1, 8, types=list(NUM))
        self.conv = _hetero_conv(aggr)
        self.hlin = HeteroLinear(8, 8, num_types=len(NUM)) if hetero_linear else None

    def forward(self, x_dict, edge_index_dict, edge_attr_dict):
        x_dict = {t: v.relu() for t, v in self.lin(x_dict).items()}
        if self.hlin is not None:
            types = list(x_dict)
            x = torch.cat([x_dict[t] for t in types])
            type_vec = torch.cat([torch.full((x_dict[t].shape[0],), i, dtype=torch.long)
                                  for i, t in enumerate(types)])
            x_dict = dict(zip(types, self.hlin(x, type_vec).split(
                [x_dict[t].shape[0] for t in types])))
        attrs = {et: a for et, a in edge_attr_dict.items() if et in WITH_EDGE_ATTR}
        return self.conv(x_dict, edge_index_dict, edge_attr_dict=attrs)


def build(name: str, metadata) -> tuple[torch.nn.Module, bool]:
    """The reference model of case ``name`` and whether it takes edge attributes.

    ``to_hetero/<homo>/<aggr>`` or ``heteroconv/<aggr>`` or ``dictlinear/<aggr>`` /
    ``heterolinear``.
    """
    kind, *rest = name.split("/")
    if kind == "to_hetero":
        homo, aggr = rest
        return to_hetero(HOMO[homo](), metadata, aggr=aggr), homo == "gine_gat_edge"
    if kind in ("heteroconv", "dictlinear"):
        aggr = None if rest[0] == "none" else rest[0]
        return DictModel(aggr), True
    if kind == "heterolinear":
        return DictModel("sum", hetero_linear=True), True
    raise ValueError(f"unknown case {name!r}")


def _call(model, x_dict, graphs, attrs, with_edges: bool):
    if with_edges:
        return model(x_dict, graphs, attrs)
    return model(x_dict, graphs)


def reference(data: HeteroData, ref: torch.nn.Module, run) -> tuple:
    """The oracle of model ``ref`` (seeded by the caller; lazy parameters initialised here on
    the whole graph, before any backward): ``(pristine copy, PyG's outputs per node type, the
    extra output or None, output weights, input gradients, parameter gradients)``.

    ``run(model, x_dict, edge_index_dict, edge_attr_dict) -> (out_dict, extra)``: how the
    model is called; ``extra`` is a dict of further outputs compared as they are (attention
    weights), or ``None``."""
    ref = ref.double()
    attrs = {et: data[et].edge_attr for et in data.edge_types if "edge_attr" in data[et]}
    with torch.no_grad():  # initialise lazy parameters on the whole graph
        run(ref, data.x_dict, data.edge_index_dict, attrs)
    pristine = copy.deepcopy(ref)
    x_ref = {t: v.clone().requires_grad_() for t, v in data.x_dict.items()}
    out_ref, extra = run(ref, x_ref, data.edge_index_dict, attrs)
    weights = {t: torch.randn(out_ref[t].shape, dtype=torch.float64,
                              generator=torch.Generator().manual_seed(3 + i))
               for i, t in enumerate(sorted(out_ref))}
    sum((out_ref[t] * weights[t]).sum() for t in out_ref).backward()
    grads = {pname: p.grad for pname, p in ref.named_parameters()}
    x_grads = {t: v.grad for t, v in x_ref.items()}
    extra = None if extra is None else {k: a.detach() for k, a in extra.items()
                                        if a is not None}
    return pristine, {t: v.detach() for t, v in out_ref.items()}, extra, weights, x_grads, \
        grads


def compare(part, oracle: tuple, mode: str, run) -> dict:
    """Errors of the converted copy of :func:`reference`'s model on this rank's ``part`` in
    ``mode``: every node type's output (its rows, original order), extra output, input
    gradient and parameter gradient (after the gradient sum over ranks)."""
    pristine, out_ref, extra_ref, weights, x_grads, grads = oracle
    dist = pyg_sar.convert(copy.deepcopy(pristine),
                           pyg_sar.SARConfig(mode=mode, check_loss=False))
    ids = part.node_ids_dict
    x_loc = {t: part.x_dict[t].double().clone().requires_grad_() for t in x_grads}
    attrs = {k: v.double() for k, v in getattr(part, "edge_attr_dict", {}).items()}
    out, extra = run(dist, x_loc, part.edge_index_dict, attrs)
    errs = {f"out:{t}": rel_error(out[t].detach(), out_ref[t][ids[t]]) for t in out_ref}
    if set(out) != set(out_ref):
        errs["node_types"] = 1.0
    for k, a in (extra_ref or {}).items():
        errs[f"attn:{k}"] = rel_error(extra[k].detach(), a)
    sum((out[t] * weights[t][ids[t]]).sum() for t in out_ref).backward()
    pyg_sar.all_reduce_gradients(dist)
    for t, g in x_grads.items():
        if g is not None:
            errs[f"x_grad:{t}"] = rel_error(x_loc[t].grad, g[ids[t]])
    scale = max(float(g.abs().max()) for g in grads.values() if g is not None)
    for (pname, p) in dist.named_parameters():
        g = grads[pname]
        if g is None:
            errs[f"grad:{pname}"] = 0.0 if p.grad is None or not p.grad.any() else 1.0
        else:
            errs[f"grad:{pname}"] = float((p.grad - g).abs().max()) / scale
    return {"max": max(errs.values()), "errors": errs}


def runner(with_edges: bool):
    """:func:`reference`'s ``run`` for a model of this module (dict output, no extra)."""
    return lambda model, x, graphs, attrs: (_call(model, x, graphs, attrs, with_edges), None)


def _oracle(data: HeteroData, name: str):
    """The oracle of case ``name`` (:func:`reference`) and how its model is called."""
    torch.manual_seed(7)
    ref, with_edges = build(name, data.metadata())
    run = runner(with_edges)
    return reference(data, ref, run), run


def one_case(part, oracle, mode: str) -> dict:
    """Errors of one (model, mode) case on this rank."""
    reference_, run = oracle
    return compare(part, reference_, mode, run)


def saved_bytes(part, mode: str) -> int:
    """Bytes the autograd graph saves for backward in one forward of a HeteroConv of
    SAGEConv(aggr="max") (the generic path: rows are fetched, not a linear kernel)."""
    torch.manual_seed(5)
    model = HeteroConv({et: SAGEConv((DIM[et[0]], DIM[et[2]]), 4, aggr="max")
                        for et in EDGES}, aggr="sum").double()
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, check_loss=False))
    x = {t: part.x_dict[t].double().clone().requires_grad_() for t in NUM}
    sizes: list[int] = []

    def pack(t, sizes=sizes):
        sizes.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x, part.edge_index_dict)
    sum(v.sum() for v in out.values()).backward()
    return sum(sizes)


def rng_replay(part, data: HeteroData) -> dict:
    """Mode sar recomputes each remote block in backward with the forward's randomness:
    with attention dropout (GAT over every edge type, bipartite ones included, fused
    kernels and the plain path) its gradients equal mode sa's, which keeps the rows."""
    out = {}
    for kernels in (True, False):
        grads = {}
        for mode in ("sa", "sar"):
            torch.manual_seed(11)
            model = to_hetero(HomoEdge(dropout=0.4), data.metadata(), aggr="sum").double()
            with torch.no_grad():
                model(data.x_dict, data.edge_index_dict, data.edge_attr_dict)
            pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, use_kernels=kernels,
                                                     check_loss=False))
            model.train()
            x = {t: part.x_dict[t].double().clone().requires_grad_() for t in NUM}
            attrs = {k: v.double() for k, v in part.edge_attr_dict.items()}
            torch.manual_seed(100 + part.rank)
            y = model(x, part.edge_index_dict, attrs)
            sum(v.square().sum() for v in y.values()).backward()
            grads[mode] = [x[t].grad for t in NUM] + [p.grad for p in model.parameters()]
        diff = max(float((a - b).abs().max()) for a, b in zip(grads["sa"], grads["sar"])
                   if a is not None and a.numel())
        nonzero = all(g is not None and bool(g.abs().sum() > 0) for g in grads["sar"][3:])
        out[f"kernels={kernels}"] = {"max_abs_diff": diff, "grads_nonzero": nonzero}
    return out


def load(ctx, parts: Optional[str], world: int, seed: int, num: Optional[dict] = None):
    data = make_hetero(seed, num)
    if parts is None:
        return data, hand_partition(data, world, ctx.rank, seed)
    return data, pyg_sar.load_partition(parts, ctx.rank)


def suite(ctx, cases: list, parts: Optional[str] = None, seed: int = 0,
          num: Optional[dict] = None) -> dict:
    """Run ``cases`` = [[name, mode], ...] on this rank; plus the saved-bytes measurement."""
    data, part = load(ctx, parts, ctx.world_size, seed, num)
    results, oracles = {}, {}
    # (An error raises on every rank: a case caught on one rank only would leave the others
    # waiting in its collectives.)
    for name, mode in cases:
        if name not in oracles:
            oracles = {name: _oracle(data, name)}  # one at a time: cases come by name
        results[f"{name}/{mode}"] = one_case(part, oracles[name], mode)
    sar, sa = saved_bytes(part, "sar"), saved_bytes(part, "sa")
    fetched = sum(sum(g.recv_counts) * DIM[et[0]] * 8
                  for et, g in part.edge_index_dict.items())
    results["saved_bytes"] = {"sar": sar, "sa": sa, "fetched_bytes": fetched}
    results["rng_replay"] = rng_replay(part, data)
    return results


def both(ctx, cases: list, parts: str, partition_cases: list, small_cases: list = (),
         seed: int = 0) -> dict:
    """:func:`suite` of ``cases`` on the hand-built partition, of ``partition_cases`` on the
    partition folder ``parts``, and of ``small_cases`` on a hand-built partition of the graph
    whose "inst" type has 2 nodes (with 3 ranks, one holds none of them), in one launch."""
    return {"hand": suite(ctx, cases, None, seed),
            "partition": suite(ctx, partition_cases, parts, seed),
            "small_type": suite(ctx, list(small_cases), None, seed, num={"inst": 2})}

