"""``to_hetero_with_bases`` over a partition: PyG's typed homogeneous graph made of DistGraphs.

PyG's ``to_hetero_with_bases(model, metadata, num_bases, ...)`` rewrites the model's ``fx``
graph: the node dicts are concatenated per node type in metadata order
(``group_node_placeholder``), the edge dicts become one homogeneous ``edge_index`` by adding
node-type offsets (``group_edge_placeholder``) with an ``edge_type`` vector (``get_edge_type``),
and every message-passing layer becomes a ``HeteroBasisConv``: ``num_bases`` copies of the conv,
each weighting every message by ``edge_type_weight[edge_type]`` through a message forward hook,
summed. The output is split back per node type by the rank's local row counts.

Over a partition two things change, and nothing else:

* **The grouped graph.** :func:`convert` points the rewritten graph's edge functions at the
  ones below. Given a dict of per-edge-type DistGraphs they return one homogeneous DistGraph
  over all node types (:func:`typed_graph`) whose local rows are exactly the concatenation of
  the rank's rows of each node type in the model's metadata order (what
  ``group_node_placeholder`` makes of ``part.x_dict``), and ``edge_type`` in that graph's
  stored edge order. Built from the per-type graphs alone, without communication: a remote
  block from rank ``s`` is the concatenation of every edge type's block from ``s`` (rows and
  local columns shifted by the node types' local starts, remote columns by the edge types'
  recv counts before it), ordered by destination, then edge type, then the edge type's stored
  order; the send list to rank ``q`` is the concatenation of every edge type's send list. A
  row sent for two edge types is sent twice (the same values; gradients of both copies are
  added at the owner), which keeps the view a pure function of the per-type graphs. Its remote
  blocks carry no source in-degrees (source-degree normalisations are refused, as on a
  bipartite graph). With plain tensors (the unpartitioned model) PyG's own functions run.
* **The per-edge weight.** pyg_sar computes a layer's messages block by block, where PyG's
  message hook would not see the whole edge list. :func:`prepare_bases` replaces the hook of
  every basis conv by a ``message`` that takes the edge types as one more edge argument
  (``sar_basis_edge_type``, sliced per block by the engine like an ``edge_weight``) and scales
  the conv's own message by ``edge_type_weight[edge_type]`` exactly as the hook did; a
  propagate pre-hook supplies that argument over a DistGraph in modes ``sar`` / ``sa``. In mode
  ``halo`` (PyG's propagate over the halo graph, in stored edge order) and over a plain
  ``edge_index`` the message reads the whole vector the ``HeteroBasisConv`` set
  (``conv._edge_type``), as the hook did. The fused linear path (which never calls
  ``message``) is switched off for these convs (:func:`basis_convs`); ``edge_type_weight`` is a
  parameter used inside ``message``, so SAR recomputes its gradient like any other.

Edge-level tensor dicts (``edge_weight`` / ``edge_attr`` per edge type) are put in the typed
graph's stored edge order. Layers that add self-loops are refused by the engine (the message
count would not match the edges), as PyG's hook refuses them.
"""
from __future__ import annotations

from itertools import accumulate
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.nn import to_hetero_with_bases_transformer as thb
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.graph import Block, DistGraph

EDGE_ARG = "sar_basis_edge_type"
EdgeType = tuple[str, str, str]


# ----------------------------------------------------------------------------- typed graph
def _graphs(input_dict: dict, type2id: dict) -> Optional[list[DistGraph]]:
    """The dict's DistGraphs in ``type2id`` order, or ``None`` for PyG's tensors."""
    values = list(input_dict.values())
    if not any(isinstance(v, DistGraph) for v in values):
        return None
    missing = [et for et in type2id if et not in input_dict]
    if missing:
        raise ValueError(f"pyg_sar: to_hetero_with_bases model has edge types {missing} that "
                         f"the partition's edge_index_dict lacks (it holds "
                         f"{sorted(input_dict)}): the model's metadata does not match")
    graphs = [input_dict[et] for et in type2id]
    bad = [et for et, g in zip(type2id, graphs) if not isinstance(g, DistGraph)]
    if bad:
        raise ValueError(f"pyg_sar: edge types {bad} are not DistGraphs while others are")
    return graphs


def _type_counts(edge_types: list, graphs: list[DistGraph], node_types: list[str]) -> dict:
    """Per node type, the number of nodes every rank holds (from the per-type graphs)."""
    counts: dict[str, list[int]] = {}
    for (src, _, dst), g in zip(edge_types, graphs):
        P = g.world_size
        counts.setdefault(dst, [g.node_offsets[q + 1] - g.node_offsets[q] for q in range(P)])
        so = g.source_offsets
        counts.setdefault(src, [so[q + 1] - so[q] for q in range(P)])
    missing = [t for t in node_types if t not in counts]
    if missing:
        raise ValueError(f"pyg_sar: to_hetero_with_bases over a partition: node types "
                         f"{missing} are in no edge type, so their per-rank counts are unknown "
                         f"to the typed graph; drop them from the metadata")
    return counts


def typed_graph(input_dict: dict, edge_type2id: dict,
                node_types: list[str]) -> tuple[DistGraph, Tensor, Tensor]:
    """``(graph, edge_type, position)``: the homogeneous DistGraph of the per-edge-type graphs
    in ``input_dict`` (node types in ``node_types`` order, edge types in ``edge_type2id``
    order), every stored edge's type index and its position in its edge type's stored order
    (see the module docstring). Cached on the first graph, built once per set of graphs."""
    graphs = _graphs(input_dict, edge_type2id)
    edge_types = list(edge_type2id)
    key = ("hetero_bases_view", tuple(node_types), tuple(edge_types),
           tuple(id(g) for g in graphs))
    cached = graphs[0].cached(key, lambda: (graphs, _build(edge_types, graphs, node_types)))
    kept, view = cached
    if any(a is not b for a, b in zip(kept, graphs)):  # an id reused by a new graph
        view = _build(edge_types, graphs, node_types)
    return view


def _build(edge_types: list, graphs: list[DistGraph],
           node_types: list[str]) -> tuple[DistGraph, Tensor, Tensor]:
    g0 = graphs[0]
    P, r, device = g0.world_size, g0.rank, g0.device
    counts = _type_counts(edge_types, graphs, node_types)
    per_rank = [sum(counts[t][q] for t in node_types) for q in range(P)]
    offsets = list(accumulate(per_rank, initial=0))
    start, acc = {}, 0
    for t in node_types:
        start[t] = acc
        acc += counts[t][r]
    n = per_rank[r]
    long = dict(dtype=torch.long, device=device)
    in_degree = torch.zeros(n, **long)
    for (_, _, dst), g in zip(edge_types, graphs):
        in_degree[start[dst]:start[dst] + g.num_nodes] += g.in_degree.to(torch.long)
    send_idx = [torch.cat([torch.zeros(0, **long)]
                          + [g.send_idx[q].to(torch.long) + start[et[0]]
                             for et, g in zip(edge_types, graphs)]) for q in range(P)]
    blocks, types, positions, edge_start = [], [], [], 0
    for s in range(P):
        rows, cols, ets, pos = [], [], [], []
        recv = 0
        for j, ((src, _, dst), g) in enumerate(zip(edge_types, graphs)):
            b = g.blocks[s]
            rows.append(b.row.to(torch.long) + start[dst])
            cols.append(b.col.to(torch.long) + (start[src] if s == r else recv))
            recv += 0 if s == r else b.num_src
            ets.append(torch.full((b.num_edges,), j, **long))
            pos.append(torch.arange(b.edge_start, b.edge_start + b.num_edges, **long))
        row, col, et, ps = (torch.cat([torch.zeros(0, **long)] + x)
                            for x in (rows, cols, ets, pos))
        # CSR by destination; within one, edge type then the type's stored order (stable).
        order = torch.argsort(row * (len(edge_types) + 1) + et, stable=True)
        row, col, et, ps = row[order], col[order], et[order], ps[order]
        rowptr = torch.zeros(n + 1, **long)
        rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=n), 0)
        num_src = n if s == r else recv
        degree = in_degree if s == r else None
        blocks.append(Block(s, rowptr, col, num_src, edge_start, degree))
        edge_start += int(col.numel())
        types.append(et)
        positions.append(ps)
    graph = DistGraph(r, P, offsets, blocks, send_idx, in_degree, bipartite=False)
    if g0._context is not None:
        graph.bind(g0._context)
    return graph, torch.cat(types), torch.cat(positions)


# ------------------------------------------------ replacements of PyG's fx graph functions
def get_edge_offset_dict(input_dict: dict, type2id: dict) -> dict:
    """PyG's ``get_edge_offset_dict``; over DistGraphs, offsets by stored edge counts."""
    if _graphs(input_dict, type2id) is None:
        return thb.get_edge_offset_dict(input_dict, type2id)
    out, cumsum = {}, 0
    for key in type2id:
        out[key] = cumsum
        cumsum += input_dict[key].num_edges
    return out


def get_edge_type(input_dict: dict, type2id: dict, node_type2id: dict) -> Tensor:
    """PyG's ``get_edge_type``; over DistGraphs, the typed graph's (stored edge order)."""
    if _graphs(input_dict, type2id) is None:
        return thb.get_edge_type(input_dict, type2id)
    return typed_graph(input_dict, type2id, list(node_type2id))[1]


def group_edge_placeholder(input_dict: dict, type2id: dict, offset_dict: Optional[dict] = None,
                           edge_index_dict: Optional[dict] = None) -> Any:
    """PyG's ``group_edge_placeholder``; over DistGraphs the typed graph, and an edge tensor
    dict (given the model's edge_index dict) in the typed graph's stored edge order."""
    if _graphs(input_dict, type2id) is not None:
        if offset_dict is None:
            raise ValueError("pyg_sar: to_hetero_with_bases needs a node-level argument "
                             "before the graph in the model's forward")
        # (Row counts per node type are checked at the model's call: pyg_sar.nn.adapters.hetero.)
        return typed_graph(input_dict, type2id, list(offset_dict))[0]
    if edge_index_dict is not None and _graphs(edge_index_dict, type2id) is not None:
        if offset_dict is None:
            raise ValueError("pyg_sar: to_hetero_with_bases needs a node-level argument "
                             "before the edge arguments in the model's forward")
        _, etype, pos = typed_graph(edge_index_dict, type2id, list(offset_dict))
        values = [input_dict[et] for et in type2id]
        base = torch.tensor([0] + [int(v.size(0)) for v in values],
                            device=etype.device).cumsum(0)
        return torch.cat(values)[base[etype] + pos]
    return thb.group_edge_placeholder(input_dict, type2id, offset_dict)


_REPLACED = {thb.get_edge_offset_dict: get_edge_offset_dict,
             thb.get_edge_type: get_edge_type,
             thb.group_edge_placeholder: group_edge_placeholder}


def patch_graph_module(module: torch.nn.Module) -> None:
    """Point a ``to_hetero_with_bases`` graph module's edge functions at this module's."""
    graph = getattr(module, "graph", None)
    if not isinstance(module, torch.fx.GraphModule) or graph is None:
        return
    nodes = list(graph.nodes)
    node_type2id = next((n.args[1] for n in nodes if n.op == "call_function" and n.target in
                         (thb.get_node_offset_dict, thb.group_node_placeholder)), None)
    edge_source = next((n.args[0] for n in nodes if n.op == "call_function" and n.target in
                        (thb.get_edge_type, get_edge_type)), None)
    changed = False
    for node in nodes:
        if node.op != "call_function" or node.target not in _REPLACED:
            continue
        target = _REPLACED[node.target]
        if target is get_edge_type:
            node.args = (*node.args[:2], node_type2id or {})
        elif target is group_edge_placeholder:
            args = tuple(node.args) + (None,) * (3 - len(node.args))
            same = args[0] is edge_source
            node.args = (*args[:3], None if same else edge_source)
        node.target = target
        changed = True
    if changed:
        module.recompile()


# ------------------------------------------------------------------------- basis convs
class BasisMessage:
    """A basis conv's ``message``: its class's message scaled per edge by
    ``edge_type_weight[edge_type]``, as PyG's hook scales it (see the module docstring)."""

    def __init__(self, layer: MessagePassing) -> None:
        self.layer = layer

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        layer = self.layer
        etype = kwargs.pop(EDGE_ARG, None)
        out = type(layer).message(layer, *args, **kwargs)
        if etype is None:  # PyG's propagate (halo mode, a plain edge_index): all edges
            etype = layer._edge_type
        if etype.size(0) != out.size(-2):
            raise ValueError(f"pyg_sar: to_hetero_with_bases: {out.size(-2)} messages for "
                             f"{etype.size(0)} edges; does the layer add self-loops? Use "
                             f"add_self_loops=False")
        weight = layer.edge_type_weight.view(-1)[etype]
        return weight.view([1] * (out.dim() - 2) + [-1, 1]) * out


def _pre_hook(layer: MessagePassing, inputs: tuple) -> Optional[tuple]:
    """Over a DistGraph in modes sar / sa, hand the edge types to ``message`` as an edge
    argument (halo mode runs PyG's propagate, which reads ``layer._edge_type``)."""
    edge_index, size, kwargs = inputs
    config = getattr(layer, "_sar_config", None) if "_sar_state" in layer.__dict__ else None
    if not isinstance(edge_index, DistGraph) or config is None or config.mode == "halo":
        return None
    return edge_index, size, {**kwargs, EDGE_ARG: layer._edge_type}


def basis_convs(model: torch.nn.Module) -> list[MessagePassing]:
    """The convs of every ``HeteroBasisConv`` of ``model`` (``to_hetero_with_bases``), without
    changing anything: :func:`pyg_sar.convert` checks them before :func:`prepare_bases`."""
    return [conv for module in model.modules() if isinstance(module, thb.HeteroBasisConv)
            for conv in module.convs]


def prepare_bases(model: torch.nn.Module) -> list[MessagePassing]:
    """Make every ``HeteroBasisConv`` of ``model`` run over DistGraphs (its PyG message hook
    replaced by :class:`BasisMessage`) and patch the ``fx`` graphs; returns the basis convs.
    Idempotent. Changes the model: call it only once every check of ``convert`` passed."""
    for module in model.modules():
        if isinstance(module, torch.fx.GraphModule):
            patch_graph_module(module)
    convs = basis_convs(model)
    for conv in convs:
        if isinstance(conv.__dict__.get("message"), BasisMessage):
            continue
        for key, hook in list(conv._message_forward_hooks.items()):
            if hook is thb.hook:
                del conv._message_forward_hooks[key]
        conv.message = BasisMessage(conv)
        sig = conv.inspector._signature_dict["message"]
        params = dict(sig.param_dict)
        params[EDGE_ARG] = thb_param(EDGE_ARG)
        conv.inspector._signature_dict["message"] = sig._replace(param_dict=params)
        conv.register_propagate_forward_pre_hook(_pre_hook)
    return convs


def check_basis_conv(conv: MessagePassing, spec: Any, where: str) -> None:
    """Refuse a basis conv with attention: GAT's family (the engine computes its scores and
    values without its ``message``, so the per-edge-type weight would be lost) and the layers
    run by destination chunks (a softmax inside ``message``, an aggregation no statistics
    rebuild: not verified with the per-edge-type weights)."""
    from pyg_sar.nn.adapters.families import option
    from pyg_sar.nn.layers import PER_DESTINATION, UnsupportedLayerError
    adapter = spec.adapter
    if spec.attention or spec.aggr == PER_DESTINATION or (
            adapter is not None and option(conv, adapter.per_destination)):
        raise UnsupportedLayerError(
            f"{where} ({type(conv).__name__}): to_hetero_with_bases weights each message by its "
            f"edge type inside message, which pyg_sar has not verified with this layer's "
            f"attention or aggregation; use to_hetero(model, metadata) (exact) or a layer "
            f"with a plain message and a sum, mean, max or min aggregation (SAGEConv, "
            f"GraphConv, GINConv, ...)")


def thb_param(name: str):
    """An inspector parameter ``name: Optional[Tensor] = None``."""
    from torch_geometric.inspector import Parameter
    return Parameter(name, Optional[Tensor], "Optional[Tensor]", None)
