"""Rank-side cases of tests/link/test_super_gat.py: PyG's SuperGATConv (two layers, as in
PyG's examples/super_gat.py, attention dropout 0) trained with its self-supervised attention
loss on a rank's part against single-process PyG on the whole graph.

Given negatives: each step's are :func:`pyg_sar.link.negative_sampling` of this rank's keys
(``(seed, epoch=step)``); PyG is given the same pairs in original ids
(:func:`pyg_sar.link.negatives.reference_negative_sampling`) as its ``neg_edge_index``, and
PyG's positive edges are every edge (``edge_sample_ratio=1.0``). Sampled (PyG's example:
``edge_sample_ratio=0.8``, no negatives passed): pyg_sar draws positives and negatives keyed by
(layer index, step); PyG is given the same draws (its ``positive_sampling`` patched). Both
sides score the same pairs. Reported: relative errors of the outputs, the attention loss, every
parameter gradient and the input gradient at step 0, and of the loss curve.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch_geometric.nn import SuperGATConv

import pyg_sar
import pyg_sar.nn.functional as SF
from pyg_sar.link.negatives import negative_sampling, reference_negative_sampling
from pyg_sar.nn.super_gat import positive_mask
from tests.closeness import rel_norm_error as rel

NUM_NEG, SEED, HEADS = 150, 7, 2


def make_graph():
    from pyg_sar.datasets import sbm
    data = sbm(num_nodes=200, num_classes=4, avg_degree=6.0, num_features=8, seed=1)
    data.x = data.x.double()
    return data


class Net(torch.nn.Module):
    def __init__(self, attention_type: str, edge_sample_ratio: float = 1.0) -> None:
        super().__init__()
        self.conv1 = SuperGATConv(8, 6, heads=HEADS, attention_type=attention_type,
                                  edge_sample_ratio=edge_sample_ratio)
        self.conv2 = SuperGATConv(6 * HEADS, 4, heads=1, concat=False,
                                  attention_type=attention_type,
                                  edge_sample_ratio=edge_sample_ratio)

    def forward(self, x, edge_index, negs=(None, None)):
        x = F.elu(self.conv1(x, edge_index, negs[0]))
        att = self.conv1.get_attention_loss()
        x = self.conv2(x, edge_index, negs[1])
        att = att + self.conv2.get_attention_loss()
        return F.log_softmax(x, dim=-1), att


def _oracle_draws(ref: Net, data, step: int) -> list:
    """PyG's layers given the draws pyg_sar makes when no negatives are passed: positives
    subsampled by ``positive_mask`` (PyG's ``positive_sampling`` patched), negatives of the
    global slots ``[0, int(neg_ratio * edge_ratio * E))`` keyed by (layer index, step)."""
    negs = []
    n = data.num_nodes
    e = int((data.edge_index[0] != data.edge_index[1]).sum()) + n  # with PyG's self-loops
    for index, conv in enumerate((ref.conv1, ref.conv2)):
        conv.positive_sampling = (lambda ei, index=index, ratio=conv.edge_sample_ratio: ei[
            :, positive_mask(ei[0], ei[1], seed=index, epoch=step, ratio=ratio)])
        num = int(conv.neg_sample_ratio * conv.edge_sample_ratio * e)
        negs.append(reference_negative_sampling(data.edge_index, torch.arange(num),
                                                num_nodes=n, seed=index, epoch=step,
                                                reject_existing=True))
    return negs


def case(ctx, data, part, mode: str, attention_type: str, steps: int, sampled: bool) -> dict:
    """``sampled``: PyG's example settings (``edge_sample_ratio=0.8``, no negatives passed:
    pyg_sar draws them); else every edge and the negatives given."""
    torch.manual_seed(0)
    ref = Net(attention_type, 0.8 if sampled else 1.0).double()
    model = copy.deepcopy(ref)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode))
    keys = torch.arange(NUM_NEG)
    my_keys = keys[ctx.rank::ctx.world_size]  # any split: a negative is keyed, not placed
    ids = part.node_ids
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    out: dict = {"curve": 0.0}
    for step in range(steps):
        if sampled:
            ref_negs, negs = _oracle_draws(ref, data, step), (None, None)
        else:
            ref_neg = reference_negative_sampling(data.edge_index, keys,
                                                  num_nodes=data.num_nodes, seed=SEED,
                                                  epoch=step)
            neg = negative_sampling(part.edge_index, my_keys, seed=SEED, epoch=step)
            ref_negs, negs = (ref_neg, ref_neg), (neg, neg)
        x_ref = data.x.clone().requires_grad_()
        x = part.x.double().clone().requires_grad_()
        ref_opt.zero_grad()
        opt.zero_grad()
        ref_out, ref_att = ref(x_ref, data.edge_index, ref_negs)
        mask = data.train_mask
        ref_loss = F.nll_loss(ref_out[mask], data.y[mask]) + 4.0 * ref_att
        ref_loss.backward()
        got, att = model(x, part.edge_index, negs)
        loss = SF.nll_loss(got, part.y, part.train_mask) + 4.0 * att
        loss.backward()
        if step == 0:
            out["out"] = rel(got, ref_out[ids])
            out["att"] = rel(att, ref_att)
            out["x_grad"] = rel(x.grad, x_ref.grad[ids])
            for (name, p), q in zip(ref.named_parameters(), model.parameters()):
                out[f"grad:{name}"] = rel(q.grad, p.grad)
        out["curve"] = max(out["curve"], abs(float(loss) - float(ref_loss)) / abs(float(ref_loss)))
        opt.step()
        ref_opt.step()
    out["steps"] = steps
    return out


def suite(ctx, parts: str, cases: list, steps: int) -> dict:
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    return {f"{mode}/{att}/{how}": case(ctx, data, part, mode, att, steps, how == "sampled")
            for mode, att, how in cases}
