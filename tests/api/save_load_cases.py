"""Rank side of the multi-rank case of tests/api/test_save_load.py."""
from __future__ import annotations

import io
import pickle

import torch
from torch_geometric.nn import GAT, GCN

import pyg_sar
from pyg_sar.nn.functional import global_loss

IN = 6


def _torch_save(model):
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def round_trips(ctx, parts: str, graph: str, saved: str) -> dict:
    """Converted models (batch norm bound to the ranks' communicator, GATv2 in halo mode with
    its held wires, compression) saved after a training step on every rank run the same after
    loading: eval and training outputs, parameter gradients; rank 0's file loads on every rank.
    Returns the largest differences (0 expected) and the error against whole-graph PyG."""
    data = torch.load(graph, weights_only=True)
    part = pyg_sar.load_partition(parts, ctx.rank)
    x = part.x.double()
    comp = pyg_sar.compression.Compressor(pyg_sar.compression.Truncate(), 1.0)
    cases = {
        "GCN[batch_norm]": (lambda: GCN(IN, 8, 2, 3, norm="batch_norm"), pyg_sar.SARConfig()),
        "GATv2[batch_norm,halo]": (lambda: GAT(IN, 8, 2, 3, heads=2, v2=True,
                                               norm="batch_norm"),
                                   pyg_sar.SARConfig(mode="halo", compression=comp)),
    }
    out: dict = {}
    for name, (build, config) in cases.items():
        torch.manual_seed(0)
        plain = build().double().eval()
        model = pyg_sar.convert(build().double(), config)
        model.load_state_dict(plain.state_dict())
        model.train()
        global_loss(model(x, part.graph).sum()).backward()
        model.zero_grad()
        model.eval()
        want = model(x, part.graph)
        plain.load_state_dict(model.state_dict())  # the running statistics of that step
        whole = plain(data["x"], data["edge_index"])[part.node_ids]
        out[f"{name}:pyg"] = float((want - whole).abs().max())
        if ctx.rank == 0:
            torch.save(model, saved)
        ctx.comm.barrier()
        loaded_models = {"torch.save": _torch_save(model),
                         "pickle": pickle.loads(pickle.dumps(model)),
                         "rank0 file": torch.load(saved, weights_only=False)}
        ctx.comm.barrier()
        for trip, loaded in loaded_models.items():
            diffs = [float((loaded(x, part.graph) - want).abs().max())]
            for m in (model, loaded):
                m.train()
                m.zero_grad()
                global_loss(m(x, part.graph).square().sum()).backward()
            diffs.append(float((loaded(x, part.graph) - model(x, part.graph)).abs().max()))
            diffs += [float((p.grad - q.grad).abs().max())
                      for p, q in zip(model.parameters(), loaded.parameters())]
            if trip == "rank0 file":  # rank 0's parameters are the same as this rank's
                diffs += [float((p - q).abs().max())
                          for p, q in zip(model.parameters(), loaded.parameters())]
            out[f"{name}:{trip}"] = max(diffs)
            model.eval()
        # Unconverted after distributed training: no pyg_sar hook is left (a gradient-sync
        # hook would sum the next gradients over the ranks), gradients are single-process PyG's.
        pyg_sar.unconvert(model).train()
        plain.load_state_dict(model.state_dict())
        plain.train()
        ours = [h for p in model.parameters()
                for table in ("_backward_hooks", "_post_accumulate_grad_hooks")
                for h in (getattr(p, table, None) or {}).values()
                if getattr(h, "__module__", "").startswith("pyg_sar")]
        ours += [h for m in model.modules() for h in (*m._forward_pre_hooks.values(),
                                                      *m._forward_hooks.values())
                 if getattr(h, "__module__", "").startswith("pyg_sar")]
        model.zero_grad()
        for m in (model, plain):
            m(data["x"], data["edge_index"]).square().sum().backward()
        diffs = [float((p.grad - q.grad).abs().max())
                 for p, q in zip(model.parameters(), plain.parameters())]
        out[f"{name}:unconvert"] = float(len(ours)) + max(diffs)
    return out
