"""Rank-side cases of the HGTConv / HANConv exactness tests: many cases per launch.

Same oracle as :mod:`hetero_cases` (plain PyG on the whole HeteroData of
:func:`hetero_cases.make_hetero`, float64, every node type's output, input gradient and every
parameter gradient after the sum over ranks), on a hand-built partition and on one written by
``pyg_sar.partition_graph``. Plus: HAN's semantic attention weights, the bytes autograd saves in
modes sar and sa (SAR keeps no remote row), and bad input.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch_geometric.nn import HANConv, HeteroDictLinear, HGTConv

import pyg_sar
from tests.hetero import hetero_cases as hc

SKIPPED = ("author", "rev_employs", "inst")  # the "subset" cases leave it out

# hetero_cases' graph plus a node type of 2 nodes ("venue", none on rank 2 of 3): a rank
# without nodes of a type still takes part in HAN's global mean and HGT's combined graph.
NUM = {**hc.NUM, "venue": 2}
DIM = {**hc.DIM, "venue": 3}
VENUE_EDGES = (("paper", "published_in", "venue"), ("venue", "publishes", "paper"))


def make_data(seed: int = 0):
    """:func:`hetero_cases.make_hetero` with the "venue" type: papers 0..29 published in one
    of the two venues, and the reverse edges."""
    data = hc.make_hetero(seed)
    g = torch.Generator().manual_seed(100 + seed)
    data["venue"].x = torch.randn(NUM["venue"], DIM["venue"], generator=g, dtype=torch.float64)
    papers = torch.arange(30)
    venue = torch.randint(0, NUM["venue"], (30,), generator=g)
    data[VENUE_EDGES[0]].edge_index = torch.stack([papers, venue])
    data[VENUE_EDGES[1]].edge_index = torch.stack([venue, papers])
    for et in VENUE_EDGES:
        data[et].edge_attr = torch.randn(30, hc.EDGE_DIM, generator=g, dtype=torch.float64)
    return data


def metadata() -> tuple[list, list]:
    return list(NUM), list(hc.EDGES) + list(VENUE_EDGES)


class HGT(torch.nn.Module):
    """Two HGTConv layers (the second with HGT's skip connection: in = out channels)."""

    def __init__(self, metadata, heads: int, subset: bool = False, project: bool = False):
        super().__init__()
        self.lin = HeteroDictLinear(-1, 6, types=metadata[0]) if project else None
        self.conv1 = HGTConv(-1, 8, metadata, heads=heads)
        self.conv2 = HGTConv(8, 8, metadata, heads=heads)
        self.subset = subset

    def forward(self, x_dict, edge_index_dict):
        if self.subset:
            edge_index_dict = {et: g for et, g in edge_index_dict.items() if et != SKIPPED}
        if self.lin is not None:
            x_dict = {t: v.tanh() for t, v in self.lin(x_dict).items()}
        x_dict = self.conv1(x_dict, edge_index_dict)
        return self.conv2({t: v.relu() for t, v in x_dict.items()}, edge_index_dict)


class HAN(torch.nn.Module):
    """Two HANConv layers; with ``weights`` the second also returns its semantic attention
    weights, appended to the output as ``attn:<type>`` entries (one row of weights per type)."""

    def __init__(self, metadata, heads: int, weights: bool = False):
        super().__init__()
        self.conv1 = HANConv(-1, 8, metadata, heads=heads)
        self.conv2 = HANConv(8, 6, metadata, heads=heads)
        self.weights = weights

    def forward(self, x_dict, edge_index_dict):
        x_dict = self.conv1(x_dict, edge_index_dict)
        if not self.weights:
            return self.conv2(x_dict, edge_index_dict)
        out, attn = self.conv2(x_dict, edge_index_dict, return_semantic_attention_weights=True)
        return out, attn


class HANSubset(torch.nn.Module):
    """One HANConv over all edge types but one: the type that then receives no edge type
    gets PyG's None, left out of the output."""

    def __init__(self, metadata):
        super().__init__()
        self.conv = HANConv(-1, 8, metadata, heads=2)

    def forward(self, x_dict, edge_index_dict):
        graphs = {et: g for et, g in edge_index_dict.items() if et != SKIPPED}
        return {t: v for t, v in self.conv(x_dict, graphs).items() if v is not None}


MODELS = {
    "hgt": lambda md: HGT(md, heads=2),
    "hgt_1head_proj": lambda md: HGT(md, heads=1, project=True),
    "hgt_subset": lambda md: HGT(md, heads=2, subset=True),
    "han": lambda md: HAN(md, heads=2),
    "han_1head": lambda md: HAN(md, heads=1),
    "han_weights": lambda md: HAN(md, heads=2, weights=True),
    "han_subset": HANSubset,
}


def _build(name: str, metadata):
    return MODELS[name](metadata), False


def _run(model, x_dict, graphs):
    out = model(x_dict, graphs)
    if isinstance(out, tuple):
        return out
    return out, None


def _run_dicts(model, x_dict, graphs, attrs):
    return _run(model, x_dict, graphs)  # (no edge attributes)


def _oracle(data, name: str):
    """The oracle of case ``name`` (:func:`hetero_cases.reference`; attention as the extra
    output)."""
    torch.manual_seed(7)
    return hc.reference(data, _build(name, data.metadata())[0], _run_dicts)


def one_case(part, oracle, mode: str) -> dict:
    return hc.compare(part, oracle, mode, _run_dicts)


def saved_bytes(part, name: str, mode: str) -> int:
    """Bytes autograd saves for backward in one forward of one layer (no lazy parameters)."""
    torch.manual_seed(5)
    conv = (HGTConv(DIM, 8, metadata(), heads=2) if name == "hgt"
            else HANConv(DIM, 8, metadata(), heads=2)).double()
    pyg_sar.convert(conv, pyg_sar.SARConfig(mode=mode, check_loss=False))
    x = {t: v.clone().requires_grad_() for t, v in _x64(part).items()}
    sizes: list[int] = []

    def pack(t, sizes=sizes):
        sizes.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = conv(x, part.edge_index_dict)
    sum(v.sum() for v in out.values() if v is not None).backward()
    return sum(sizes)


def fetched_bytes(part, name: str) -> int:
    """Bytes of the remote rows one forward fetches, destination chunk by destination chunk
    (both run their softmax inside message: pyg_sar.core.dst_chunks): HGT's k and v (8
    channels each) over the combined graph; HAN's x_j (8 channels) and alpha_j (2 heads) per
    edge type. Collective (the chunk plans): every rank calls it."""
    from pyg_sar.core.dst_chunks import chunk_plan
    from pyg_sar.core.views import stored_view

    def rows(graph) -> int:
        return sum(sum(ch.recv_counts) for ch in chunk_plan(stored_view(graph)))
    graphs = part.edge_index_dict
    if name == "hgt":
        from pyg_sar.nn.adapters.hetero_attention import combined_graph
        graph, _ = combined_graph(graphs, list(NUM))
        return rows(graph) * 2 * 8 * 8
    return sum(rows(g) for g in graphs.values()) * (8 + 2) * 8


def _converted(cls: type):
    torch.manual_seed(0)
    conv = cls(DIM, 8, metadata(), heads=2).double()
    return pyg_sar.convert(conv, pyg_sar.SARConfig(check_loss=False))


def bad_input(part) -> dict:
    """The errors of bad calls (messages, for the pytest side to check)."""
    x, graphs = _x64(part), part.edge_index_dict
    calls = {
        "hgt_rows": lambda: _converted(HGTConv)({**x, "author": x["author"][:-1]}, graphs),
        "hgt_missing_type": lambda: _converted(HGTConv)(
            {t: v for t, v in x.items() if t != "inst"}, graphs),
        "han_mixed": lambda: _converted(HANConv)(
            x, {**graphs, SKIPPED: torch.zeros(2, 0, dtype=torch.long)}),
        "hgt_mixed": lambda: _converted(HGTConv)(
            x, {**graphs, SKIPPED: torch.zeros(2, 0, dtype=torch.long)}),
    }
    out = {}
    for key, call in calls.items():
        try:
            call()
            out[key] = "no error"
        except Exception as err:  # noqa: BLE001 - reported, asserted by pytest
            out[key] = f"{type(err).__name__}: {err}"
    return out


def _x64(part) -> dict:
    return {t: v.double() for t, v in part.x_dict.items()}


def suite(ctx, cases: list, parts: Optional[str] = None, seed: int = 0) -> dict:
    data = make_data(seed)
    part = (hc.hand_partition(data, ctx.world_size, ctx.rank, seed) if parts is None
            else pyg_sar.load_partition(parts, ctx.rank))
    results, oracles = {}, {}
    for name, mode in cases:
        try:
            if name not in oracles:
                oracles = {name: _oracle(data, name)}
            results[f"{name}/{mode}"] = one_case(part, oracles[name], mode)
        except Exception as err:  # noqa: BLE001 - reported per case, asserted by pytest
            import traceback
            results[f"{name}/{mode}"] = {"error": f"{type(err).__name__}: {err}\n"
                                                  f"{traceback.format_exc()}"}
    for name in ("hgt", "han"):
        try:
            results[f"saved_bytes/{name}"] = {
                "sar": saved_bytes(part, name, "sar"), "sa": saved_bytes(part, name, "sa"),
                "fetched_bytes": fetched_bytes(part, name)}
        except Exception as err:  # noqa: BLE001
            results[f"saved_bytes/{name}"] = {"error": f"{type(err).__name__}: {err}"}
    results["bad_input"] = bad_input(part)
    results["local_nodes"] = {t: int(v.shape[0]) for t, v in part.x_dict.items()}
    return results


def both(ctx, cases: list, parts: str, seed: int = 0) -> dict:
    """:func:`suite` on the hand-built partition and on the partition folder ``parts``."""
    return {"hand": suite(ctx, cases, None, seed), "partition": suite(ctx, cases, parts, seed)}
