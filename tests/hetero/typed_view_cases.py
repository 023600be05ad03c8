"""Rank side of the typed-view tests: RGCNConv / RGATConv / HEATConv and a two-layer R-GCN on
:meth:`pyg_sar.HeteroPartition.to_homogeneous` against PyG on ``HeteroData.to_homogeneous()``.

Every rank builds the same ``HeteroData`` (:func:`make_data`: every node type has features of
the same size, so PyG's ``to_homogeneous`` concatenates them into one ``x``; every edge type has
``edge_attr`` of the same size, concatenated likewise), the same reference model, and runs plain
PyG on the whole homogeneous graph (the oracle: output, input gradient, parameter gradients,
computed once per model). Then, per partition folder and mode, the converted model runs on the
rank's typed view ``(graph, node_type, edge_type)`` with ``homogeneous_edge_attr()``, and the
rank reports relative errors of its output rows, its input gradient rows and every parameter
gradient after :func:`pyg_sar.all_reduce_gradients`. The pytest side asserts the tolerance.
"""
from __future__ import annotations

import copy
import traceback

import torch
from torch_geometric.data import HeteroData
from torch_geometric.nn import FiLMConv, HEATConv, HeteroBatchNorm, RGATConv, RGCNConv

import pyg_sar
from tests.closeness import rel_error

DIM, EDGE_DIM = 4, 3
# "venue" has 2 nodes: at P = 3 one rank holds none of them.
NUM = {"paper": 34, "author": 23, "inst": 8, "venue": 2}
EDGES = {("author", "writes", "paper"): 70, ("paper", "cites", "paper"): 80,
         ("paper", "rev_writes", "author"): 60, ("inst", "employs", "author"): 25,
         ("author", "rev_employs", "inst"): 25, ("paper", "published_in", "venue"): 30}
NUM_TYPES, NUM_RELATIONS = len(NUM), len(EDGES)


def make_data(seed: int = 0) -> HeteroData:
    """Four node types (features of size :data:`DIM`, the last 2 nodes of each type of 8 or
    more nodes without edges), six edge types (one within a type, with self-loops and
    duplicate edges), ``edge_attr`` of size :data:`EDGE_DIM` on every edge type."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for t, n in NUM.items():
        data[t].x = torch.randn(n, DIM, generator=g, dtype=torch.float64)
    for (s, r, d), e in EDGES.items():
        hi_s, hi_d = (n - 2 if n >= 8 else n for n in (NUM[s], NUM[d]))
        ei = torch.stack([torch.randint(0, hi_s, (e,), generator=g),
                          torch.randint(0, hi_d, (e,), generator=g)])
        if s == d:
            loops = torch.arange(0, hi_s, 4).repeat(2, 1)
            ei = torch.cat([ei, loops, ei[:, :5]], dim=1)  # self-loops, 5 duplicate edges
        data[s, r, d].edge_index = ei
        data[s, r, d].edge_attr = torch.randn(ei.shape[1], EDGE_DIM, generator=g,
                                              dtype=torch.float64)
    return data


class Typed(torch.nn.Module):
    """One typed layer called as PyG users call it: RGCN/RGAT ``(x, edge_index, edge_type)``
    (RGAT with ``edge_attr`` when it has ``edge_dim``), HEAT ``(x, edge_index, node_type,
    edge_type, edge_attr)``."""

    def __init__(self, conv: torch.nn.Module) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x, edge_index, node_type, edge_type, edge_attr):
        if isinstance(self.conv, HEATConv):
            return self.conv(x, edge_index, node_type, edge_type, edge_attr)
        if isinstance(self.conv, RGATConv) and self.conv.edge_dim is not None:
            return self.conv(x, edge_index, edge_type, edge_attr)
        return self.conv(x, edge_index, edge_type)


class Featureless(torch.nn.Module):
    """RGCNConv without node features (``x=None``: node ``i`` is one-hot ``i``, in_channels =
    the number of nodes), as R-GCN on featureless node types is run in PyG."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.conv = RGCNConv(sum(NUM.values()), 5, NUM_RELATIONS, **kwargs)

    def forward(self, x, edge_index, node_type, edge_type, edge_attr):
        return self.conv(None, edge_index, edge_type)


class RGCN(torch.nn.Module):
    """Two RGCNConv layers (bases, then blocks) with a ReLU between them."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = RGCNConv(DIM, 8, NUM_RELATIONS, num_bases=2)
        self.conv2 = RGCNConv(8, 6, NUM_RELATIONS, num_blocks=2, aggr="add")

    def forward(self, x, edge_index, node_type, edge_type, edge_attr):
        return self.conv2(self.conv1(x, edge_index, edge_type).relu(), edge_index, edge_type)


R = NUM_RELATIONS
MODELS = {
    "rgcn/mean": lambda: Typed(RGCNConv(DIM, 6, R)),
    "rgcn/add": lambda: Typed(RGCNConv(DIM, 6, R, aggr="add")),
    "rgcn/bases/mean": lambda: Typed(RGCNConv(DIM, 6, R, num_bases=2)),
    "rgcn/bases/add": lambda: Typed(RGCNConv(DIM, 6, R, num_bases=3, aggr="add")),
    "rgcn/blocks/mean": lambda: Typed(RGCNConv(DIM, 6, R, num_blocks=2)),
    "rgcn/blocks/add": lambda: Typed(RGCNConv(DIM, 6, R, num_blocks=2, aggr="add")),
    "rgcn/no_root_no_bias": lambda: Typed(RGCNConv(DIM, 6, R, num_bases=2, root_weight=False,
                                                   bias=False)),
    "rgcn/max": lambda: Typed(RGCNConv(DIM, 6, R, num_bases=2, aggr="max")),
    "film": lambda: Typed(FiLMConv(DIM, 6, num_relations=R)),
    "rgat/across/additive": lambda: Typed(RGATConv(DIM, 3, R, heads=2)),
    "rgat/across/multiplicative": lambda: Typed(RGATConv(
        DIM, 3, R, heads=2, dim=2, attention_mode="multiplicative-self-attention")),
    "rgat/within/additive": lambda: Typed(RGATConv(
        DIM, 3, R, heads=2, attention_mechanism="within-relation")),
    "rgat/within/multiplicative": lambda: Typed(RGATConv(
        DIM, 3, R, heads=2, attention_mechanism="within-relation",
        attention_mode="multiplicative-self-attention")),
    "rgat/scaled": lambda: Typed(RGATConv(DIM, 3, R, heads=2, mod="scaled")),
    "rgat/scaled/within": lambda: Typed(RGATConv(
        DIM, 3, R, heads=2, mod="scaled", attention_mechanism="within-relation")),
    "rgat/scaled/multiplicative": lambda: Typed(RGATConv(
        DIM, 3, R, heads=2, mod="scaled", attention_mode="multiplicative-self-attention")),
    "rgat/f-scaled": lambda: Typed(RGATConv(DIM, 3, R, heads=2, mod="f-scaled")),
    "rgat/f-scaled/within": lambda: Typed(RGATConv(
        DIM, 3, R, heads=2, mod="f-scaled", attention_mechanism="within-relation")),
    "rgat/bases/edge_attr": lambda: Typed(RGATConv(DIM, 3, R, num_bases=2, heads=2,
                                                   edge_dim=EDGE_DIM)),
    "rgat/blocks/no_concat": lambda: Typed(RGATConv(DIM, 4, R, num_blocks=2, heads=2,
                                                    concat=False)),
    "heat": lambda: Typed(HEATConv(DIM, 6, NUM_TYPES, R, edge_type_emb_dim=3,
                                   edge_dim=EDGE_DIM, edge_attr_emb_dim=2, heads=2)),
    "heat/no_concat/no_root": lambda: Typed(HEATConv(
        DIM, 6, NUM_TYPES, R, edge_type_emb_dim=2, edge_dim=EDGE_DIM, edge_attr_emb_dim=3,
        heads=3, concat=False, root_weight=False)),
    "rgcn/featureless/mean": Featureless,
    "rgcn/featureless/bases/add": lambda: Featureless(num_bases=2, aggr="add"),
    "rgcn_2_layers": RGCN,
}


def _oracle(homo, name: str):
    """The reference model of ``name`` (before any backward), PyG's output on the whole
    homogeneous graph, the loss weights and PyG's gradients (input, parameters)."""
    torch.manual_seed(7)
    ref = MODELS[name]().double()
    for module in ref.modules():
        if isinstance(module, RGATConv):
            # PyG's reset_parameters leaves RGATConv.l2 (used by mod='scaled') as torch.empty
            # memory, different on every rank: set it as PyG means to (1 / out_channels).
            with torch.no_grad():
                module.l2.fill_(1.0 / module.out_channels)
    pristine = copy.deepcopy(ref)
    x = homo.x.clone().requires_grad_()
    out = ref(x, homo.edge_index, homo.node_type, homo.edge_type, homo.edge_attr)
    weight = torch.randn(out.shape, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(3))
    (out * weight).sum().backward()
    grads = {pname: p.grad for pname, p in ref.named_parameters()}
    return pristine, out.detach(), weight, x.grad, grads


def one_case(part, homo, oracle, mode: str) -> dict:
    """Relative errors of one converted model on the rank's typed view."""
    pristine, out_ref, weight, x_grad, grads = oracle
    graph, node_type, edge_type = part.to_homogeneous()
    nid = graph.node_ids
    dist = pyg_sar.convert(copy.deepcopy(pristine), pyg_sar.SARConfig(mode=mode, check_loss=False))
    x = homo.x[nid].clone().requires_grad_()
    out = dist(x, graph, node_type, edge_type, part.homogeneous_edge_attr())
    errs = {"out": rel_error(out.detach(), out_ref[nid])}
    (out * weight[nid]).sum().backward()
    pyg_sar.all_reduce_gradients(dist)
    if x_grad is None:  # the input is not used (featureless)
        errs["x_grad"] = 0.0 if x.grad is None else 1.0
    else:
        errs["x_grad"] = rel_error(x.grad, x_grad[nid])
    scale = max(float(g.abs().max()) for g in grads.values() if g is not None)
    for pname, p in dist.named_parameters():
        g = grads[pname]
        if g is None:
            errs[f"grad:{pname}"] = 0.0 if p.grad is None or not p.grad.any() else 1.0
        elif p.grad is None:
            errs[f"grad:{pname}"] = 1.0
        else:  # relative to the parameter's own gradient (the largest one's if it is zero)
            own = float(g.abs().max())
            errs[f"grad:{pname}"] = float((p.grad - g).abs().max()) / (own or scale)
    return {"max": max(errs.values()), "errors": errs}


class BatchNormModel(torch.nn.Module):
    """RGCNConv -> HeteroBatchNorm over the node types -> RGCNConv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = RGCNConv(DIM, 6, R)
        self.bn = HeteroBatchNorm(6, NUM_TYPES, momentum=0.3)
        self.conv2 = RGCNConv(6, 3, R)

    def forward(self, x, edge_index, node_type, edge_type):
        h = self.bn(self.conv1(x, edge_index, edge_type), node_type).relu()
        return self.conv2(h, edge_index, edge_type)


def hetero_batch_norm_case(part, homo) -> dict:
    """Two SGD steps in training mode, then an evaluation forward: HeteroBatchNorm's
    statistics per node type over all ranks (a rank may hold no node of a type), its running
    statistics and the evaluation output equal PyG's on the whole graph."""
    torch.manual_seed(7)
    ref = BatchNormModel().double()
    dist = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(check_loss=False))
    graph, node_type, edge_type = part.to_homogeneous()
    nid = graph.node_ids
    weight = torch.randn(homo.num_nodes, 3, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(3))
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt_dist = torch.optim.SGD(dist.parameters(), lr=0.1)
    errs = {}
    for step in range(2):
        opt_ref.zero_grad()
        out_ref = ref(homo.x, homo.edge_index, homo.node_type, homo.edge_type)
        (out_ref * weight).sum().backward()
        opt_ref.step()
        opt_dist.zero_grad()
        out = dist(homo.x[nid], graph, node_type, edge_type)
        (out * weight[nid]).sum().backward()
        pyg_sar.all_reduce_gradients(dist)
        opt_dist.step()
        errs[f"train_out{step}"] = rel_error(out.detach(), out_ref.detach()[nid])
    errs["running_mean"] = rel_error(dist.bn.running_mean, ref.bn.running_mean)
    errs["running_var"] = rel_error(dist.bn.running_var, ref.bn.running_var)
    ref.eval()
    dist.eval()
    with torch.no_grad():
        errs["eval_out"] = rel_error(dist(homo.x[nid], graph, node_type, edge_type),
                                ref(homo.x, homo.edge_index, homo.node_type,
                                    homo.edge_type)[nid])
    errs["distributed"] = 0.0 if type(dist.bn).__name__ == "DistributedHeteroBatchNorm" else 1.0
    return {"max": max(errs.values()), "errors": errs}


def _view_facts(part, homo) -> dict:
    """What the test checks of the view itself: node types, edge types and edge attributes
    agree with PyG's for the rank's nodes and stored edges."""
    graph, node_type, edge_type = part.to_homogeneous()
    nid = graph.node_ids
    ea = part.homogeneous_edge_attr()
    return {"node_type_mismatch": int((node_type != homo.node_type[nid]).sum()),
            "num_edges": int(edge_type.numel()), "edge_attr_rows": int(ea.shape[0]),
            "graph_edges": int(graph.num_edges),
            "local_nodes": {t: int(v.shape[0]) for t, v in part.x_dict.items()}}


def suite(ctx, cases: list, parts: dict, seed: int = 0) -> dict:
    """Every case on every partition folder in ``parts`` (name -> folder): results keyed
    ``'<folder name>|<model>/<mode>'``."""
    data = make_data(seed)
    homo = data.to_homogeneous()
    loaded = {name: pyg_sar.load_partition(folder, ctx.rank) for name, folder in parts.items()}
    results: dict = {}
    for name, part in loaded.items():
        try:
            results[f"{name}|view"] = _view_facts(part, homo)
        except Exception as err:  # noqa: BLE001 - reported, asserted by pytest
            results[f"{name}|view"] = {"error": f"{type(err).__name__}: {err}"}
        try:
            results[f"{name}|hetero_batch_norm"] = hetero_batch_norm_case(part, homo)
        except Exception as err:  # noqa: BLE001 - reported, asserted by pytest
            results[f"{name}|hetero_batch_norm"] = {
                "error": f"{type(err).__name__}: {err}\n{traceback.format_exc()}"}
    oracles: dict = {}
    for model, mode in cases:
        for name, part in loaded.items():
            key = f"{name}|{model}/{mode}"
            try:
                if model not in oracles:
                    oracles = {model: _oracle(homo, model)}
                results[key] = one_case(part, homo, oracles[model], mode)
            except Exception as err:  # noqa: BLE001 - reported per case, asserted by pytest
                results[key] = {"error": f"{type(err).__name__}: {err}\n"
                                         f"{traceback.format_exc()}"}
    pyg_sar.barrier()
    return results
