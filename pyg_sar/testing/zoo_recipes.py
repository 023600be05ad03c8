"""The layer zoo: one or more recipes for every class that ``torch_geometric.nn.conv`` exports.

A recipe builds a layer with small arguments (6 input channels, 5 output channels, 2 heads,
3 relations, 4 edge features, ...) and calls it with the inputs the layer takes. The zoo test
runs every recipe with plain PyG on the whole graph and converted on P ranks, and classifies it
as EXACT or REFUSED (see :mod:`pyg_sar.testing.zoo`). A class exported by
``torch_geometric.nn.conv`` without a recipe here is reported by :func:`unclassified_classes`:
a new PyG class is classified, never skipped silently.

Where a layer's options change what has to be distributed (self-loops, normalisation, attention
variants, aggregations), there is one recipe per option. Classes whose constructor needs an
optional package (``pyg-lib``, ``pylibcugraphops``, ``dgNN``) that is not installed are built
with that import check bypassed (:attr:`Recipe.requires` names the package): ``convert`` can
still be asked about them, while plain PyG cannot run them here, so they can only be REFUSED.
"""
from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Optional
from unittest import mock

import torch
import torch_geometric
import torch_geometric.nn.conv as pyg_conv
from torch import Tensor
from torch.nn import Linear, ReLU, Sequential
from torch_geometric.nn import aggr as pyg_aggr
from torch_geometric.nn.conv import (
    APPNP,
    AGNNConv,
    AntiSymmetricConv,
    ARMAConv,
    CGConv,
    ChebConv,
    ClusterGCNConv,
    CuGraphGATConv,
    CuGraphRGCNConv,
    CuGraphSAGEConv,
    DirGNNConv,
    DNAConv,
    DynamicEdgeConv,
    EdgeConv,
    EGConv,
    FAConv,
    FastRGCNConv,
    FeaStConv,
    FiLMConv,
    FusedGATConv,
    GATConv,
    GatedGraphConv,
    GATv2Conv,
    GCN2Conv,
    GCNConv,
    GENConv,
    GeneralConv,
    GINConv,
    GINEConv,
    GMMConv,
    GPSConv,
    GraphConv,
    GravNetConv,
    HEATConv,
    HypergraphConv,
    LEConv,
    LGConv,
    MeshCNNConv,
    MessagePassing,
    MFConv,
    MixHopConv,
    NNConv,
    PANConv,
    PDNConv,
    PNAConv,
    PointGNNConv,
    PointNetConv,
    PointTransformerConv,
    PPFConv,
    ResGatedGraphConv,
    RGATConv,
    RGCNConv,
    SAGEConv,
    SGConv,
    SignedConv,
    SimpleConv,
    SplineConv,
    SSGConv,
    SuperGATConv,
    TAGConv,
    TransformerConv,
    WLConv,
    WLConvContinuous,
    XConv,
)
from torch_geometric.utils import add_self_loops, degree, softmax

# Sizes every recipe uses (the zoo graph in pyg_sar.testing.zoo_rank has these widths).
IN, OUT, HEADS, RELATIONS, EDGE_DIM, NODE_TYPES = 6, 5, 2, 3, 4, 2
POS_DIM = 3
NUM_CLASSES = 3


@dataclass
class Inputs:
    """What a recipe may pass to its layer: whole-graph tensors for plain PyG, the rank's own
    rows (node tensors), stored edges (edge tensors) and ``DistGraph`` for the converted layer."""

    x: Tensor  # [N, IN] float
    x_0: Tensor  # [N, IN] float (initial features of GCN2Conv / FAConv)
    edge_index: Any  # [2, E] tensor, or the rank's DistGraph
    edge_weight: Tensor  # [E] float, positive
    edge_attr: Tensor  # [E, EDGE_DIM] float
    edge_type: Tensor  # [E] int64 in [0, RELATIONS)
    pos: Tensor  # [N, POS_DIM] float
    normal: Tensor  # [N, POS_DIM] float
    node_type: Tensor  # [N] int64 in [0, NODE_TYPES)
    y: Tensor  # [N] int64 in [0, NUM_CLASSES)
    train_mask: Tensor  # [N] bool

    @property
    def num_nodes(self) -> int:
        return self.x.size(0)


@dataclass(frozen=True)
class GraphInfo:
    """Whole-graph facts some constructors take (identical on every rank)."""

    num_nodes: int
    deg_histogram: Tensor  # histogram of in-degrees (PNA's ``deg``)


Call = Callable[[torch.nn.Module, Inputs], Tensor]


@dataclass(frozen=True)
class Recipe:
    """One configuration of one class: how to build it and how to call it.

    Attributes:
        name: unique id (``Class`` or ``Class[option]``), used as the test id.
        cls: the class under test; a refusal must name it.
        build: returns the module (parameters initialised from torch's global RNG); takes a
            :class:`GraphInfo` when ``needs_graph``.
        call: runs the module on :class:`Inputs` and returns a node-level tensor.
        options: the options in words, for the README table.
        train: module mode during the comparison (``False``: ``module.eval()``).
        requires: the optional package plain PyG needs to build/run the class, when missing
            here the class is built with that check bypassed.
        table: ``"conv"`` (a class of ``torch_geometric.nn.conv``) or ``"model"``.
        needs_graph: ``build`` takes the :class:`GraphInfo` of the whole graph.
    """

    name: str
    cls: type
    build: Callable[..., torch.nn.Module]
    call: Call
    options: str = ""
    train: bool = True
    requires: Optional[str] = None
    table: str = "conv"
    needs_graph: bool = False

    def make(self, graph: GraphInfo) -> torch.nn.Module:
        """A fresh module of this recipe."""
        return self.build(graph) if self.needs_graph else self.build()

    def refusal_names(self, module: torch.nn.Module) -> tuple[str, ...]:
        """Class names of which a refusal of ``module`` must name at least one: the class
        under test for a layer; for a model, the model's class or that of any PyG module in
        it (the refusal names the layer that cannot run, e.g. ``GraphNorm`` inside ``GCN``)."""
        names: tuple[str, ...] = (self.cls.__name__,)
        if self.table == "model":
            names += tuple(sorted({type(m).__name__ for m in module.modules()
                                   if type(m).__module__.startswith("torch_geometric.")}))
        return names


# ---- calls ---------------------------------------------------------------------------------

def _x(m, d: Inputs):
    return m(d.x, d.edge_index)


def x_sorted(m, d: Inputs):
    """``m(x, edge_index)`` with a Tensor ``edge_index`` sorted by destination, as PyG's
    LSTM aggregation needs (a DistGraph's blocks are by destination already)."""
    edge_index = d.edge_index
    if isinstance(edge_index, Tensor):
        edge_index = edge_index[:, torch.argsort(edge_index[1], stable=True)]
    return m(d.x, edge_index)


def _xw(m, d: Inputs):
    return m(d.x, d.edge_index, d.edge_weight)


def _xa(m, d: Inputs):
    return m(d.x, d.edge_index, d.edge_attr)


def _xt(m, d: Inputs):
    return m(d.x, d.edge_index, d.edge_type)


def _x_x0_w(m, d: Inputs):
    return m(d.x, d.x_0, d.edge_index, d.edge_weight)


def _x_x0(m, d: Inputs):
    return m(d.x, d.x_0, d.edge_index)


def _x_pos(m, d: Inputs):
    return m(d.x, d.pos, d.edge_index)


def _mlp(i: int, o: int) -> torch.nn.Module:
    return Sequential(Linear(i, 8), ReLU(), Linear(8, o))


def _rgat(**kwargs) -> RGATConv:
    layer = RGATConv(IN, OUT, RELATIONS, heads=HEADS, **kwargs)
    # PyG's reset_parameters discards torch.full(l2.size(), 1 / out) and leaves l2 (used by
    # mod='scaled') as torch.empty memory, which differs between processes: set it as meant.
    with torch.no_grad():
        layer.l2.fill_(1.0 / layer.out_channels)
    return layer


# ---- building classes whose optional package is missing ------------------------------------

def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@contextlib.contextmanager
def _without_check(package: str) -> Iterator[None]:
    """Bypass the constructor's check for a missing optional ``package``."""
    with contextlib.ExitStack() as stack:
        if package == "pyg-lib":
            stack.enter_context(mock.patch.object(torch_geometric.typing, "WITH_KNN", True))
            stack.enter_context(mock.patch(
                "torch_geometric.nn.conv.spline_conv.spline_basis", object()))
        elif package == "pylibcugraphops":
            stack.enter_context(mock.patch(
                "torch_geometric.nn.conv.cugraph.base.HAS_PYLIBCUGRAPHOPS", True))
        elif package == "dgNN":
            ops = types.ModuleType("dgNN.operators")
            ops.GATConvFuse = None
            stack.enter_context(mock.patch.dict(
                sys.modules, {"dgNN": types.ModuleType("dgNN"), "dgNN.operators": ops}))
        yield


_AVAILABLE = {
    "torch-sparse": lambda: bool(torch_geometric.typing.WITH_TORCH_SPARSE),
    "pyg-lib": lambda: bool(torch_geometric.typing.WITH_KNN),
    "pylibcugraphops": lambda: _has("pylibcugraphops"),
    "dgNN": lambda: _has("dgNN"),
}


def _needs(package: str, make: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        if _AVAILABLE[package]():
            return make()
        with _without_check(package):
            return make()
    return build


def package_available(package: Optional[str]) -> bool:
    """Whether ``package`` (a :attr:`Recipe.requires` value) is installed here."""
    return package is None or _AVAILABLE[package]()


# ---- user layers (the rule must hold for classes convert has never seen) -------------------

class UserWeightedSumConv(MessagePassing):
    """A user layer: sum of ``x_j`` scaled by the edge weight (a linear message)."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(aggr="add")
        self.lin = Linear(in_channels, out_channels)

    def forward(self, x, edge_index, edge_weight):
        return self.propagate(edge_index, x=self.lin(x), edge_weight=edge_weight)

    def message(self, x_j, edge_weight):
        return x_j * edge_weight.view(-1, 1)


class UserSoftmaxConv(MessagePassing):
    """A user layer with a softmax over each node's in-edges inside ``message``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(aggr="add")
        self.lin = Linear(in_channels, out_channels)
        self.att = Linear(2 * out_channels, 1)

    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=self.lin(x))

    def message(self, x_j, x_i, index, ptr, size_i):
        alpha = softmax(self.att(torch.cat([x_i, x_j], dim=-1)), index, ptr, size_i)
        return x_j * alpha


class UserSelfLoopConv(MessagePassing):
    """A user layer that adds self-loops to ``edge_index`` in ``forward``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(aggr="mean")
        self.lin = Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        edge_index, _ = add_self_loops(edge_index, num_nodes=x.size(0))
        return self.propagate(edge_index, x=self.lin(x))


class UserDegreeConv(MessagePassing):
    """A user layer that scales messages by the source's in-degree computed in ``forward``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(aggr="add")
        self.lin = Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        deg = degree(edge_index[1], x.size(0), dtype=x.dtype).view(-1, 1)
        return self.propagate(edge_index, x=self.lin(x), deg=deg)

    def message(self, x_j, deg_j):
        return x_j / (deg_j + 1)


# ---- the conv table -----------------------------------------------------------------------

def _r(cls: type, build: Callable[..., torch.nn.Module], call: Call = _x, options: str = "",
       suffix: str = "", **kw) -> Recipe:
    name = f"{cls.__name__}[{suffix}]" if suffix else cls.__name__
    return Recipe(name=name, cls=cls, build=build, call=call, options=options, **kw)


def _conv_recipes() -> list[Recipe]:
    r = _r
    out = [
        # User subclasses of MessagePassing stand for the base class.
        r(UserWeightedSumConv, lambda: UserWeightedSumConv(IN, OUT), _xw,
          "user layer: linear message x_j * w, sum"),
        r(UserSoftmaxConv, lambda: UserSoftmaxConv(IN, OUT), _x,
          "user layer: softmax(alpha, index, ptr, size_i) in message"),
        r(UserSelfLoopConv, lambda: UserSelfLoopConv(IN, OUT), _x,
          "user layer: add_self_loops in forward"),
        r(UserDegreeConv, lambda: UserDegreeConv(IN, OUT), _x,
          "user layer: degree(edge_index[1]) in forward"),
    ]
    for aggr, roots in (("sum", (None, "sum", "cat", "self_loop")), ("mean", (None, "self_loop")),
                        ("max", (None,))):
        for root in roots:
            out.append(r(SimpleConv, lambda a=aggr, c=root: SimpleConv(aggr=a, combine_root=c),
                         _xw, f"aggr={aggr}, combine_root={root}, edge_weight",
                         f"{aggr},{root}"))
    out += [
        r(GCNConv, lambda: GCNConv(IN, OUT), _x, "default"),
        r(GCNConv, lambda: GCNConv(IN, OUT, improved=True), _xw, "improved, edge_weight",
          "improved"),
        r(GCNConv, lambda: GCNConv(IN, OUT, add_self_loops=False), _xw,
          "add_self_loops=False, edge_weight", "no_loops"),
        r(GCNConv, lambda: GCNConv(IN, OUT, normalize=False), _xw, "normalize=False, edge_weight",
          "no_norm"),
        r(ChebConv, lambda: ChebConv(IN, OUT, K=3), _xw, "K=3, sym, edge_weight"),
        r(ChebConv, lambda: ChebConv(IN, OUT, K=3),
          lambda m, d: m(d.x, d.edge_index, d.edge_weight, lambda_max=2.0),
          "K=3, sym, lambda_max=2", "lambda_max"),
        r(ChebConv, lambda: ChebConv(IN, OUT, K=2, normalization="rw"),
          lambda m, d: m(d.x, d.edge_index, lambda_max=2.0), "K=2, rw, lambda_max=2", "rw"),
        r(ChebConv, lambda: ChebConv(IN, OUT, K=2, normalization="rw"), _xw,
          "K=2, rw, edge_weight", "rw_weighted"),
        r(ChebConv, lambda: ChebConv(IN, OUT, K=3, normalization=None), _xw,
          "K=3, L = D - A (lambda_max from the weighted degrees), edge_weight", "no_norm"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT), _x, "mean"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr="max", normalize=True), _x,
          "max, normalize", "max"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr=["mean", "max", "std"]), _x,
          "MultiAggregation mean/max/std", "multi"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr="var"), _xw, "var, edge_weight", "var"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr="sum", project=True, root_weight=False), _x,
          "sum, project, root_weight=False", "sum_project"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr="softmax"), _x, "softmax", "softmax"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr=["mean", "max"]), _x,
          "aggr=['mean', 'max'] (multi-aggregation)", "multi"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr=["mean", "median"], aggr_kwargs={
            "mode": "proj", "mode_kwargs": {"in_channels": IN, "out_channels": IN}}), _x,
          "MultiAggregation mean/median, mode='proj' (by destination chunks)", "multi_proj"),
        r(SAGEConv, lambda: SAGEConv(IN, OUT, aggr="lstm"), x_sorted,
          "lstm (edge_index sorted by destination)", "lstm"),
        r(CuGraphSAGEConv, _needs("pylibcugraphops", lambda: CuGraphSAGEConv(IN, OUT)), _x,
          "mean", requires="pylibcugraphops"),
        r(GraphConv, lambda: GraphConv(IN, OUT), _xw, "add, edge_weight"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr="mean"), _xw, "mean, edge_weight", "mean"),
        # Aggregations per-node statistics do not rebuild, independent of the messages' order:
        # run by destination chunks.
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.MedianAggregation()), _xw,
          "MedianAggregation, edge_weight", "median"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.QuantileAggregation(0.25)), _xw,
          "QuantileAggregation(0.25), edge_weight", "quantile"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.VariancePreservingAggregation()),
          _xw, "VariancePreservingAggregation, edge_weight", "var_preserving"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.AttentionalAggregation(
            Linear(IN, 1), Linear(IN, IN))), _xw, "AttentionalAggregation, edge_weight",
          "attentional"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.DeepSetsAggregation(
            Linear(IN, IN), Linear(IN, IN))), _xw, "DeepSetsAggregation, edge_weight",
          "deep_sets"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.MulAggregation()), _xw,
          "MulAggregation, edge_weight", "mul"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr=pyg_aggr.GRUAggregation(IN, IN)), x_sorted,
          "GRUAggregation (order-dependent)", "gru"),
        r(GraphConv, lambda: GraphConv(IN, OUT, aggr="max"), _x, "max", "max"),
        r(GravNetConv, _needs("pyg-lib", lambda: GravNetConv(IN, OUT, 2, 3, k=4)),
          lambda m, d: m(d.x), "k=4 (graph from features)", requires="pyg-lib"),
        r(GatedGraphConv, lambda: GatedGraphConv(IN, num_layers=2), _xw,
          "num_layers=2, edge_weight"),
        r(GatedGraphConv, lambda: GatedGraphConv(IN, num_layers=2, aggr="mean"), _x,
          "num_layers=2, mean", "mean"),
        r(ResGatedGraphConv, lambda: ResGatedGraphConv(IN, OUT, edge_dim=EDGE_DIM), _xa,
          "edge_dim"),
        r(ResGatedGraphConv, lambda: ResGatedGraphConv(IN, OUT, root_weight=False), _x,
          "root_weight=False", "no_root"),
        r(GATConv, lambda: GATConv(IN, OUT, heads=HEADS), _x, "heads=2"),
        r(GATConv, lambda: GATConv(IN, OUT, heads=HEADS, edge_dim=EDGE_DIM, concat=False), _xa,
          "heads=2, edge_dim, concat=False", "edge"),
        r(GATConv, lambda: GATConv(IN, OUT, heads=HEADS, add_self_loops=False, residual=True),
          _x, "heads=2, add_self_loops=False, residual", "no_loops"),
        r(CuGraphGATConv, _needs("pylibcugraphops", lambda: CuGraphGATConv(IN, OUT, HEADS)),
          lambda m, d: m(d.x, d.edge_index, None), "heads=2", requires="pylibcugraphops"),
        r(FusedGATConv, _needs("dgNN", lambda: FusedGATConv(IN, OUT, HEADS,
                                                            add_self_loops=False)),
          lambda m, d: m(d.x, *FusedGATConv.to_graph_format(d.edge_index,
                                                            (d.num_nodes, d.num_nodes))),
          "heads=2, add_self_loops=False (CSR/CSC input)", requires="dgNN"),
        r(GATv2Conv, lambda: GATv2Conv(IN, OUT, heads=HEADS, edge_dim=EDGE_DIM), _xa,
          "heads=2, edge_dim"),
        r(GATv2Conv, lambda: GATv2Conv(IN, OUT, heads=HEADS, share_weights=True,
                                       add_self_loops=False), _x,
          "heads=2, share_weights, add_self_loops=False", "shared"),
        r(TransformerConv, lambda: TransformerConv(IN, OUT, heads=HEADS, edge_dim=EDGE_DIM,
                                                   beta=True), _xa, "heads=2, edge_dim, beta"),
        r(TransformerConv, lambda: TransformerConv(IN, OUT, heads=HEADS, concat=False,
                                                   root_weight=False), _x,
          "heads=2, concat=False, root_weight=False", "no_root"),
        r(TransformerConv, lambda: TransformerConv(IN, OUT, heads=HEADS, aggr="mean"), _x,
          "heads=2, aggr='mean'", "mean"),
        r(AGNNConv, lambda: AGNNConv(), _x, "requires_grad=True"),
        r(AGNNConv, lambda: AGNNConv(requires_grad=False, add_self_loops=False), _x,
          "requires_grad=False, add_self_loops=False", "fixed"),
        r(TAGConv, lambda: TAGConv(IN, OUT, K=2), _xw, "K=2, edge_weight"),
        r(TAGConv, lambda: TAGConv(IN, OUT, K=2, normalize=False), _xw,
          "K=2, normalize=False, edge_weight", "no_norm"),
        r(GINConv, lambda: GINConv(_mlp(IN, OUT), train_eps=True), _x, "train_eps"),
        r(GINEConv, lambda: GINEConv(_mlp(IN, OUT), edge_dim=EDGE_DIM), _xa, "edge_dim"),
        r(ARMAConv, lambda: ARMAConv(IN, OUT, num_stacks=2, num_layers=2), _xw,
          "2 stacks, 2 layers, edge_weight"),
        r(ARMAConv, lambda: ARMAConv(IN, OUT, num_stacks=2, num_layers=2, shared_weights=True),
          _x, "2 stacks, 2 layers, shared_weights", "shared"),
        r(SGConv, lambda: SGConv(IN, OUT, K=2), _xw, "K=2, edge_weight"),
        r(SGConv, lambda: SGConv(IN, OUT, K=2, add_self_loops=False), _x,
          "K=2, add_self_loops=False", "no_loops"),
        r(SSGConv, lambda: SSGConv(IN, OUT, alpha=0.1, K=2), _xw, "alpha=0.1, K=2, edge_weight"),
        r(APPNP, lambda: APPNP(K=3, alpha=0.1), _xw, "K=3, edge_weight"),
        r(APPNP, lambda: APPNP(K=3, alpha=0.1, add_self_loops=False), _xw,
          "K=3, add_self_loops=False, edge_weight", "no_loops"),
        r(APPNP, lambda: APPNP(K=3, alpha=0.1, normalize=False), _xw,
          "K=3, normalize=False, edge_weight", "no_norm"),
        r(MFConv, lambda: MFConv(IN, OUT, max_degree=5), _x, "max_degree=5"),
        r(RGCNConv, lambda: RGCNConv(IN, OUT, RELATIONS), _xt, "3 relations, mean"),
        r(RGCNConv, lambda: RGCNConv(IN, OUT, RELATIONS, num_bases=2, aggr="add"), _xt,
          "3 relations, num_bases=2, add", "bases"),
        r(RGCNConv, lambda: RGCNConv(IN, 4, RELATIONS, num_blocks=2), _xt,
          "3 relations, num_blocks=2 (out 4)", "blocks"),
        r(FastRGCNConv, lambda: FastRGCNConv(IN, OUT, RELATIONS), _xt, "3 relations, mean"),
        r(FastRGCNConv, lambda: FastRGCNConv(IN, OUT, RELATIONS, num_bases=2, aggr="add"), _xt,
          "3 relations, num_bases=2, add", "bases"),
        r(FastRGCNConv, lambda: FastRGCNConv(IN, 4, RELATIONS, num_blocks=2), _xt,
          "3 relations, num_blocks=2, mean (out 4)", "blocks"),
        r(CuGraphRGCNConv, _needs("pylibcugraphops",
                                  lambda: CuGraphRGCNConv(IN, OUT, RELATIONS)), _xt,
          "3 relations", requires="pylibcugraphops"),
    ]
    rgat = {
        "": ({}, "heads=2, across-relation, additive-self-attention"),
        "within": ({"attention_mechanism": "within-relation"}, "heads=2, within-relation"),
        "multiplicative": ({"attention_mode": "multiplicative-self-attention"},
                           "heads=2, multiplicative-self-attention"),
        "mod_additive": ({"mod": "additive"}, "heads=2, mod=additive"),
        "mod_f_scaled": ({"mod": "f-scaled"}, "heads=2, mod=f-scaled"),
        "mod_scaled": ({"mod": "scaled"}, "heads=2, mod=scaled"),
        "mod_f_additive": ({"mod": "f-additive"}, "heads=2, mod=f-additive"),
        "multiplicative_scaled": ({"attention_mode": "multiplicative-self-attention",
                                   "mod": "scaled"}, "heads=2, multiplicative, mod=scaled"),
        "within_multiplicative_f_scaled": (
            {"attention_mechanism": "within-relation", "mod": "f-scaled",
             "attention_mode": "multiplicative-self-attention"},
            "heads=2, within-relation, multiplicative, mod=f-scaled"),
        "bases_concat": ({"num_bases": 2, "concat": False}, "heads=2, num_bases=2, concat=False"),
    }
    for suffix, (kw, text) in rgat.items():
        out.append(r(RGATConv, lambda kw=kw: _rgat(**kw),
                     _xt, text, suffix))
    out += [
        r(RGATConv, lambda: RGATConv(IN, OUT, RELATIONS, heads=HEADS, edge_dim=EDGE_DIM),
          lambda m, d: m(d.x, d.edge_index, d.edge_type, d.edge_attr),
          "heads=2, edge_dim", "edge"),
        r(RGATConv, lambda: _rgat(aggr="mean"), _xt, "heads=2, aggr='mean'", "mean"),
        r(SignedConv, lambda: SignedConv(IN, OUT, first_aggr=True),
          lambda m, d: m(d.x, d.edge_index, d.edge_index),
          "first_aggr=True (the graph as both positive and negative edges)"),
        r(SignedConv, lambda: SignedConv(IN // 2, OUT, first_aggr=False),
          lambda m, d: m(d.x, d.edge_index, d.edge_index),
          "first_aggr=False (the graph as both positive and negative edges)", "deep"),
        r(DNAConv, lambda: DNAConv(IN // 2, heads=1),
          lambda m, d: m(d.x.view(-1, 2, IN // 2), d.edge_index, d.edge_weight),
          "channels=3, 2 layers of history, edge_weight"),
        r(DNAConv, lambda: DNAConv(IN // 2, heads=3, groups=3, normalize=False),
          lambda m, d: m(d.x.view(-1, 2, IN // 2), d.edge_index, d.edge_weight),
          "channels=3, heads=3, groups=3, normalize=False, edge_weight", "no_norm"),
        r(PointNetConv, lambda: PointNetConv(Linear(IN + POS_DIM, OUT), Linear(OUT, OUT)),
          _x_pos, "local_nn, global_nn"),
        r(PointNetConv, lambda: PointNetConv(Linear(IN + POS_DIM, OUT), add_self_loops=False),
          _x_pos, "local_nn, add_self_loops=False", "no_loops"),
        r(GMMConv, lambda: GMMConv(IN, OUT, dim=EDGE_DIM, kernel_size=3), _xa,
          "dim=4, kernel_size=3"),
        r(GMMConv, lambda: GMMConv(IN, OUT, dim=EDGE_DIM, kernel_size=3,
                                   separate_gaussians=True, aggr="add"), _xa,
          "dim=4, kernel_size=3, separate_gaussians, add", "separate"),
        r(SplineConv, _needs("pyg-lib", lambda: SplineConv(IN, OUT, dim=EDGE_DIM,
                                                           kernel_size=3)),
          lambda m, d: m(d.x, d.edge_index, d.edge_attr.sigmoid()), "dim=4, kernel_size=3",
          requires="pyg-lib"),
        r(NNConv, lambda: NNConv(IN, OUT, Linear(EDGE_DIM, IN * OUT)), _xa, "add"),
        r(NNConv, lambda: NNConv(IN, OUT, Linear(EDGE_DIM, IN * OUT), aggr="mean",
                                 root_weight=False), _xa, "mean, root_weight=False", "mean"),
        r(CGConv, lambda: CGConv(IN, dim=EDGE_DIM), _xa, "dim=4"),
        r(CGConv, lambda: CGConv(IN, dim=EDGE_DIM, aggr="mean", batch_norm=True), _xa,
          "dim=4, mean, batch_norm", "bn"),
        r(EdgeConv, lambda: EdgeConv(_mlp(2 * IN, OUT)), _x, "max"),
        r(EdgeConv, lambda: EdgeConv(_mlp(2 * IN, OUT), aggr="mean"), _x, "mean", "mean"),
        r(DynamicEdgeConv, _needs("pyg-lib", lambda: DynamicEdgeConv(_mlp(2 * IN, OUT), k=4)),
          lambda m, d: m(d.x), "k=4 (graph from features)", requires="pyg-lib"),
        r(XConv, _needs("pyg-lib", lambda: XConv(IN, OUT, dim=POS_DIM, kernel_size=4)),
          lambda m, d: m(d.x, d.pos), "kernel_size=4 (graph from positions)",
          requires="pyg-lib"),
        r(PPFConv, lambda: PPFConv(Linear(IN + 4, OUT), Linear(OUT, OUT)),
          lambda m, d: m(d.x, d.pos, d.normal, d.edge_index), "local_nn, global_nn"),
        r(FeaStConv, lambda: FeaStConv(IN, OUT, heads=HEADS), _x, "heads=2"),
        r(FeaStConv, lambda: FeaStConv(IN, OUT, heads=HEADS, add_self_loops=False), _x,
          "heads=2, add_self_loops=False", "no_loops"),
        r(PointTransformerConv, lambda: PointTransformerConv(IN, OUT), _x_pos, "default"),
        r(PointTransformerConv, lambda: PointTransformerConv(
            IN, OUT, attn_nn=Linear(OUT, OUT), add_self_loops=False), _x_pos,
          "attn_nn, add_self_loops=False", "no_loops"),
        r(PointTransformerConv, lambda: PointTransformerConv(IN, OUT, aggr="max"), _x_pos,
          "aggr='max'", "max"),
        r(HypergraphConv, lambda: HypergraphConv(IN, OUT), _x,
          "edges read as node-hyperedge incidences"),
        r(LEConv, lambda: LEConv(IN, OUT), _xw, "edge_weight"),
        r(PNAConv, lambda g: _pna(g, simple=False), lambda m, d: m(d.x, d.edge_index, d.edge_attr),
          "mean/min/max/std, identity/amplification/attenuation, edge_dim", needs_graph=True),
        r(PNAConv, lambda g: _pna(g, simple=True), _x, "mean/max, identity", "simple",
          needs_graph=True),
        r(PNAConv, lambda g: PNAConv(IN, OUT, ["softmax", "median"], ["identity", "linear"],
                                     g.deg_histogram), _x,
          "softmax/median, identity/linear (by destination chunks)", "softmax_median",
          needs_graph=True),
        r(ClusterGCNConv, lambda: ClusterGCNConv(IN, OUT), _x, "default"),
        r(ClusterGCNConv, lambda: ClusterGCNConv(IN, OUT, diag_lambda=0.1), _x,
          "diag_lambda=0.1", "diag"),
        r(GENConv, lambda: GENConv(IN, OUT, learn_t=True, edge_dim=EDGE_DIM), _xa,
          "softmax, learn_t, edge_dim"),
        r(GENConv, lambda: GENConv(IN, OUT, aggr="mean", msg_norm=True, num_layers=2), _x,
          "mean, msg_norm, 2 MLP layers", "mean_msg_norm"),
        r(GENConv, lambda: GENConv(IN, OUT, aggr="powermean", learn_p=True), _x,
          "powermean, learn_p", "powermean"),
        r(GCN2Conv, lambda: GCN2Conv(IN, alpha=0.1, theta=0.5, layer=1), _x_x0_w,
          "alpha, theta, edge_weight"),
        r(GCN2Conv, lambda: GCN2Conv(IN, alpha=0.1, theta=0.5, layer=2, shared_weights=False,
                                     add_self_loops=False), _x_x0_w,
          "shared_weights=False, add_self_loops=False, edge_weight", "no_loops"),
        r(GCN2Conv, lambda: GCN2Conv(IN, alpha=0.1, normalize=False), _x_x0_w,
          "normalize=False, edge_weight", "no_norm"),
        r(PANConv, lambda: PANConv(IN, OUT, filter_size=2), lambda m, d: _x(m, d)[0],
          "filter_size=2", requires="torch-sparse"),
        r(WLConv, lambda: WLConv(), lambda m, d: m(d.node_type, d.edge_index),
          "node types as colours"),
        r(WLConvContinuous, lambda: WLConvContinuous(), _xw, "edge_weight"),
        r(WLConvContinuous, lambda: WLConvContinuous(), _x, "unweighted", "unweighted"),
        r(FiLMConv, lambda: FiLMConv(IN, OUT, num_relations=RELATIONS), _xt, "3 relations"),
        r(FiLMConv, lambda: FiLMConv(IN, OUT), _x, "1 relation", "single"),
        r(SuperGATConv, lambda: SuperGATConv(IN, OUT, heads=HEADS), _x,
          "MX, heads=2 (eval: attention only)", "MX", train=False),
        r(SuperGATConv, lambda: SuperGATConv(IN, OUT, heads=HEADS, attention_type="SD"), _x,
          "SD, heads=2 (eval: attention only)", "SD", train=False),
        r(SuperGATConv, lambda: SuperGATConv(IN, OUT, heads=HEADS), _x,
          "MX, heads=2, training (output; attention loss: tests/link)", "MX_train"),
        r(SuperGATConv, lambda: SuperGATConv(IN, OUT, heads=HEADS, aggr="mean"), _x,
          "MX, heads=2, aggr='mean', training", "mean_train"),
        r(FAConv, lambda: FAConv(IN, eps=0.1), _x_x0, "eps=0.1"),
        r(FAConv, lambda: FAConv(IN, eps=0.1, normalize=False, add_self_loops=False), _x_x0_w,
          "normalize=False, add_self_loops=False, edge_weight", "no_norm"),
        r(EGConv, lambda: EGConv(IN, 8, num_heads=HEADS, num_bases=2), _x,
          "symnorm, heads=2, bases=2 (out 8)"),
        r(EGConv, lambda: EGConv(IN, 8, aggregators=["sum", "mean", "max"], num_heads=HEADS,
                                 num_bases=2, add_self_loops=False), _x,
          "sum/mean/max, add_self_loops=False (out 8)", "multi"),
        r(EGConv, lambda: EGConv(IN, 8, aggregators=["std", "symnorm"], num_heads=HEADS,
                                 num_bases=2), _x, "std/symnorm, heads=2, bases=2 (out 8)",
          "std_symnorm"),
        r(EGConv, lambda: EGConv(IN, 8, aggregators=["var", "min"], num_heads=HEADS,
                                 num_bases=2), _x, "var/min, heads=2, bases=2 (out 8)",
          "var_min"),
        r(PDNConv, lambda: PDNConv(IN, OUT, edge_dim=EDGE_DIM, hidden_channels=4), _xa,
          "edge_dim"),
        r(PDNConv, lambda: PDNConv(IN, OUT, edge_dim=EDGE_DIM, hidden_channels=4,
                                   normalize=False, add_self_loops=False), _xa,
          "edge_dim, normalize=False, add_self_loops=False", "no_norm"),
        r(GeneralConv, lambda: GeneralConv(IN, OUT, in_edge_channels=EDGE_DIM), _xa,
          "edge channels, no attention"),
        r(GeneralConv, lambda: GeneralConv(IN, OUT, in_edge_channels=EDGE_DIM, heads=HEADS,
                                           attention=True), _xa,
          "edge channels, additive attention, heads=2", "additive"),
        r(GeneralConv, lambda: GeneralConv(IN, OUT, heads=HEADS, attention=True,
                                           attention_type="dot_product"), _x,
          "dot-product attention, heads=2", "dot"),
        r(GeneralConv, lambda: GeneralConv(IN, OUT, directed_msg=False, skip_linear=True,
                                           l2_normalize=True, aggr="mean"), _x,
          "undirected messages, skip_linear, l2_normalize, mean", "undirected"),
        r(HEATConv, lambda: HEATConv(IN, OUT, NODE_TYPES, RELATIONS, 4, EDGE_DIM, 4,
                                     heads=HEADS),
          lambda m, d: m(d.x, d.edge_index, d.node_type, d.edge_type, d.edge_attr),
          "2 node types, 3 edge types, edge_dim, heads=2"),
        r(LGConv, lambda: LGConv(), _xw, "normalize, edge_weight"),
        r(LGConv, lambda: LGConv(normalize=False), _xw, "normalize=False, edge_weight",
          "no_norm"),
        r(PointGNNConv, lambda: PointGNNConv(Linear(IN, POS_DIM), Linear(IN + POS_DIM, IN),
                                             Linear(IN, IN)), _x_pos, "linear mlps"),
        r(GPSConv, lambda: GPSConv(IN, GINConv(_mlp(IN, IN)), heads=HEADS), _x,
          "GINConv + multi-head global attention, batch norm"),
        r(GPSConv, lambda: GPSConv(IN, GINConv(_mlp(IN, IN)), heads=1, norm=None), _x,
          "GINConv + single-head global attention, no norm", "heads1_no_norm"),
        r(GPSConv, lambda: GPSConv(IN, None, heads=HEADS), _x,
          "no local conv, multi-head global attention, batch norm", "no_conv"),
        r(GPSConv, lambda: GPSConv(IN, GINConv(_mlp(IN, IN)), heads=HEADS,
                                   attn_kwargs={"dropout": 0.5}), _x,
          "GINConv + multi-head attention with dropout 0.5 (eval)", "attn_dropout_eval",
          train=False),
        r(GPSConv, lambda: GPSConv(IN, GINConv(_mlp(IN, IN)), heads=HEADS,
                                   attn_type="performer", attn_kwargs={"head_channels": 4}),
          _x, "GINConv + Performer (linear) attention, 4 channels per head, batch norm",
          "performer"),
        r(GPSConv, lambda: GPSConv(IN, GINConv(_mlp(IN, IN)), heads=HEADS,
                                   attn_kwargs={"add_bias_kv": True}), _x,
          "multi-head attention with add_bias_kv (keys and values beyond the nodes)",
          "add_bias_kv"),
        r(GPSConv, lambda: GPSConv(IN, GINConv(_mlp(IN, IN)), heads=HEADS,
                                   attn_kwargs={"add_zero_attn": True}), _x,
          "multi-head attention with add_zero_attn (a zero key and value beyond the nodes)",
          "add_zero_attn"),
        r(AntiSymmetricConv, lambda: AntiSymmetricConv(IN, num_iters=2), _x,
          "phi=GCNConv (default), num_iters=2"),
        r(DirGNNConv, lambda: DirGNNConv(GCNConv(IN, OUT)), _x, "GCNConv, alpha=0.5"),
        r(DirGNNConv, lambda: DirGNNConv(SAGEConv(IN, OUT), alpha=0.3, root_weight=False), _x,
          "SAGEConv, alpha=0.3, root_weight=False", "sage"),
        r(DirGNNConv, lambda: DirGNNConv(GATConv(IN, OUT)), _x,
          "GATConv (attention over the reversed graph too)", "gat"),
        r(DirGNNConv, lambda: DirGNNConv(ChebConv(IN, OUT, K=2)), _x,
          "ChebConv (out-degrees of the reversed graph)", "cheb"),
        r(MixHopConv, lambda: MixHopConv(IN, OUT, powers=[0, 1, 2]), _xw,
          "powers 0, 1, 2, edge_weight"),
        r(MixHopConv, lambda: MixHopConv(IN, OUT, powers=[1, 2], add_self_loops=False), _x,
          "powers 1, 2, add_self_loops=False", "no_loops"),
        r(MeshCNNConv, lambda: MeshCNNConv(IN, OUT), _x,
          "mesh edge adjacency (edges read as the 4-neighbour list)"),
    ]
    return out


def _pna(graph: GraphInfo, simple: bool) -> PNAConv:
    if simple:
        return PNAConv(IN, OUT, ["mean", "max"], ["identity"], graph.deg_histogram)
    return PNAConv(IN, OUT, ["mean", "min", "max", "std"],
                   ["identity", "amplification", "attenuation"], graph.deg_histogram,
                   edge_dim=EDGE_DIM)


CONV_RECIPES: tuple[Recipe, ...] = tuple(_conv_recipes())


def unclassified_classes(recipes: tuple[Recipe, ...] = CONV_RECIPES) -> list[str]:
    """Names in ``torch_geometric.nn.conv.__all__`` that no recipe covers.

    ``MessagePassing`` itself is covered by the user subclasses (a class the integration has
    never seen); every other exported class needs a recipe of its own, here or (the classes for
    dicts of node and edge types: HeteroConv, HGTConv, HANConv) in
    :mod:`pyg_sar.testing.zoo_hetero_recipes`.
    """
    from pyg_sar.testing.zoo_hetero_recipes import HETERO_RECIPES

    # Classes for dicts of node and edge types are in the heterogeneous zoo.
    covered = {rec.cls.__name__ for rec in recipes + HETERO_RECIPES}
    if any(rec.cls.__module__ == __name__ and issubclass(rec.cls, MessagePassing)
           for rec in recipes):
        covered.add("MessagePassing")
    return [name for name in pyg_conv.__all__ if name not in covered]
