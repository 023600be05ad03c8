"""A small random ``HeteroData`` for the heterogeneous partition tests, and the rank side of
their one multi-rank launch (global losses on one node type, the typed homogeneous view and an
edge type's bipartite graph under converted layers, against single-process PyG)."""
from __future__ import annotations

import copy
import traceback

import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData

from tests.closeness import max_abs_diff, rel_error

PAPER, AUTHOR, INST = 40, 25, 8
EDGE_TYPES = [("paper", "cites", "paper"), ("author", "writes", "paper"),
              ("paper", "written_by", "author"), ("author", "affiliated_with", "inst"),
              ("inst", "employs", "author")]


def _edges(g: torch.Generator, num_src: int, num_dst: int, num: int) -> torch.Tensor:
    return torch.stack([torch.randint(0, num_src, (num,), generator=g),
                        torch.randint(0, num_dst, (num,), generator=g)])


def make_hetero(seed: int = 0) -> HeteroData:
    """3 node types (``inst`` without tensors, only ``num_nodes``), 5 edge types: a
    self-relation with self-loops and duplicate edges, relations between different types in
    both directions, ``edge_attr`` on ``writes`` only."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    split = torch.randint(0, 3, (PAPER,), generator=g)
    data["paper"].x = torch.randn(PAPER, 5, generator=g, dtype=torch.float64)
    data["paper"].y = torch.randint(0, 3, (PAPER,), generator=g)
    data["paper"].train_mask = split == 0
    data["paper"].val_mask = split == 1
    data["paper"].test_mask = split == 2
    data["author"].x = torch.randn(AUTHOR, 3, generator=g, dtype=torch.float64)
    data["author"].score = torch.randn(AUTHOR, generator=g).to(torch.bfloat16)
    data["inst"].num_nodes = INST
    cites = _edges(g, PAPER, PAPER, 90)
    loops = torch.arange(4).repeat(2, 1)
    data["paper", "cites", "paper"].edge_index = torch.cat([cites, loops, cites[:, :3]], 1)
    writes = _edges(g, AUTHOR, PAPER, 70)
    data["author", "writes", "paper"].edge_index = writes
    data["author", "writes", "paper"].edge_attr = torch.randn(70, 2, generator=g,
                                                             dtype=torch.float64)
    data["paper", "written_by", "author"].edge_index = writes.flip(0)
    affiliated = _edges(g, AUTHOR, INST, 30)
    data["author", "affiliated_with", "inst"].edge_index = affiliated
    data["inst", "employs", "author"].edge_index = affiliated.flip(0)
    return data


def _grad_error(ref: torch.nn.Module, model: torch.nn.Module) -> float:
    pairs = list(zip(ref.parameters(), model.parameters(), strict=True))
    scale = max(float(p.grad.abs().max()) for p, _ in pairs)
    return max(max_abs_diff(q.grad, p.grad) / scale for p, q in pairs)


def _guard(fn) -> dict:
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - reported to the test, which names it
        return {"error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()}


def suite(ctx, parts: str) -> dict:
    """Every case of the launch; each value is a relative error (or an error report)."""
    import pyg_sar
    import pyg_sar.nn.functional as SF
    data = make_hetero()
    part = pyg_sar.load_partition(parts, ctx.rank)
    out: dict = {}

    def losses() -> dict:
        nid = part.node_ids_dict["paper"]
        torch.manual_seed(1)
        logits = torch.randn(PAPER, 3, dtype=torch.float64)
        y, mask = data["paper"].y, data["paper"].train_mask
        ref = logits.clone().requires_grad_()
        want = F.cross_entropy(ref[mask], y[mask])
        want.backward()
        local = logits[nid].clone().requires_grad_()
        got = SF.cross_entropy(local, part.y_dict["paper"], part.train_mask_dict["paper"])
        got.backward()
        view = part["paper"]
        acc = SF.accuracy(local, view.y, view.val_mask)
        acc_ref = float((logits.argmax(-1) == y)[data["paper"].val_mask].double().mean())
        values = ctx.comm.allgather_object(float(got))
        return {"value": abs(float(got) - float(want)) / abs(float(want)),
                "same_on_ranks": len(set(values)) == 1,
                "grad": rel_error(local.grad, ref.grad[nid]), "accuracy": abs(acc - acc_ref)}

    def homogeneous() -> dict:
        from torch_geometric.nn import GCNConv, GraphConv
        homo = data.to_homogeneous()
        graph, node_type, edge_type = part.to_homogeneous()
        g = torch.Generator().manual_seed(2)
        x = torch.randn(homo.num_nodes, 4, generator=g, dtype=torch.float64)
        target = torch.randn(homo.num_nodes, 3, generator=g, dtype=torch.float64)
        nid = graph.node_ids
        res = {"node_type": int((node_type != homo.node_type[nid]).sum()),
               "edge_types": int(edge_type.numel())}
        for name, cls in (("gcn", GCNConv), ("graphconv", GraphConv)):
            torch.manual_seed(3)
            ref = cls(4, 3).double()
            model = pyg_sar.convert(copy.deepcopy(ref))
            want = ref(x, homo.edge_index)
            F.mse_loss(want, target).backward()
            got = model(x[nid], graph)
            SF.mse_loss(got, target[nid]).backward()
            res[name] = {"out": rel_error(got, want[nid]), "grad": _grad_error(ref, model)}
        return res

    def bipartite() -> dict:
        from torch_geometric.nn import SAGEConv
        et = ("author", "writes", "paper")
        torch.manual_seed(4)
        ref = SAGEConv((3, 5), 4).double()
        model = pyg_sar.convert(copy.deepcopy(ref))
        want = ref((data["author"].x, data["paper"].x), data[et].edge_index)
        target = torch.randn(PAPER, 4, dtype=torch.float64)
        F.mse_loss(want, target).backward()
        nid = part.node_ids_dict["paper"]
        got = model((part.x_dict["author"], part.x_dict["paper"]), part.edge_index_dict[et])
        SF.mse_loss(got, target[nid]).backward()
        return {"out": rel_error(got, want[nid]), "grad": _grad_error(ref, model)}

    def distributed() -> dict:
        """pyg_sar.distribute of the HeteroData gives the part the folder holds (same method
        and seed), bound to the job's context."""
        got = pyg_sar.distribute(make_hetero(), method="metis", seed=0)
        same = isinstance(got, type(part)) and got.path is None and all(
            torch.equal(got.node_ids_dict[t], part.node_ids_dict[t]) for t in part.node_types)
        same = same and all(torch.equal(got.global_edge_index(et), part.global_edge_index(et))
                            for et in part.edge_types)
        return {"same": bool(same), "bound": got.edge_index_dict[EDGE_TYPES[1]].context is ctx}

    out["losses"] = _guard(losses)
    out["distribute"] = _guard(distributed)
    out["homogeneous"] = _guard(homogeneous)
    out["bipartite"] = _guard(bipartite)
    pyg_sar.barrier()
    return out
