"""Everything pyg_sar knows about PyG layer classes, in one table.

A PyG class runs over a :class:`~pyg_sar.graph.DistGraph` only if it is listed in
:data:`VERIFIED`, with the adapter that makes it exact; the layer zoo test
(``tests/zoo``) checks every listed class against single-process PyG at P = 1 and P = 3 in
every mode, and checks that every other class exported by ``torch_geometric.nn.conv`` is
refused. An adapter names the *family* of the class's graph preprocessing
(:mod:`pyg_sar.nn.adapters.families`), how its messages run (the layer's own ``message`` per block,
one of the attention programs with an online softmax, or its own ``message`` and ``aggregate``
by destination chunks), and the options of the class that are not exact (refused with the
reason). Classes known to be inexact carry their reason in
:data:`REFUSED`.

User classes (defined outside ``torch_geometric``) that subclass ``MessagePassing`` directly
are accepted by a conservative static rule (:func:`static_rule_violation`), or when listed in
``SARConfig.trusted_layers``.
"""
from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import torch_geometric.nn.conv as pyg_conv
from torch_geometric.nn.conv import MessagePassing
from torch_geometric.nn.models import LabelPropagation
from torch_geometric.nn.models.linkx import SparseLinear

from pyg_sar.nn import global_attention, super_gat
from pyg_sar.nn.adapters import (
    aggregation,
    attention_modules,
    families,
    hetero_attention,
    labels,
    laplacian,
    linear_attention,
)
from pyg_sar.nn.adapters.families import Prepare
from pyg_sar.nn.adapters.sage import sage_forward
from pyg_sar.nn.conversion import custom_aggregate, forwards

# The classes below, PASSTHROUGH_MODULES and MODULE_FORWARDS are run on any torch_geometric
# release whose code of them is the code the zoo verified (pyg_sar.nn.fingerprints, checked by
# convert); a class whose code changed is refused, naming the function that changed.


# What a layer's message computes, as far as the engine needs to know.
MESSAGE = "message"  # the layer's own message, block by block
ATTENTION = "attention"  # GAT / GATv2 / Transformer programs (online softmax over blocks)

# Methods whose override changes what a layer computes.
BEHAVIOUR = ("forward", "message", "aggregate", "update", "edge_update",
             "message_and_aggregate", "propagate", "edge_updater")


@dataclass(frozen=True)
class Adapter:
    """How pyg_sar runs one verified PyG class exactly.

    Attributes:
        family: the family of graph preprocessing, for messages and docs.
        prepare: what the class's ``forward`` does to a Tensor ``edge_index`` before
            ``propagate``, done over the DistGraph.
        kind: :data:`MESSAGE` or :data:`ATTENTION`.
        linear_weight: the message is ``x_j`` scaled by this propagate argument (``""``:
            unscaled); with a sum or mean it runs the fused gather-aggregate kernel. ``None``:
            not linear.
        forward: replaces the class's ``forward`` (same results; e.g. GraphSAGE projecting
            first).
        refuse: returns why an instance's options are not exact, or ``None``.
        per_destination: ``message`` normalises over a node's in-edges (PyG's ``softmax``
            over ``index``): the layer runs by destination chunks, each with all of its
            nodes' in-edges, so its own ``message`` and ``aggregate`` run unchanged
            (:mod:`pyg_sar.core.dst_chunks`).
        methods: other methods of the converted class, ``(name, function)`` pairs (e.g.
            SuperGATConv's ``get_attention_loss``, global over a DistGraph).
        node_table: the ``propagate`` argument that is a table with one row per node of the
            whole graph (original ids; LINKX's ``SparseLinear`` weight): the converted
            ``propagate`` hands the engine the rank's own rows of it.
        stacked_rows: ``propagate`` takes node features stacked as ``[K, num_nodes, F]``
            (``node_dim=-2``) and a message that is linear and row-wise: the converted
            ``propagate`` runs them as ``[num_nodes, K * F]`` (ARMAConv's stacks).
        aggregate: the class's own ``aggregate`` as a combine rule across blocks
            (:mod:`pyg_sar.nn.conversion.custom_aggregate`; EGConv, FastRGCNConv), used instead of
            the layer's aggregation module; ``None``: the class aggregates with its module.
    """

    family: str = "plain"
    prepare: Prepare = families.stored
    kind: str = MESSAGE
    linear_weight: Optional[str] = None
    forward: Optional[Callable] = None
    refuse: Optional[Callable[[MessagePassing], Optional[str]]] = None
    per_destination: families.Option = False
    methods: tuple[tuple[str, Callable], ...] = ()
    aggregate: Optional[custom_aggregate.CustomAggregate] = None
    stacked_rows: bool = False
    node_table: Optional[str] = None

    def __reduce_ex__(self, protocol: int) -> tuple:
        # A verified class's adapter holds closures (its preparation, its refusals): it is
        # pickled as a reference to the class's entry in VERIFIED.
        for cls, adapter in VERIFIED.items():
            if adapter is self:
                return verified_entry, (cls,)
        return super().__reduce_ex__(protocol)


def verified_entry(cls: type) -> Adapter:
    """The adapter :data:`VERIFIED` holds for ``cls`` (how a pickled adapter is loaded)."""
    adapter = VERIFIED.get(cls)
    if adapter is None:
        raise ValueError(f"pyg_sar: a pickled model has a layer converted as {cls.__name__}, "
                         f"which this pyg_sar does not verify; pyg_sar.unconvert(model) "
                         f"before saving makes a model that loads without pyg_sar")
    return adapter


def _when(cond: Callable[[MessagePassing], bool], reason: str):
    def check(layer: MessagePassing) -> Optional[str]:
        return reason if cond(layer) else None
    return check


def _gcn_family(normalize="normalize", add_loops="add_self_loops", improved=False,
                refuse=None, linear_weight: Optional[str] = "edge_weight") -> Adapter:
    return Adapter("gcn_norm", families.gcn_norm(normalize, add_loops, improved),
                   linear_weight=linear_weight, refuse=refuse)


_C = pyg_conv
VERIFIED: dict[type, Adapter] = {
    _C.SAGEConv: Adapter(linear_weight="", forward=sage_forward),
    _C.GraphConv: Adapter(linear_weight="edge_weight"),
    _C.GINConv: Adapter(linear_weight=""),
    _C.GINEConv: Adapter(),
    _C.EdgeConv: Adapter(),
    _C.GCNConv: _gcn_family(improved="improved"),
    _C.GATConv: Adapter("self_loops", kind=ATTENTION,
                        forward=forwards.without_attention_weights()),
    _C.GATv2Conv: Adapter("self_loops", kind=ATTENTION,
                          forward=forwards.without_attention_weights()),
    _C.TransformerConv: Adapter("softmax_in_message", per_destination=True,
                                forward=forwards.without_attention_weights()),
    # Multi-hop and propagation-only layers: GCN normalisation, one SAR propagate per hop.
    _C.APPNP: _gcn_family(refuse=_when(
        lambda layer: layer.dropout > 0,
        "APPNP(dropout > 0) drops edge weights in forward, which pyg_sar does not replay")),
    _C.SGConv: _gcn_family(normalize=True),
    _C.SSGConv: _gcn_family(normalize=True),
    _C.TAGConv: _gcn_family(add_loops=False),
    _C.LGConv: _gcn_family(add_loops=False),
    _C.GCN2Conv: _gcn_family(),
    _C.MixHopConv: _gcn_family(normalize=True),
    _C.PDNConv: _gcn_family(),
    _C.ClusterGCNConv: Adapter(
        "cluster_gcn_norm", families.cluster_gcn_norm, linear_weight="edge_weight",
        forward=families.cluster_gcn_forward, refuse=_when(
            lambda layer: not layer.add_self_loops,
            "ClusterGCNConv(add_self_loops=False) adds diag_lambda to exactly one self-loop "
            "per node, which PyG itself fails on for other graphs")),
    # Softmax over a node's in-edges inside message: run by destination chunks.
    _C.AGNNConv: Adapter("self_loops+softmax_in_message", families.self_loops("add_self_loops"),
                         per_destination=True),
    _C.GeneralConv: Adapter("softmax_in_message (attention=True)",
                            per_destination="attention"),
    _C.HEATConv: Adapter("softmax_in_message", per_destination=True),
    # Heterogeneous attention (pyg_sar.nn.adapters.hetero_attention): HGT's one softmax over the
    # in-edges of all edge types runs over the edge types' graphs combined into one bipartite
    # DistGraph; HAN's semantic attention averages over all ranks' nodes of a type.
    _C.HGTConv: Adapter("softmax_in_message (all edge types combined)",
                        per_destination=True, forward=hetero_attention.hgt_forward),
    _C.HANConv: Adapter("softmax_in_message + global semantic mean", per_destination=True,
                        forward=hetero_attention.han_forward),
    _C.PointTransformerConv: Adapter("self_loops+softmax_in_message",
                                     families.self_loops("add_self_loops"),
                                     per_destination=True),
    # Messages of the layer's own code over the stored graph, no preprocessing in forward.
    _C.NNConv: Adapter(),
    _C.CGConv: Adapter(),
    _C.GMMConv: Adapter(),
    _C.ResGatedGraphConv: Adapter(),
    _C.GatedGraphConv: Adapter(linear_weight="edge_weight"),
    _C.LEConv: Adapter(),
    _C.GENConv: Adapter(),
    _C.PointGNNConv: Adapter(),
    _C.DNAConv: _gcn_family(linear_weight=None),
    # Point-cloud convolutions that add self-loops.
    _C.PointNetConv: Adapter("self_loops", families.self_loops("add_self_loops")),
    _C.PPFConv: Adapter("self_loops", families.self_loops("add_self_loops")),
    _C.FeaStConv: Adapter("self_loops", families.self_loops("add_self_loops")),
    _C.SimpleConv: Adapter("added_self_loops",
                           families.added_self_loops("combine_root", "edge_weight"),
                           linear_weight="edge_weight"),
    # Scaled Laplacian (out-degrees summed by the ranks storing a node's out-edges, a global
    # lambda_max): ChebConv's own __norm__ replaced, the rest of its forward PyG's.
    _C.ChebConv: Adapter("scaled_laplacian", families.self_loops(True), linear_weight="norm",
                         methods=(("__norm__", laplacian.cheb_norm),)),
    # Normalised by the weighted in-degree, graph[1] (local).
    _C.WLConvContinuous: Adapter("degree(edge_index[1])", linear_weight="edge_weight"),
    # DegreeScalerAggregation: per-node sums, sums of squares, max/min, the in-degree
    # (pyg_sar.nn.adapters.aggregation); other aggregators are refused by the layer check.
    _C.PNAConv: Adapter("degree_scaler"),
    # ARMAConv propagates [num_stacks, num_nodes, channels] (node_dim=-2): PyG's forward, its
    # propagate run on the stacks side by side in the channels (a linear, row-wise message),
    # fused kernel path.
    _C.ARMAConv: Adapter("gcn_norm (no self-loops), stacks as channels",
                         families.gcn_norm(True, False), linear_weight="edge_weight",
                         stacked_rows=True),
    # Their own aggregate as one combine rule (pyg_sar.nn.conversion.custom_aggregate): EGConv's
    # aggregators as per-node statistics over its gcn_norm / self-loop graph.
    _C.EGConv: Adapter("gcn_norm (symnorm) or self_loops; aggregators as statistics",
                       custom_aggregate.EG.prepare, aggregate=custom_aggregate.EG),
    # FastRGCNConv's mean: 1 / (in-edges of the destination with the edge's relation), summed;
    # featureless input (x=None) as RGCNConv's, its edge_index_j the sources' original ids.
    _C.FastRGCNConv: Adapter(
        "per-(node, relation) mean as weights", aggregate=custom_aggregate.FAST_RGCN,
        forward=forwards.featureless_node_ids(_C.FastRGCNConv.__dict__["forward"],
                                              "FastRGCNConv"),
        refuse=_when(lambda layer: layer.aggr not in ("add", "sum", "mean"),
                     "FastRGCNConv aggregates with add, sum or mean only (PyG asserts it)")),
    # MessagePassing classes of torch_geometric.nn.models.
    LabelPropagation: Adapter("gcn_norm without self-loops when unweighted",
                              labels.gcn_norm_if_unweighted(), linear_weight="edge_weight",
                              forward=labels.label_propagation_forward),
    # PyG's forward hands propagate the whole weight, one row per node of the graph: the
    # converted propagate hands the engine the rank's own nodes' rows (Adapter.node_table).
    SparseLinear: Adapter("node-indexed weight (LINKX)", linear_weight="edge_weight",
                          node_table="weight"),
    # Layers that index edge_index in forward: a DistGraph runs exactly the edge_index
    # operations that are exact on a partition (graph[:, mask], graph[1]; pyg_sar.graph).
    _C.RGCNConv: Adapter("masked_edge_index", linear_weight="", forward=(
        forwards.featureless_node_ids(forwards.pyg_forward(
            _C.RGCNConv, masked_edge_index=forwards.dist_masked_edge_index(
                pyg_conv.rgcn_conv.masked_edge_index)), "RGCNConv"))),
    _C.FiLMConv: Adapter("masked_edge_index"),
    _C.MFConv: Adapter("degree(edge_index[1])", linear_weight="", forward=forwards.pyg_forward(
        _C.MFConv, Tensor=forwards.TENSOR_OR_DIST_GRAPH)),
    _C.FAConv: Adapter("gcn_norm", families.gcn_norm("normalize", "add_self_loops"),
                       forward=forwards.without_attention_weights()),
    _C.RGATConv: Adapter("softmax_in_message", per_destination=True,
                         forward=forwards.without_attention_weights("_alpha")),
    _C.SuperGATConv: Adapter(
        "self_loops+softmax_in_message (attention loss with given negatives)",
        families.self_loops("add_self_loops"),
        per_destination=True, forward=super_gat.supergat_forward,
        methods=(("get_attention_loss", super_gat.supergat_attention_loss),)),
}


# Classes the engine cannot run at all, so that SARConfig(trusted_layers=...) cannot override
# the refusal either: class -> reason (naming what is supported instead). None today: ARMAConv,
# which propagates [num_stacks, num_nodes, channels] tensors, runs them as channels
# (Adapter.stacked_rows); any other layer that hands propagate a tensor with its nodes outside
# dimension 0 is refused there with NODES_IN_DIM_0 (pyg_sar.nn.conversion.propagate).
NODES_IN_DIM_0 = ("pyg_sar exchanges and aggregates node rows in dimension 0 only, so "
                  "SARConfig(trusted_layers=...) cannot make it run; supported: layers whose "
                  "propagate arguments are [num_nodes, ...] tensors, e.g. the verified "
                  "multi-hop layers TAGConv, SGConv, APPNP and GCN2Conv, and "
                  "ARMAConv (pyg_sar propagates its stacks as channels)")
STRUCTURAL: dict[type, str] = {}


def structural_refusal(cls: type) -> Optional[str]:
    """Why ``cls`` (or the PyG class it derives from) cannot run at all, or ``None``."""
    return next((STRUCTURAL[k] for k in cls.__mro__ if k in STRUCTURAL), None)


# Why known classes cannot be exact (or are not yet verified); the class name is added.
REFUSED: dict[str, str] = {
    "DynamicEdgeConv": "it builds a k-NN graph from the features in forward (a dynamic graph)",
    "GravNetConv": "it builds a k-NN graph from the features in forward (a dynamic graph)",
    "XConv": "it builds a k-NN graph from the positions in forward (a dynamic graph)",
    "CuGraphSAGEConv": "cugraph-ops layers need CUDA graphs of their own format",
    "CuGraphGATConv": "cugraph-ops layers need CUDA graphs of their own format",
    "CuGraphRGCNConv": "cugraph-ops layers need CUDA graphs of their own format",
    "FusedGATConv": "it needs a CSR/CSC graph built for dgNN's fused kernels",
    "HypergraphConv": "it propagates over hyperedges (incidence lists), not over a graph",
    "WLConv": "it hashes neighbourhoods in forward (not differentiable, not decomposable)",
    "MeshCNNConv": "it convolves over mesh edges, not over a graph's nodes",
}


# PyG modules that are not MessagePassing layers and pass edge_index through to their
# children unchanged (or never see it); every other module of torch_geometric is refused.
PASSTHROUGH_MODULES = frozenset({
    "torch_geometric.nn.models.basic_gnn.GCN", "torch_geometric.nn.models.basic_gnn.GraphSAGE",
    "torch_geometric.nn.models.basic_gnn.GIN", "torch_geometric.nn.models.basic_gnn.GAT",
    "torch_geometric.nn.models.basic_gnn.PNA", "torch_geometric.nn.models.basic_gnn.EdgeCNN",
    "torch_geometric.nn.models.mlp.MLP", "torch_geometric.nn.models.jumping_knowledge."
    "JumpingKnowledge",
    # JumpingKnowledge per node type over dicts of node features (never sees a graph).
    "torch_geometric.nn.models.jumping_knowledge.HeteroJumpingKnowledge",
    "torch_geometric.nn.models.deepgcn.DeepGCNLayer",
    "torch_geometric.nn.dense.linear.Linear", "torch_geometric.nn.dense.linear.HeteroLinear",
    "torch_geometric.nn.dense.linear.HeteroDictLinear",
    # to_hetero_with_bases: its basis convs run over the typed graph of the partition's
    # DistGraphs with their per-edge-type weights in message (pyg_sar.nn.adapters.hetero_bases); its
    # input alignment is a Linear per type.
    "torch_geometric.nn.to_hetero_with_bases_transformer.HeteroBasisConv",
    "torch_geometric.nn.to_hetero_with_bases_transformer.LinearAlign",
    # Heterogeneous models: HeteroConv hands each edge type's DistGraph (bipartite between two
    # node types) to its own checked conv and combines the outputs per destination node, a
    # node-wise operation; to_hetero's copies of modules live in PyG's ModuleDict.
    "torch_geometric.nn.conv.hetero_conv.HeteroConv",
    "torch_geometric.nn.module_dict.ModuleDict",
    "torch_geometric.nn.parameter_dict.ParameterDict",
    "torch_geometric.utils._trim_to_layer.TrimToLayer",  # acts only on sampled subgraphs
    # Node-wise pieces inside verified layers.
    "torch_geometric.nn.conv.gen_conv.MLP", "torch_geometric.nn.conv.dna_conv.MultiHead",
    "torch_geometric.nn.conv.dna_conv.Linear",
    # Wrappers that hand the graph to their own (checked) convs; DirGNNConv also hands them
    # its reverse, edge_index.flip([0]) (DistGraph.flip, pyg_sar.partition.reverse).
    "torch_geometric.nn.conv.dir_gnn_conv.DirGNNConv",
    "torch_geometric.nn.conv.antisymmetric_conv.AntiSymmetricConv",
    # Models whose forward hands the graph only to checked layers (LINKX: SparseLinear; PMLP:
    # SimpleConv; RECT_L: GCNConv; GroupAddRev: its convs, re-run in backward;
    # CorrectAndSmooth: two LabelPropagation, see MODULE_OPTIONS) or never sees it (MaskLabel).
    "torch_geometric.nn.models.linkx.LINKX", "torch_geometric.nn.models.pmlp.PMLP",
    "torch_geometric.nn.models.rect.RECT_L", "torch_geometric.nn.models.mask_label.MaskLabel",
    "torch_geometric.nn.models.rev_gnn.GroupAddRev",
    "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth",
    # Its embedding table is sharded by owner rank and its pair methods gather the pairs'
    # ends (pyg_sar.nn.lightgcn); LGConv is checked as a layer.
    "torch_geometric.nn.models.lightgcn.LightGCN",
    # Its summary runs on the global node mean, its corruption permutes all nodes and its
    # loss and test are global (pyg_sar.nn.infomax); the encoder is checked as usual.
    "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax",
    # Graph auto-encoders: forward / encode run the encoder (checked layers); the pair
    # methods gather the pairs' ends and the losses and metrics are global
    # (pyg_sar.nn.autoencoder); the decoder scores the gathered rows, renumbered.
    "torch_geometric.nn.models.autoencoder.GAE", "torch_geometric.nn.models.autoencoder.VGAE",
    "torch_geometric.nn.models.autoencoder.ARGA", "torch_geometric.nn.models.autoencoder.ARGVA",
    "torch_geometric.nn.models.autoencoder.InnerProductDecoder",
    # SGFormer's GNN branch: GCNConvs and batch norms, node-wise in between.
    "torch_geometric.nn.models.sgformer.GraphModule",
    # SGFormer: its global branch is an SGModule (MODULE_FORWARDS), its GNN branch the
    # GraphModule above, combined row by row.
    "torch_geometric.nn.models.sgformer.SGFormer",
})
# Namespaces whose modules are checked elsewhere: norms (convert), aggregations (the layer).
CHECKED_ELSEWHERE = ("torch_geometric.nn.norm.", "torch_geometric.nn.aggr.")
# Of those, the ones whose PyG code pyg_sar replaces or relies on, verified by content as the
# modules above: the aggregations the engine rebuilds from per-node statistics or runs as an
# online softmax (pyg_sar.nn.adapters.aggregation), the batch norms whose statistics it takes
# over all ranks (pyg_sar.nn.norm; PyG's BatchNorm runs, around torch's BatchNorm1d that
# convert replaces) and the node-wise norms that run as PyG wrote them.
VERIFIED_SUBMODULES = frozenset({
    "torch_geometric.nn.aggr.basic.SumAggregation",
    "torch_geometric.nn.aggr.basic.MeanAggregation",
    "torch_geometric.nn.aggr.basic.MaxAggregation",
    "torch_geometric.nn.aggr.basic.MinAggregation",
    "torch_geometric.nn.aggr.basic.VarAggregation",
    "torch_geometric.nn.aggr.basic.StdAggregation",
    "torch_geometric.nn.aggr.basic.SoftmaxAggregation",
    "torch_geometric.nn.aggr.multi.MultiAggregation",
    "torch_geometric.nn.aggr.scaler.DegreeScalerAggregation",
    "torch_geometric.nn.norm.batch_norm.BatchNorm",
    "torch_geometric.nn.norm.batch_norm.HeteroBatchNorm",
    "torch_geometric.nn.norm.layer_norm.LayerNorm",
    "torch_geometric.nn.norm.layer_norm.HeteroLayerNorm",
    "torch_geometric.nn.norm.msg_norm.MessageNorm",
    # run as PyG wrote them by destination chunks: verified not to depend on message order
    *(f"{cls.__module__}.{cls.__qualname__}" for cls in aggregation.ORDER_INVARIANT),
})
MODULE_REFUSED = {
    "AttentiveFP": "its graph-level readout pools every node of a graph (global_add_pool and "
                   "a GRU over the batch)",
    "GraphUNet": "pooling coarsens the whole graph",
}
# PyG modules that are not MessagePassing layers whose forward pyg_sar replaces (their work
# spans every node of the graph): class path -> the replacement, with the signature of the
# class's forward (the module first), run when the call is over a DistGraph (an argument, or
# the one the converted model was called with: pyg_sar.nn.module_forwards.graph_of); PyG's
# own forward runs for a plain edge_index. Applied by pyg_sar.convert
# (module_forwards.convert_module_forwards); options that stay inexact go in MODULE_OPTIONS.
MODULE_FORWARDS: dict[str, Callable] = {
    # Linear global attention: sums over all nodes added over ranks
    # (nn/adapters/linear_attention.py).
    "torch_geometric.nn.models.sgformer.SGModule": attention_modules.sgmodule,
    "torch_geometric.nn.models.polynormer.Polynormer": linear_attention.polynormer_forward,
    "torch_geometric.nn.attention.sgformer.SGFormerAttention":
        attention_modules.sgformer_attention,
    "torch_geometric.nn.attention.polynormer.PolynormerAttention":
        attention_modules.polynormer_attention,
    "torch_geometric.nn.attention.performer.PerformerAttention":
        attention_modules.performer_attention,
    "torch_geometric.nn.attention.performer.PerformerProjection":
        attention_modules.performer_projection,
    # Softmax global attention: keys and values walked around the ranks (nn/global_attention.py).
    "torch_geometric.nn.conv.gps_conv.GPSConv": global_attention.gps_forward,
}
# Options of pass-through modules that are not exact: module -> reason, or None.
MODULE_OPTIONS = {
    "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth": _when(
        lambda module: module.autoscale,
        "CorrectAndSmooth(autoscale=True): correct() scales the error by sigma = "
        "error[mask].abs().sum() / numel, a statistic of the training nodes of the whole graph "
        "that it would compute on one rank's nodes; use autoscale=False (a fixed scale)"),
    "torch_geometric.nn.conv.gps_conv.GPSConv": global_attention.gps_refusal,
}


def module_refusal(module) -> Optional[str]:
    """Why a non-MessagePassing module of torch_geometric is refused, or ``None``."""
    cls = type(module)
    path = f"{cls.__module__}.{cls.__qualname__}"
    verified = (path in PASSTHROUGH_MODULES or path in MODULE_FORWARDS
                or path in VERIFIED_SUBMODULES)
    if verified or cls.__module__.startswith(CHECKED_ELSEWHERE):
        if verified:
            from pyg_sar.nn.conversion import (
                fingerprint_check as fingerprints,  # verified by content
            )
            changed = fingerprints.refusal(cls)
            if changed is not None:
                return changed
        option = MODULE_OPTIONS.get(path)
        reason = None if option is None else option(module)
        return None if reason is None else reason + " (SARConfig(trusted_layers=...) overrides)"
    from torch_geometric.nn import Sequential
    if issubclass(cls, Sequential):  # the user's own wiring of verified layers
        return None
    reason = MODULE_REFUSED.get(cls.__name__) or REFUSED.get(cls.__name__)
    return (reason or "it is not among the PyG modules pyg_sar has verified to pass the "
            "graph through unchanged") + " (SARConfig(trusted_layers=...) overrides)"


def verified_adapter(cls: type) -> tuple[Optional[type], Optional[Adapter], list[str]]:
    """The verified PyG class ``cls`` is or derives from, its adapter, and the behaviour
    methods ``cls`` overrides on the way (which void the verification)."""
    for base in cls.__mro__:
        adapter = VERIFIED.get(base)
        if adapter is not None:
            overridden = []
            for klass in cls.__mro__[:cls.__mro__.index(base)]:
                overridden += [m for m in BEHAVIOUR if m in klass.__dict__
                               and not _generated_by_pyg(klass, m)]
            return base, adapter, sorted(set(overridden))
    return None, None, []


def _generated_by_pyg(klass: type, name: str) -> bool:
    """PyG compiles ``propagate``/``edge_updater`` per class from templates at first use."""
    compiled = klass.__dict__.get(f"_jinja_{name}")
    return compiled is not None and klass.__dict__.get(name) is compiled


# Graph utilities that PyG layers apply to ``edge_index`` (or per-edge softmax/scatter over
# ``index``); a user's layer that touches them is not run without ``trusted_layers``.
GRAPH_UTILITIES = frozenset({
    "add_self_loops", "add_remaining_self_loops", "remove_self_loops", "segregate_self_loops",
    "gcn_norm", "degree", "softmax", "scatter", "scatter_add", "scatter_mean", "scatter_max",
    "segment", "segment_csr", "spmm", "get_laplacian", "to_undirected", "is_undirected",
    "dropout_edge", "dropout_adj", "dropout_node", "sort_edge_index", "coalesce",
    "to_dense_adj", "to_edge_index", "maybe_num_nodes", "subgraph", "k_hop_subgraph",
    "contains_self_loops", "index_sort", "SparseTensor", "is_torch_sparse_tensor",
    "set_sparse_value", "torch_sparse", "knn", "knn_graph", "radius_graph", "fill_diag",
})
# Message arguments that expose the graph structure.
STRUCTURE_ARGS = frozenset({"index", "ptr", "size_i", "size_j", "dim_size", "edge_index_i",
                            "edge_index_j", "size", "edge_index", "adj_t"})
# The destination side of it: exact when the layer runs by destination chunks, which give
# ``message`` every in-edge of a chunk's nodes at once (pyg_sar.core.dst_chunks).
DESTINATION_ARGS = frozenset({"index", "ptr", "size_i", "dim_size", "edge_index_i"})
# Graph utilities that reduce over ``index`` (a node's in-edges): exact inside ``message`` of a
# layer run by destination chunks. (A class's own ``aggregate`` is refused by the static rule;
# a trusted one runs by destination chunks through its LayerSpec.aggr.)
PER_DESTINATION_UTILITIES = frozenset({"softmax", "scatter", "scatter_add", "scatter_mean",
                                       "scatter_max", "segment", "segment_csr", "degree",
                                       "maybe_num_nodes"})


def _names(code: types.CodeType) -> set[str]:
    # Globals and attributes, and names from enclosing scopes (a class defined in a function).
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _own_methods(cls: type):
    """``(class, name, code)`` of every function the user's classes in ``cls``'s MRO define
    (their own code, not PyG's)."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("torch_geometric") or klass is object:
            continue
        for name, member in vars(klass).items():
            func = getattr(member, "__func__", member)
            code = getattr(func, "__code__", None)
            # PyG's propagate/collect compiled for the class live in a module of their own.
            if code is not None and getattr(func, "__module__", None) == klass.__module__:
                yield klass, name, code


def runs_per_destination(cls: type, layer: MessagePassing) -> bool:
    """Whether a user's layer reads the destination structure in ``message`` (``index``,
    ``size_i``, ...) or reduces over it there (``softmax``, ``scatter``, ...): it then runs by
    destination chunks, each with every in-edge of its nodes (:mod:`pyg_sar.core.dst_chunks`),
    which makes those exact. (A trusted class's own ``aggregate`` runs so through
    :data:`pyg_sar.nn.layers.PER_DESTINATION`.)"""
    if set(layer.inspector.get_param_names("message")) & DESTINATION_ARGS:
        return True
    return any(name == "message" and _names(code) & PER_DESTINATION_UTILITIES
               for _, name, code in _own_methods(cls))


def static_rule_violation(cls: type, layer: MessagePassing) -> Optional[str]:
    """Why a user's MessagePassing class may not be exact, or ``None`` if the rule admits it.

    The rule: ``message`` takes no source-side structure argument (``size_j``,
    ``edge_index_j``, ``edge_index``, ...) and ``update`` none at all, the class has no
    ``aggregate`` of its own (``trusted_layers`` runs one), and no method of the class
    (its own code, not PyG's) calls a graph utility (``add_self_loops``, ``gcn_norm``,
    ``degree``, ``softmax``, ``scatter``, ...), except the ones reducing over a node's in-edges
    (``softmax``, ``scatter``, ``degree``, ...) inside ``message``: such layers run by
    destination chunks (:func:`runs_per_destination`).
    """
    message = set(layer.inspector.get_param_names("message"))
    structure = sorted((message & STRUCTURE_ARGS) - DESTINATION_ARGS)
    structure += sorted(set(layer.inspector.get_param_names("update")) & STRUCTURE_ARGS)
    if structure:
        return (f"its message or update takes {', '.join(structure)}, which would see only "
                f"this rank's part of the graph")
    if cls.aggregate is not MessagePassing.aggregate:
        return ("it overrides aggregate(), which pyg_sar would run over a node's in-edges in "
                "the partition's order, not the graph's (exact only if the aggregation does "
                "not depend on the order of a node's messages)")
    for klass, name, code in _own_methods(cls):
        allowed = PER_DESTINATION_UTILITIES if name == "message" else frozenset()
        used = sorted((_names(code) & GRAPH_UTILITIES) - allowed)
        if used:
            return (f"{klass.__name__}.{name} uses {', '.join(used)}, graph preprocessing "
                    f"that would see only this rank's part of the graph")
    return None
