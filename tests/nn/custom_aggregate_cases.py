"""Rank side (and P = 1 side) of tests/nn/test_custom_aggregate.py: the layers whose
propagate pyg_sar runs through an adapter of its own (ARMAConv's stacks as channels, EGConv's
and FastRGCNConv's aggregations as combine rules), each converted and run on this rank's part
of the zoo graph in modes sar / sa / halo against plain PyG on the whole graph (float64): the
output rows, every input gradient and every parameter gradient (summed over ranks), as the zoo
compares them (:mod:`pyg_sar.testing.zoo_rank`).

The zoo graph has 4 isolated nodes (empty rows without self-loops) and some self-loops; its
edge types leave some relations absent at some nodes (checked by :func:`graph_facts`).
"""
from __future__ import annotations

import types
from typing import Any

import torch
from torch import Tensor
from torch_geometric.nn import ARMAConv, EGConv, FastRGCNConv, GCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

import pyg_sar
from pyg_sar.testing.zoo_rank import (
    SEED,
    Oracle,
    check_partition,
    graph_info,
    make_graph,
    run_cell,
)
from pyg_sar.testing.zoo_recipes import IN, OUT, RELATIONS, Inputs, Recipe

MODES = ("sar", "sa", "halo")


def _x(m, d: Inputs) -> Tensor:
    return m(d.x, d.edge_index)


def _xw(m, d: Inputs) -> Tensor:
    return m(d.x, d.edge_index, d.edge_weight)


def _arma_recipes() -> list[Recipe]:
    return [
        Recipe("arma/weighted", ARMAConv,
               lambda: ARMAConv(IN, OUT, num_stacks=3, num_layers=3), _xw),
        Recipe("arma/shared_dropout_eval", ARMAConv,
               lambda: ARMAConv(IN, OUT, num_stacks=2, num_layers=2, shared_weights=True,
                                dropout=0.5, act=torch.nn.Tanh()), _x, train=False),
        Recipe("arma/one_stack_no_bias", ARMAConv,
               lambda: ARMAConv(IN, OUT, num_stacks=1, num_layers=1, bias=False), _xw),
    ]


EG_OUT, EG_HEADS, EG_BASES = 8, 2, 2
EG_AGGREGATORS = ("sum", "mean", "symnorm", "var", "std", "max", "min")


def _eg(aggregators, **kwargs) -> EGConv:
    return EGConv(IN, EG_OUT, aggregators=list(aggregators), num_heads=EG_HEADS,
                  num_bases=EG_BASES, **kwargs)


def _eg_ties(aggregators) -> EGConv:
    """Each basis channel a positive multiple of one input feature: with the features
    clamped to [-0.3, 0.3] (:func:`_x_clamped`) many messages of a node tie at its max / min."""
    conv = _eg(aggregators, add_self_loops=False)
    with torch.no_grad():
        w = torch.zeros_like(conv.bases_lin.weight)
        for c in range(w.shape[0]):
            w[c, c % IN] = 1.0 + 0.1 * c
        conv.bases_lin.weight.copy_(w)
    return conv


def _x_clamped(m, d: Inputs) -> Tensor:
    return m(d.x.clamp(min=-0.3, max=0.3), d.edge_index)


def _eg_recipes() -> list[Recipe]:
    out = [Recipe(f"eg/{a}/no_loops", EGConv, lambda a=a: _eg([a], add_self_loops=False), _x)
           for a in EG_AGGREGATORS]
    out += [
        Recipe("eg/all/loops", EGConv, lambda: _eg(EG_AGGREGATORS), _x),
        # without symnorm PyG adds loops up to the largest edge end only (trailing isolated
        # nodes stay empty rows)
        Recipe("eg/plain/loops", EGConv, lambda: _eg([a for a in EG_AGGREGATORS
                                                      if a != "symnorm"]), _x),
        Recipe("eg/var_min/loops", EGConv, lambda: _eg(["var", "min"]), _x),
        Recipe("eg/all/no_loops", EGConv, lambda: _eg(EG_AGGREGATORS, add_self_loops=False), _x),
        Recipe("eg/std_symnorm", EGConv, lambda: _eg(["std", "symnorm"]), _x),
        Recipe("eg/default", EGConv, lambda: EGConv(IN, EG_OUT, num_heads=EG_HEADS), _x),
        Recipe("eg/max_min_ties", EGConv, lambda: _eg_ties(["max", "min", "sum"]), _x_clamped),
    ]
    return out


def _xt(m, d: Inputs) -> Tensor:
    return m(d.x, d.edge_index, d.edge_type)


def _featureless(m, d: Inputs) -> Tensor:
    return m(None, d.edge_index, d.edge_type)


NUM_NODES = 60  # the zoo graph's (featureless R-GCN: in_channels = the number of nodes)


def _fast_rgcn_recipes() -> list[Recipe]:
    return [
        Recipe("fast_rgcn/mean", FastRGCNConv, lambda: FastRGCNConv(IN, OUT, RELATIONS), _xt),
        Recipe("fast_rgcn/bases_add", FastRGCNConv,
               lambda: FastRGCNConv(IN, OUT, RELATIONS, num_bases=2, aggr="add"), _xt),
        Recipe("fast_rgcn/blocks_mean", FastRGCNConv,
               lambda: FastRGCNConv(IN, 4, RELATIONS, num_blocks=2), _xt),
        Recipe("fast_rgcn/no_root_sum", FastRGCNConv,
               lambda: FastRGCNConv(IN, OUT, RELATIONS, aggr="sum", root_weight=False,
                                    bias=False), _xt),
        Recipe("fast_rgcn/featureless_mean", FastRGCNConv,
               lambda: FastRGCNConv(NUM_NODES, OUT, RELATIONS), _featureless),
        Recipe("fast_rgcn/featureless_bases_add", FastRGCNConv,
               lambda: FastRGCNConv(NUM_NODES, OUT, RELATIONS, num_bases=2, aggr="add"),
               _featureless),
    ]


def recipes() -> dict[str, Recipe]:
    """Every case, by name."""
    return {r.name: r for r in _arma_recipes() + _eg_recipes() + _fast_rgcn_recipes()}


class StackedARMA(ARMAConv):
    """A trusted ARMAConv subclass with its own forward: it hands propagate PyG's
    ``[num_stacks, num_nodes, channels]`` tensor, which the converted propagate runs as
    channels (ARMAConv's adapter), as for PyG's own forward."""

    def forward(self, x, edge_index, edge_weight=None):
        if isinstance(edge_index, Tensor):  # as PyG's forward (a DistGraph: the adapter's)
            edge_index, edge_weight = gcn_norm(edge_index, edge_weight, x.size(0),
                                               add_self_loops=False, dtype=x.dtype)
        out = x.unsqueeze(-3) @ self.init_weight
        return self.propagate(edge_index, x=out, edge_weight=edge_weight).mean(dim=-3)


class StackedGCN(GCNConv):
    """A trusted GCNConv subclass whose forward propagates a ``[2, num_nodes, channels]``
    stack: GCNConv's adapter does not declare stacks, so the engine refuses it by its
    reason."""

    def forward(self, x, edge_index, edge_weight=None):
        return self.propagate(edge_index, x=torch.stack([x, 2 * x]),
                              edge_weight=edge_weight).mean(dim=0)


def refusals(part, data) -> dict[str, Any]:
    """Messages of the refusals (``None``: it ran); ``stacked_arma``: the largest relative
    error of the rank's output rows of :class:`StackedARMA` against the same module in one
    process on the whole graph (PyG's propagate of its stacks)."""
    out: dict[str, Any] = {}
    torch.manual_seed(SEED)
    pristine = StackedARMA(IN, OUT, num_stacks=2).double()
    want = pristine(data.x.double(), data.edge_index)[part.node_ids]
    model = pyg_sar.convert(pristine, pyg_sar.SARConfig(trusted_layers=(StackedARMA,),
                                                        check_loss=False))
    got = model(part.x.double(), part.graph)
    out["stacked_arma"] = float((got - want).abs().max() / want.abs().max())
    gcn = pyg_sar.convert(StackedGCN(IN, OUT).double(),
                          pyg_sar.SARConfig(trusted_layers=(StackedGCN,), check_loss=False))
    try:
        gcn(part.x.double(), part.graph)
        out["stacked_gcn"] = None
    except ValueError as exc:
        out["stacked_gcn"] = f"{type(exc).__name__}: {exc}"
    try:
        pyg_sar.convert(FastRGCNConv(IN, OUT, RELATIONS, aggr="max").double())
        out["fast_rgcn_max"] = None
    except pyg_sar.UnsupportedLayerError as exc:
        out["fast_rgcn_max"] = str(exc)
    return out


def graph_facts(part) -> dict[str, Any]:
    """What the cases need of this rank's part: nodes without in-edges, and (node, relation)
    pairs absent at nodes that have in-edges of another relation."""
    g = part.graph
    etype = part.edge_data["edge_type"]
    counts = torch.zeros(g.num_nodes, RELATIONS, dtype=torch.long)
    for b in g.blocks:  # stored edge tensors: a block's edges are its edge_slice
        counts.index_put_((b.row, etype[b.edge_slice]), torch.ones_like(b.row),
                          accumulate=True)
    has_some = counts.sum(1) > 0
    return {"empty_rows": int((~has_some).sum()),
            "absent_relations": int(((counts == 0) & has_some[:, None]).sum())}


def run(ctx, part, data) -> dict[str, Any]:
    """Every (case, mode) cell on this rank: ``{"case/mode": cell}``."""
    info = graph_info(data)
    out: dict[str, Any] = {"rows": int(part.num_nodes), "facts": graph_facts(part)}
    for name, recipe in recipes().items():
        torch.manual_seed(SEED)
        pristine = recipe.make(info).double().train(recipe.train)
        oracle = Oracle(recipe, pristine, data)
        for mode in MODES:
            out[f"{name}/{mode}"] = run_cell(ctx, part, recipe, pristine, mode, oracle, None)
    out["refusals"] = refusals(part, data)
    return out


def ranks(ctx, parts: str) -> dict[str, Any]:
    """Rank target of the P = 3 launch."""
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    check_partition(part, data)
    return run(ctx, part, data)


def single(parts: str) -> dict[str, Any]:
    """P = 1 in this process."""
    data = make_graph()
    part = pyg_sar.load_partition(parts, 0, world_size=1)
    check_partition(part, data)
    return run(types.SimpleNamespace(rank=0, world_size=1, comm=None), part, data)
