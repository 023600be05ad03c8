"""The heterogeneous zoo's recipes: one per configuration of what ``torch_geometric.nn`` offers
for heterogeneous graphs.

A recipe builds a model (parameters from torch's global RNG, lazy ones initialised by a dry run
on the whole :class:`~torch_geometric.data.HeteroData`) and calls it on
:class:`HeteroInputs`, returning one output tensor per node type. Models take either the
dicts (``x_dict``, ``edge_index_dict``, ``edge_attr_dict``: ``HeteroConv``, ``HGTConv``,
``HANConv``, ``to_hetero``, the per-type linear and norm layers) or the typed homogeneous view
(``RGCNConv``, ``FastRGCNConv``, ``RGATConv``, ``HEATConv``, ``FiLMConv``: PyG's
``HeteroData.to_homogeneous()`` on the whole graph, ``HeteroPartition.to_homogeneous()`` on a
rank). :func:`unclassified_hetero_names` lists what ``torch_geometric.nn`` exports for
heterogeneous graphs without a recipe here or a reason in :data:`NOT_IN_HETERO_ZOO`, so a new
PyG class is noticed.
"""
from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.nn import (
    BatchNorm,
    FastRGCNConv,
    FiLMConv,
    GATConv,
    GATv2Conv,
    GINConv,
    GINEConv,
    GraphConv,
    HANConv,
    HEATConv,
    HeteroBatchNorm,
    HeteroConv,
    HeteroDictLinear,
    HeteroJumpingKnowledge,
    HeteroLayerNorm,
    HeteroLinear,
    HGTConv,
    Linear,
    RGATConv,
    RGCNConv,
    SAGEConv,
    models,
    to_hetero,
    to_hetero_with_bases,
)

NUM_NODES = {"paper": 24, "author": 16, "inst": 7}
FEATURES = {"paper": 5, "author": 4, "inst": 3}
EDGE_DIM = 3
# (edge type, number of random edges drawn, with edge_attr)
EDGE_TYPES = ((("author", "writes", "paper"), 50, True),
              (("paper", "cites", "paper"), 60, True),  # a self-relation (with self-loops)
              (("paper", "rev_writes", "author"), 45, False),
              (("inst", "employs", "author"), 18, True),
              (("author", "rev_employs", "inst"), 18, False))
HIDDEN, OUT = 6, 4


def make_hetero_graph(seed: int = 0) -> HeteroData:
    """The heterogeneous zoo graph (float64): three node types of different feature sizes, five
    edge types (source != destination type, and ``cites`` within papers with self-loops),
    duplicate-free edges, per type one node without in- or out-edges, ``edge_attr`` on three
    edge types."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for t, n in NUM_NODES.items():
        data[t].x = torch.randn(n, FEATURES[t], generator=g, dtype=torch.float64)
    for (s, r, d), e, with_attr in EDGE_TYPES:
        ei = torch.stack([torch.randint(0, NUM_NODES[s] - 1, (e,), generator=g),
                          torch.randint(0, NUM_NODES[d] - 1, (e,), generator=g)])
        if s == d:
            loops = torch.arange(0, NUM_NODES[s] - 1, 4)
            ei = torch.cat([ei, torch.stack([loops, loops])], dim=1)
        ei = torch.unique(ei, dim=1)
        data[s, r, d].edge_index = ei[:, torch.randperm(ei.shape[1], generator=g)]
        if with_attr:
            data[s, r, d].edge_attr = torch.randn(ei.shape[1], EDGE_DIM, generator=g,
                                                  dtype=torch.float64)
    return data


@dataclass
class HeteroInputs:
    """What a recipe may pass to its model: the whole graph's tensors for plain PyG, or a
    rank's rows, graphs and typed view for the converted model.

    ``edge_type`` / ``edge_pos``: per edge of the typed homogeneous graph ``graph`` (stored
    order), its edge type index and its position among that type's edges (``edge_attr_dict``
    rows); :meth:`typed_edge_attr` assembles the typed view's edge features from them.
    """

    x_dict: dict[str, Tensor]
    edge_index_dict: dict[tuple, Any]
    edge_attr_dict: dict[tuple, Tensor]
    graph: Any  # the typed homogeneous view: [2, E] tensor or DistGraph
    node_type: Tensor
    edge_type: Tensor
    edge_pos: Tensor
    edge_types: list[tuple]

    def typed_edge_attr(self) -> Tensor:
        """Edge features of the typed view: an edge type's ``edge_attr`` row, zeros for edge
        types without (differentiable in ``edge_attr_dict``)."""
        rows = [self.edge_attr_dict[et] if et in self.edge_attr_dict else
                torch.zeros(int((self.edge_type == i).sum()), EDGE_DIM, dtype=torch.float64)
                for i, et in enumerate(self.edge_types)]
        sizes = torch.tensor([0] + [r.shape[0] for r in rows]).cumsum(0)
        return torch.cat(rows)[sizes[self.edge_type] + self.edge_pos]


Call = Callable[[torch.nn.Module, HeteroInputs], dict]


@dataclass(frozen=True)
class HeteroRecipe:
    """One configuration: ``build(metadata)`` makes the model, ``call`` runs it (a dict node
    type -> output); ``cls`` is what the row names, ``options`` the configuration in words.
    ``table`` is ``"hetero"`` (for the report)."""

    name: str
    cls: Any
    build: Callable[[tuple], torch.nn.Module]
    call: Call
    options: str = ""
    train: bool = True
    requires: Optional[str] = None
    table: str = "hetero"

    def make(self, data: HeteroData) -> torch.nn.Module:
        """A fresh float64 model, lazy parameters initialised by a dry run on ``data``."""
        model = self.build(data.metadata()).double()
        with torch.no_grad():
            self.call(model, whole_inputs(data, requires_grad=False))
        return model.train(self.train)

    def refusal_names(self, module: torch.nn.Module) -> tuple[str, ...]:
        """Names a refusal must mention one of: the class under test or any PyG module in the
        model (a refusal names the piece that cannot run)."""
        return (self.cls.__name__,) + tuple(sorted(
            {type(m).__name__ for m in module.modules()
             if type(m).__module__.startswith("torch_geometric.")}))


# ---- calls -----------------------------------------------------------------------------------

def _dicts(m, d: HeteroInputs) -> dict:
    return m(d.x_dict, d.edge_index_dict)


def _dicts_attr(m, d: HeteroInputs) -> dict:
    return m(d.x_dict, d.edge_index_dict, d.edge_attr_dict)


def _typed(m, d: HeteroInputs) -> dict:
    return m(d.x_dict, d.graph, d.node_type, d.edge_type, d.typed_edge_attr())


# ---- models ----------------------------------------------------------------------------------

def _mlp(i: int, o: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(i, 8), torch.nn.ReLU(), torch.nn.Linear(8, o))


class TwoConvs(torch.nn.Module):
    """A homogeneous model for ``to_hetero``: a lazy projection, conv, optional norm, conv."""

    def __init__(self, first: torch.nn.Module, second: torch.nn.Module,
                 norm: Optional[torch.nn.Module] = None, project: bool = True) -> None:
        super().__init__()
        self.project = Linear(-1, HIDDEN) if project else None
        self.first, self.second, self.norm = first, second, norm

    def forward(self, x: Tensor, edge_index: Any) -> Tensor:
        if self.project is not None:
            x = self.project(x).relu()
        x = self.first(x, edge_index)
        if self.norm is not None:
            x = self.norm(x)
        return self.second(x.relu(), edge_index)


def _mixed_hetero_conv(aggr: Optional[str]) -> HeteroConv:
    """A different (bipartite-capable) layer per edge type, edge features where they exist."""
    return HeteroConv({
        ("author", "writes", "paper"): GINEConv(_mlp(HIDDEN, OUT), edge_dim=EDGE_DIM),
        ("paper", "cites", "paper"): GATConv(-1, OUT, heads=2, concat=False,
                                             edge_dim=EDGE_DIM),  # with self-loops
        ("paper", "rev_writes", "author"): GraphConv((-1, -1), OUT, aggr="mean"),
        ("inst", "employs", "author"): GATv2Conv((-1, -1), OUT, heads=2, concat=False,
                                                 add_self_loops=False, edge_dim=EDGE_DIM),
        ("author", "rev_employs", "inst"): SAGEConv((-1, -1), OUT, aggr="max"),
    }, aggr=aggr)


class EdgeAttrHeteroConv(torch.nn.Module):
    """A per-type projection, then a HeteroConv taking the edge types' ``edge_attr`` (those
    that have one)."""

    def __init__(self, metadata: tuple, aggr: Optional[str]) -> None:
        super().__init__()
        self.lin = HeteroDictLinear(-1, HIDDEN, types=list(metadata[0]))
        self.conv = _mixed_hetero_conv(aggr)

    def forward(self, x_dict, edge_index_dict, edge_attr_dict):
        x_dict = {t: v.tanh() for t, v in self.lin(x_dict).items()}
        return self.conv(x_dict, edge_index_dict, edge_attr_dict=edge_attr_dict)


def _sage_hetero_conv(metadata: tuple, channels: int = OUT) -> HeteroConv:
    return HeteroConv({et: SAGEConv((-1, -1), channels) for et in metadata[1]}, aggr="sum")


def _cat_types(x_dict: dict, types: list) -> tuple[Tensor, Tensor, list[int]]:
    sizes = [x_dict[t].shape[0] for t in types]
    type_vec = torch.cat([torch.full((n,), i, dtype=torch.long) for i, n in enumerate(sizes)])
    return torch.cat([x_dict[t] for t in types]), type_vec, sizes


class PerTypeThenConv(torch.nn.Module):
    """``HeteroDictLinear`` to a common width, then optionally a layer on the concatenated
    rows with their type vector (HeteroLinear / HeteroBatchNorm / HeteroLayerNorm), then a
    HeteroConv of SAGEConv per edge type."""

    def __init__(self, metadata: tuple, typed: Optional[torch.nn.Module] = None) -> None:
        super().__init__()
        self.types = list(metadata[0])
        self.lin = HeteroDictLinear(-1, HIDDEN, types=self.types)
        self.typed = typed
        self.conv = _sage_hetero_conv(metadata)

    def forward(self, x_dict, edge_index_dict):
        x_dict = self.lin(x_dict)
        if self.typed is not None:
            x, type_vec, sizes = _cat_types(x_dict, self.types)
            x_dict = dict(zip(self.types, self.typed(x, type_vec).split(sizes)))
        return self.conv({t: v.relu() for t, v in x_dict.items()}, edge_index_dict)


class JumpingKnowledgeModel(torch.nn.Module):
    """Two HeteroConv layers, their outputs combined per node type by HeteroJumpingKnowledge."""

    def __init__(self, metadata: tuple, mode: str) -> None:
        super().__init__()
        self.convs = torch.nn.ModuleList(
            [_sage_hetero_conv(metadata, HIDDEN), _sage_hetero_conv(metadata, HIDDEN)])
        kwargs = {"channels": HIDDEN, "num_layers": 2} if mode == "lstm" else {}
        self.jk = HeteroJumpingKnowledge(list(metadata[0]), mode, **kwargs)

    def forward(self, x_dict, edge_index_dict):
        layers: dict[str, list] = {t: [] for t in x_dict}
        for conv in self.convs:
            x_dict = {t: v.relu() for t, v in conv(x_dict, edge_index_dict).items()}
            for t, v in x_dict.items():
                layers[t].append(v)
        return self.jk(layers)


class OnTypedGraph(torch.nn.Module):
    """Per-type projection to a common width, concatenated in node type order (the typed
    homogeneous view's order), one layer taking node and/or edge types, split back per type."""

    def __init__(self, metadata: tuple, conv: torch.nn.Module, takes: str) -> None:
        super().__init__()
        self.types = list(metadata[0])
        self.lin = HeteroDictLinear(-1, HIDDEN, types=self.types)
        self.conv, self.takes = conv, takes

    def forward(self, x_dict, graph, node_type, edge_type, edge_attr):
        x, _, sizes = _cat_types(self.lin(x_dict), self.types)
        if self.takes == "edge_type":
            out = self.conv(x, graph, edge_type)
        elif self.takes == "edge_type+attr":
            out = self.conv(x, graph, edge_type, edge_attr)
        else:  # HEATConv
            out = self.conv(x, graph, node_type, edge_type, edge_attr)
        return dict(zip(self.types, out.split(sizes)))


def whole_inputs(data: HeteroData, requires_grad: bool = True) -> HeteroInputs:
    """Fresh (leaf) tensors of the whole HeteroData, with PyG's typed homogeneous view."""
    def leaf(t: Tensor) -> Tensor:
        return t.clone().requires_grad_(requires_grad)

    homo = data.to_homogeneous(node_attrs=[], edge_attrs=[])
    edge_type = homo.edge_type
    counts = torch.bincount(edge_type, minlength=len(data.edge_types))
    starts = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)[:-1]])
    pos = torch.arange(edge_type.numel()) - starts[edge_type]
    return HeteroInputs(
        x_dict={t: leaf(v) for t, v in data.x_dict.items()},
        edge_index_dict=dict(data.edge_index_dict),
        edge_attr_dict={et: leaf(v) for et, v in data.edge_attr_dict.items()},
        graph=homo.edge_index, node_type=homo.node_type, edge_type=edge_type, edge_pos=pos,
        edge_types=list(data.edge_types))


# ---- the recipes -----------------------------------------------------------------------------

_TO_HETERO = {
    "GraphSAGE": lambda: TwoConvs(SAGEConv((-1, -1), HIDDEN), SAGEConv((-1, -1), OUT)),
    "GAT": lambda: TwoConvs(GATConv((-1, -1), 3, heads=2, add_self_loops=False),
                            GATConv((-1, -1), OUT, heads=2, concat=False,
                                    add_self_loops=False)),
    "GraphConv": lambda: TwoConvs(GraphConv((-1, -1), HIDDEN), GraphConv((-1, -1), OUT,
                                                                       aggr="max")),
    "GIN": lambda: TwoConvs(GINConv(_mlp(HIDDEN, HIDDEN), train_eps=True),
                            GINConv(_mlp(HIDDEN, OUT))),
    # PyG's own models (torch_geometric.nn.models, BasicGNN) as users pass them to to_hetero
    "models.GraphSAGE": lambda: models.GraphSAGE((-1, -1), HIDDEN, 2, OUT, jk="cat"),
    "models.GAT": lambda: models.GAT((-1, -1), HIDDEN, 2, OUT, heads=2, v2=True,
                                     add_self_loops=False),
}
_TO_HETERO_OPTIONS = {"models.GraphSAGE": "torch_geometric.nn.models.GraphSAGE, 2 layers, jk=cat",
                      "models.GAT": "torch_geometric.nn.models.GAT, v2, heads=2, 2 layers"}
_TYPED = {
    "RGCNConv": (RGCNConv, lambda n: RGCNConv(HIDDEN, OUT, n), "edge_type", "mean"),
    "RGCNConv[bases]": (RGCNConv, lambda n: RGCNConv(HIDDEN, OUT, n, num_bases=2, aggr="add"),
                        "edge_type", "num_bases=2, aggr=add"),
    "RGCNConv[blocks]": (RGCNConv, lambda n: RGCNConv(HIDDEN, HIDDEN, n, num_blocks=2),
                         "edge_type", "num_blocks=2"),
    "FastRGCNConv": (FastRGCNConv, lambda n: FastRGCNConv(HIDDEN, OUT, n), "edge_type",
                     "mean"),
    "RGATConv": (RGATConv, lambda n: RGATConv(HIDDEN, OUT, n, heads=2), "edge_type",
                 "across-relation attention, heads=2"),
    "RGATConv[edge_dim]": (RGATConv, lambda n: RGATConv(HIDDEN, OUT, n, heads=2,
                                                         attention_mechanism="within-relation",
                                                         edge_dim=EDGE_DIM),
                           "edge_type+attr", "within-relation attention, edge_dim, heads=2"),
    "FiLMConv": (FiLMConv, lambda n: FiLMConv(HIDDEN, OUT, num_relations=n), "edge_type",
                 "one FiLM per edge type"),
    "HEATConv": (HEATConv, lambda n: HEATConv(HIDDEN, OUT, len(NUM_NODES), n, 3, EDGE_DIM, 3,
                                              heads=2), "heat", "edge_dim, heads=2"),
}
_TYPED_NOTE = "on the typed homogeneous view (to_homogeneous()), "


def _recipe(name: str, cls: Any, build: Callable[[tuple], torch.nn.Module], call: Call,
            options: str) -> HeteroRecipe:
    return HeteroRecipe(name, cls, build, call, options)


def _hetero_recipes() -> list[HeteroRecipe]:
    out = []
    for aggr in ("sum", "mean", "min", "max", "cat", None):
        out.append(_recipe(f"HeteroConv[{aggr}]", HeteroConv,
                           lambda md, a=aggr: EdgeAttrHeteroConv(md, a), _dicts_attr,
                           f"aggr={aggr}: GINEConv (edge_attr), GATConv (edge_attr, "
                           f"self-relation with self-loops), GraphConv, GATv2Conv (edge_attr), "
                           f"SAGEConv(max)"))
    # Every aggr across edge types with GraphSAGE; the other layers with one aggr each (the
    # combination across edge types is to_hetero's, the same for every layer).
    for homo, aggr in (("GraphSAGE", "sum"), ("GraphSAGE", "mean"), ("models.GraphSAGE", "max"),
                       ("GAT", "max"), ("models.GAT", "sum"), ("GraphConv", "mean"),
                       ("GIN", "sum")):
        what = _TO_HETERO_OPTIONS.get(homo, f"{homo}-like (two layers)")
        out.append(_recipe(f"to_hetero[{homo},{aggr}]", to_hetero,
                           lambda md, mk=_TO_HETERO[homo], a=aggr: to_hetero(mk(), md, aggr=a),
                           _dicts, f"{what}, aggr={aggr}"))
    out.append(_recipe("to_hetero[GraphSAGE+BatchNorm,sum]", to_hetero,
                       lambda md: to_hetero(TwoConvs(SAGEConv((-1, -1), HIDDEN),
                                                     SAGEConv((-1, -1), OUT),
                                                     norm=BatchNorm(HIDDEN)), md, aggr="sum"),
                       _dicts, "GraphSAGE-like with BatchNorm per node type, aggr=sum"))
    out.append(_recipe("to_hetero_with_bases", to_hetero_with_bases,
                       lambda md: to_hetero_with_bases(
                           TwoConvs(SAGEConv(HIDDEN, HIDDEN), SAGEConv(HIDDEN, OUT),
                                    project=False), md, num_bases=2,
                           in_channels={"x": HIDDEN}),
                       _dicts, "GraphSAGE-like, num_bases=2"))
    out.append(_recipe("HGTConv", HGTConv, lambda md: HGTConv(-1, 8, md, heads=2), _dicts,
                       "all node and edge types, heads=2"))
    out.append(_recipe("HANConv", HANConv, lambda md: HANConv(-1, 8, md, heads=2), _dicts,
                       "all node and edge types (metapaths = edge types), heads=2"))
    for name, (cls, make, takes, options) in _TYPED.items():
        out.append(_recipe(name, cls,
                           lambda md, mk=make, tk=takes: OnTypedGraph(md, mk(len(md[1])), tk),
                           _typed, _TYPED_NOTE + options))
    out.append(_recipe("HeteroDictLinear", HeteroDictLinear,
                       lambda md: PerTypeThenConv(md), _dicts,
                       "per node type (lazy), then HeteroConv(SAGEConv)"))
    n_types = len(NUM_NODES)
    for name, cls, make, options in (
            ("HeteroLinear", HeteroLinear, lambda: HeteroLinear(HIDDEN, HIDDEN, n_types),
             "on the concatenated node types"),
            ("HeteroBatchNorm", HeteroBatchNorm, lambda: HeteroBatchNorm(HIDDEN, n_types),
             "statistics per node type"),
            ("HeteroLayerNorm", HeteroLayerNorm, lambda: HeteroLayerNorm(HIDDEN, n_types),
             "mode=node")):
        out.append(_recipe(name, cls, lambda md, mk=make: PerTypeThenConv(md, mk()), _dicts,
                           options + ", between HeteroDictLinear and HeteroConv(SAGEConv)"))
    for mode in ("cat", "max", "lstm"):
        out.append(_recipe(f"HeteroJumpingKnowledge[{mode}]", HeteroJumpingKnowledge,
                           lambda md, m=mode: JumpingKnowledgeModel(md, m), _dicts,
                           f"mode={mode}, over two HeteroConv(SAGEConv) layers"))
    return out


HETERO_RECIPES: tuple[HeteroRecipe, ...] = tuple(_hetero_recipes())

# What torch_geometric.nn exports for heterogeneous graphs that is no node-level model of one
# whole graph, with the reason it has no recipe here.
NOT_IN_HETERO_ZOO = {
    "CuGraphRGCNConv": "needs pylibcugraphops (CUDA); classified in the layer zoo",
    "MetaPath2Vec": "random-walk embedding trained on sampled metapath walks",
    "KGEModel": "knowledge-graph embedding base class (scores (head, relation, tail) triplets, "
                "no message passing)",
    "TransE": "knowledge-graph embedding (triplet scores, no message passing)",
    "ComplEx": "knowledge-graph embedding (triplet scores, no message passing)",
    "DistMult": "knowledge-graph embedding (triplet scores, no message passing)",
    "RotatE": "knowledge-graph embedding (triplet scores, no message passing)",
}
_NAMESPACES = ("torch_geometric.nn", "torch_geometric.nn.conv", "torch_geometric.nn.models",
               "torch_geometric.nn.norm", "torch_geometric.nn.dense", "torch_geometric.nn.aggr",
               "torch_geometric.nn.pool", "torch_geometric.nn.kge")
# Constructor arguments that mark a class as one for typed or heterogeneous graphs.
_HETERO_ARGS = {"metadata", "num_relations", "num_node_types", "num_edge_types", "num_types",
                "types", "edge_index_dict", "metapath"}


def hetero_names() -> list[str]:
    """Names ``torch_geometric.nn`` exports for heterogeneous graphs: "hetero" in the name,
    or a class whose constructor takes metadata, relation / node / edge type counts or
    metapaths."""
    found: dict[str, None] = {}
    for module_name in _NAMESPACES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            hit = "hetero" in name.lower()
            if inspect.isclass(obj):
                try:
                    params = set(inspect.signature(obj.__init__).parameters)
                except (TypeError, ValueError):
                    params = set()
                hit = hit or bool(params & _HETERO_ARGS)
            if hit:
                found[name] = None
    return list(found)


def unclassified_hetero_names(recipes: tuple[HeteroRecipe, ...] = HETERO_RECIPES
                              ) -> list[str]:
    """Heterogeneous names of ``torch_geometric.nn`` neither in a recipe nor in
    :data:`NOT_IN_HETERO_ZOO`."""
    covered = {rec.cls.__name__ for rec in recipes} | set(NOT_IN_HETERO_ZOO)
    return [name for name in hetero_names() if name not in covered]
