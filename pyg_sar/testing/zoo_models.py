"""The model zoo: models of ``torch_geometric.nn.models`` run node-level on one whole graph.

Same contract as the layer zoo (:mod:`pyg_sar.testing.zoo_recipes`): every recipe is EXACT or
REFUSED. Models that work on whole graphs but not node-level (pooling, graph-wide attention,
graph-level readout) are here too: they must be refused. :data:`NOT_IN_ZOO` lists, with the
reason, the exported names that are no node-level model of one graph (link prediction, random
walks, molecules, temporal graphs, helpers); :func:`unclassified_models` reports a name in
neither, so a new PyG model is classified too.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch_geometric.nn.models as pyg_models
from torch.nn import Linear, ReLU
from torch_geometric.nn.conv import GCNConv, GENConv, SAGEConv
from torch_geometric.nn.models import (
    GAT,
    GCN,
    GIN,
    LINKX,
    MLP,
    PMLP,
    PNA,
    RECT_L,
    AttentiveFP,
    CorrectAndSmooth,
    DeepGCNLayer,
    DeepGraphInfomax,
    EdgeCNN,
    GraphSAGE,
    GraphUNet,
    GroupAddRev,
    LabelPropagation,
    LightGCN,
    MaskLabel,
    Polynormer,
    SGFormer,
)
from torch_geometric.utils import one_hot

from pyg_sar.testing.zoo_recipes import (
    CONV_RECIPES,
    EDGE_DIM,
    IN,
    NUM_CLASSES,
    OUT,
    GraphInfo,
    Inputs,
    Recipe,
    x_sorted,
)

HIDDEN = 8


class DeepGCNStack(torch.nn.Module):
    """The DeeperGCN pattern: encoder, ``DeepGCNLayer`` blocks around a conv, decoder."""

    def __init__(self, block: str, conv: str) -> None:
        super().__init__()
        self.encoder = Linear(IN, HIDDEN)
        self.layers = torch.nn.ModuleList()
        for _ in range(2):
            if conv == "gen":
                layer_conv = GENConv(HIDDEN, HIDDEN, aggr="softmax", t=1.0, learn_t=True,
                                     num_layers=2, norm="layer")
                norm = torch.nn.LayerNorm(HIDDEN)
            else:
                layer_conv = GCNConv(HIDDEN, HIDDEN)
                norm = torch.nn.BatchNorm1d(HIDDEN)
            self.layers.append(DeepGCNLayer(layer_conv, norm, ReLU(), block=block))
        self.decoder = Linear(HIDDEN, OUT)

    def forward(self, x, edge_index):
        x = self.encoder(x)
        for layer in self.layers:
            x = layer(x, edge_index)
        return self.decoder(x)


def _basic(cls: type, suffix: str, options: str, call=None, **kw) -> Recipe:
    def call_default(m, d: Inputs):
        return m(d.x, d.edge_index)
    return Recipe(name=f"{cls.__name__}[{suffix}]" if suffix else cls.__name__, cls=cls,
                  build=lambda: cls(IN, HIDDEN, num_layers=2, out_channels=OUT, **kw),
                  call=call or call_default, options=options, table="model")


def _model(cls: type, build, call, options: str, suffix: str = "", **kw) -> Recipe:
    return Recipe(name=f"{cls.__name__}[{suffix}]" if suffix else cls.__name__, cls=cls,
                  build=build, call=call, options=options, table="model", **kw)


def _weighted(m, d: Inputs):
    return m(d.x, d.edge_index, edge_weight=d.edge_weight)


def _with_attr(m, d: Inputs):
    return m(d.x, d.edge_index, edge_attr=d.edge_attr)


def _with_batch(m, d: Inputs):
    return m(d.x, d.edge_index, batch=torch.zeros(d.num_nodes, dtype=torch.long))


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """``torch.set_default_dtype(dtype)`` inside the block, restored after it."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _with_batch_input_dtype(m, d: Inputs):
    # PyG's SGFormerAttention builds torch.ones([B, N]) in the default dtype and fails on
    # float64 inputs otherwise: the default dtype follows the features (float64 in the zoo,
    # float32 for the bf16 zoo's reference; pure bf16 keeps it, and PyG fails there itself),
    # for the reference and the converted model alike.
    dtype = d.x.dtype if d.x.dtype in (torch.float32, torch.float64) else None
    with default_dtype(dtype or torch.get_default_dtype()):
        return _with_batch(m, d)


def _sgformer(**kw) -> SGFormer:
    return SGFormer(IN, HIDDEN, OUT, trans_dropout=0.0, gnn_dropout=0.0, **kw)


def _polynormer(global_attention: bool, **kw) -> Polynormer:
    model = Polynormer(IN, HIDDEN, OUT, local_layers=2, global_layers=1, in_dropout=0.0,
                       dropout=0.0, global_dropout=0.0, **kw)
    # PyG trains the local layers first and then sets _global (False by default) to add the
    # global attention.
    model._global = global_attention
    return model


def _correct_and_smooth(m, d: Inputs):
    y_soft = d.x[:, :NUM_CLASSES].softmax(dim=-1)
    mask = d.train_mask
    out = m.correct(y_soft, d.y[mask], mask, d.edge_index, d.edge_weight)
    return m.smooth(out, d.y[mask], mask, d.edge_index, d.edge_weight)


def _infomax(m, d: Inputs):
    pos_z, neg_z, summary = m(d.x, d.edge_index)
    return torch.stack([m.discriminate(pos_z, summary, sigmoid=False),
                        m.discriminate(neg_z, summary, sigmoid=False)], dim=-1)


def _mean_summary(z, *args, **kwargs):
    return z.mean(dim=0).sigmoid()


def _negate(x, edge_index):
    return -x, edge_index


def _infomax_model() -> DeepGraphInfomax:
    # Module-level functions, not lambdas: the model pickles (tests/api/test_save_load.py).
    return DeepGraphInfomax(HIDDEN, encoder=GCN(IN, HIDDEN, num_layers=1),
                            summary=_mean_summary, corruption=_negate)


def _pna(graph: GraphInfo) -> PNA:
    return PNA(IN, HIDDEN, num_layers=2, out_channels=OUT, aggregators=["mean", "max", "std"],
               scalers=["identity", "amplification"], deg=graph.deg_histogram,
               edge_dim=EDGE_DIM)


def _model_recipes() -> list[Recipe]:
    b, m = _basic, _model
    return [
        b(GCN, "", "2 layers"),
        b(GCN, "bn_jk_cat", "batch_norm, jk=cat, edge_weight", _weighted, norm="batch_norm",
          jk="cat"),
        b(GCN, "jk_lstm", "jk=lstm", jk="lstm"),
        b(GCN, "layer_norm_node", "layer_norm (mode=node), act_first", norm="layer_norm",
          norm_kwargs={"mode": "node"}, act_first=True),
        b(GCN, "layer_norm_graph", "layer_norm (mode=graph)", norm="layer_norm"),
        b(GCN, "graph_norm", "graph_norm", norm="graph_norm"),
        b(GCN, "instance_norm", "instance_norm", norm="instance_norm"),
        b(GraphSAGE, "", "mean, jk=max", jk="max"),
        b(GraphSAGE, "max_bn", "max, batch_norm", aggr="max", norm="batch_norm"),
        b(GraphSAGE, "lstm", "lstm aggregation (edge_index sorted by destination)", x_sorted,
          aggr="lstm"),
        b(GIN, "", "train_eps, jk=cat", train_eps=True, jk="cat"),
        b(GAT, "", "heads=2"),
        b(GAT, "v2_edge", "v2, heads=2, edge_dim", _with_attr, v2=True, heads=2,
          edge_dim=EDGE_DIM),
        m(PNA, _pna, _with_attr, "mean/max/std, identity/amplification, edge_dim",
          needs_graph=True),
        b(EdgeCNN, "", "max (default)"),
        m(MLP, lambda: MLP([IN, HIDDEN, OUT], norm="batch_norm"), lambda m, d: m(d.x),
          "batch_norm (no graph)"),
        m(LightGCN, lambda g: LightGCN(g.num_nodes, HIDDEN, num_layers=2),
          lambda m, d: m.get_embedding(d.edge_index, d.edge_weight),
          "get_embedding, edge_weight", needs_graph=True),
        m(LabelPropagation, lambda: LabelPropagation(num_layers=3, alpha=0.9),
          lambda m, d: m(d.y, d.edge_index, mask=d.train_mask, edge_weight=d.edge_weight),
          "3 layers, alpha=0.9, train mask, edge_weight"),
        m(LabelPropagation, lambda: LabelPropagation(num_layers=3, alpha=0.9),
          lambda m, d: m(d.y, d.edge_index, mask=d.train_mask, edge_weight=d.edge_weight,
                         post_step=lambda out: out),
          "3 layers, alpha=0.9, train mask, edge_weight, no clamping (post_step)",
          "unclamped"),
        m(LabelPropagation, lambda: LabelPropagation(num_layers=2, alpha=0.5),
          lambda m, d: m(one_hot(d.y, NUM_CLASSES, torch.float64), d.edge_index,
                         mask=d.train_mask),
          "2 layers, alpha=0.5, float64 one-hot labels, train mask, gcn_norm (no edge_weight)",
          "unweighted"),
        m(LabelPropagation, lambda: LabelPropagation(num_layers=2, alpha=0.5),
          lambda m, d: m(d.x[:, :NUM_CLASSES].softmax(dim=-1), d.edge_index),
          "2 layers, soft float64 labels, no mask, gcn_norm", "soft"),
        m(CorrectAndSmooth, lambda: CorrectAndSmooth(2, 0.8, 2, 0.8), _correct_and_smooth,
          "correct then smooth, autoscale"),
        m(CorrectAndSmooth, lambda: CorrectAndSmooth(2, 0.8, 2, 0.8, autoscale=False,
                                                     scale=0.7), _correct_and_smooth,
          "correct then smooth, fixed scale 0.7", "fixed_scale"),
        m(LINKX, lambda g: LINKX(g.num_nodes, IN, HIDDEN, OUT, num_layers=2),
          lambda m, d: m(d.x, d.edge_index, d.edge_weight), "2 layers, edge_weight",
          needs_graph=True),
        m(PMLP, lambda: PMLP(IN, HIDDEN, OUT, num_layers=2), lambda m, d: m(d.x, d.edge_index),
          "training (an MLP)", "train"),
        m(PMLP, lambda: PMLP(IN, HIDDEN, OUT, num_layers=2), lambda m, d: m(d.x, d.edge_index),
          "eval (message passing)", "eval", train=False),
        m(DeepGCNLayer, lambda: DeepGCNStack("res+", "gen"), lambda m, d: m(d.x, d.edge_index),
          "2 res+ blocks of GENConv (softmax, learn_t) + LayerNorm", "res+_gen"),
        m(DeepGCNLayer, lambda: DeepGCNStack("res", "gcn"), lambda m, d: m(d.x, d.edge_index),
          "2 res blocks of GCNConv + BatchNorm1d", "res_gcn"),
        m(RECT_L, lambda: RECT_L(IN, HIDDEN), _weighted, "edge_weight"),
        m(MaskLabel, lambda: MaskLabel(NUM_CLASSES, IN),
          lambda m, d: m(d.x, d.y, d.train_mask), "label embedding of the train nodes"),
        m(GroupAddRev, lambda: GroupAddRev(SAGEConv(IN // 2, IN // 2), num_groups=2),
          lambda m, d: m(d.x, d.edge_index), "2 groups of SAGEConv (reversible)"),
        m(DeepGraphInfomax, _infomax_model, _infomax,
          "GCN encoder, mean summary, negated features as corruption"),
        m(GraphUNet, lambda: GraphUNet(IN, HIDDEN, OUT, depth=2), lambda m, d: m(d.x,
                                                                               d.edge_index),
          "depth=2 (top-k pooling)"),
        m(AttentiveFP, lambda: AttentiveFP(IN, HIDDEN, OUT, EDGE_DIM, 2, 2),
          lambda m, d: m(d.x, d.edge_index, d.edge_attr,
                         torch.zeros(d.num_nodes, dtype=torch.long)),
          "one graph (graph-level readout)"),
        m(SGFormer, _sgformer, _with_batch_input_dtype,
          "one graph, 1 head, add (default dtype set to the features' dtype, which PyG's "
          "attention needs)"),
        m(SGFormer, lambda: _sgformer(trans_num_heads=2), _with_batch_input_dtype,
          "one graph, 2 heads, add (the same default dtype)", "heads2"),
        m(Polynormer, lambda: _polynormer(True), _with_batch,
          "one graph, global attention (_global), qk_shared=False"),
        m(Polynormer, lambda: _polynormer(True, qk_shared=True), _with_batch,
          "one graph, global attention (_global), qk_shared=True", "qk_shared"),
        m(Polynormer, lambda: _polynormer(False), _with_batch,
          "one graph, local layers only (_global=False)", "local"),
    ]


MODEL_RECIPES: tuple[Recipe, ...] = tuple(_model_recipes())

# Exported names that are no node-level model of one whole graph, with the reason.
NOT_IN_ZOO = {
    "JumpingKnowledge": "a component: covered through the jk option of the BasicGNN models",
    "HeteroJumpingKnowledge": "a component for heterogeneous graphs: in the heterogeneous zoo",
    "MetaLayer": "a container of user functions that index edge_index directly",
    "Node2Vec": "random-walk embedding, trained on sampled walks",
    "MetaPath2Vec": "random-walk embedding of heterogeneous graphs",
    "InnerProductDecoder": "link decoder (no message passing)",
    "GAE": "link-prediction wrapper (converted; tests/link/test_autoencoders.py)",
    "VGAE": "link-prediction wrapper (converted; tests/link/test_autoencoders.py)",
    "ARGA": "link-prediction wrapper (converted; tests/link/test_autoencoders.py)",
    "ARGVA": "link-prediction wrapper (converted; tests/link/test_autoencoders.py)",
    "SignedGCN": "signed link prediction over two edge sets (SignedConv is in the layer zoo)",
    "RENet": "temporal knowledge-graph model",
    "TGNMemory": "temporal memory module",
    "SchNet": "molecular model (radius graph from positions, graph-level readout)",
    "DimeNet": "molecular model (radius graph, triplets, graph-level readout)",
    "DimeNetPlusPlus": "molecular model (radius graph, triplets, graph-level readout)",
    "ViSNet": "molecular model (radius graph, graph-level readout)",
    "GNNFF": "molecular force field (radius graph, triplets)",
    "NeuralFingerprint": "graph-level molecular fingerprint",
    "GPSE": "graph-level positional-encoding model",
    "GPSENodeEncoder": "encoder of precomputed GPSE encodings (no message passing)",
    "to_captum_model": "explainability helper (a function)",
    "to_captum_input": "explainability helper (a function)",
    "captum_output_to_dicts": "explainability helper (a function)",
    "LPFormer": "link-prediction model",
    "ARLinkPredictor": "link-prediction model",
}


def unclassified_models(recipes: tuple[Recipe, ...] = MODEL_RECIPES) -> list[str]:
    """Names in ``torch_geometric.nn.models.__all__`` in neither the table nor NOT_IN_ZOO."""
    covered = {rec.cls.__name__ for rec in recipes} | set(NOT_IN_ZOO)
    return [name for name in pyg_models.__all__ if name not in covered]


def recipe_table(which: str = "all") -> dict[str, Recipe]:
    """Recipes by name: ``"conv"``, ``"model"`` or ``"all"``."""
    chosen = {"conv": CONV_RECIPES, "model": MODEL_RECIPES,
              "all": CONV_RECIPES + MODEL_RECIPES}[which]
    return {rec.name: rec for rec in chosen}
