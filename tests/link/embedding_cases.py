"""Rank-side cases of tests/link/test_embedding_models.py: PyG's LightGCN converted and run
on a rank's part against single-process PyG on the whole graph (the oracle), many cases per
launch.

Every rank builds the same graph, the same reference model (seeded) and the same supervision
pairs (original ids); a rank scores the pairs whose source it owns (new global ids), trains 20
Adam steps on ``recommendation_loss`` and reports relative errors of the embedding rows, the
scores, the loss curve, the embedding gradient rows (mapped by ``node_ids``) and the final
rows; one case also resumes from a checkpoint halfway and one checks ``recommend``.
"""
from __future__ import annotations

import copy
import io
from pathlib import Path

import torch
from torch_geometric.nn.models import LightGCN

import pyg_sar
from pyg_sar.nn.embedding import is_rank_local
from tests.closeness import rel_norm_error as rel

DIM, LAYERS, STEPS, LAMBDA, LR = 8, 2, 20, 1e-2, 0.05


def make_graph(name: str):
    """``(data, n_users)``: the bipartite user-item graph (users first) or Cora."""
    if name == "bipartite":
        from pyg_sar.datasets.synthetic_bipartite import user_item
        data = user_item(num_users=40, num_items=25, interactions_per_user=6, seed=3)
        return data, 40
    from pyg_sar.datasets.planetoid import cora
    return cora(), None


def pairs(data, n_users, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive pairs and one negative destination each, original ids (identical on every
    rank): the message-passing edges in one direction (users to items on the bipartite
    graph), negatives uniform over items (all nodes on Cora)."""
    g = torch.Generator().manual_seed(seed)
    ei = data.edge_index
    pos = ei[:, ei[0] < n_users] if n_users is not None else ei[:, ei[0] < ei[1]]
    pos = pos[:, torch.randperm(pos.shape[1], generator=g)[:300]]
    lo, hi = (n_users, data.num_nodes) if n_users is not None else (0, data.num_nodes)
    neg = torch.randint(lo, hi, (pos.shape[1],), generator=g)
    return pos, neg


def _new_ids(ctx, part) -> torch.Tensor:
    """Original id -> new global id, from every rank's node_ids (test bookkeeping)."""
    every = torch.cat([torch.tensor(ids, dtype=torch.long)
                       for ids in ctx.comm.allgather_object(part.node_ids.tolist())])
    new = torch.empty_like(every)
    new[every] = torch.arange(every.numel())
    return new


def _train(model, graph, src, pos, neg, node_id, steps, opt=None, record=None):
    opt = opt or torch.optim.Adam(model.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        pos_rank = model(graph, torch.stack([src, pos]))
        neg_rank = model(graph, torch.stack([src, neg]))
        loss = model.recommendation_loss(pos_rank, neg_rank, node_id=node_id,
                                         lambda_reg=LAMBDA)
        loss.backward()
        if record is not None and step == 0:
            record(pos_rank, neg_rank, model.embedding.weight.grad.clone())
        opt.step()
        losses.append(float(loss))
    return losses, opt


def case(ctx, name: str, mode: str, parts: str, checkpoint_dir: str | None = None,
         recommend: bool = False) -> dict:
    data, n_users = make_graph(name)
    part = pyg_sar.load_partition(parts, ctx.rank)
    pos, neg = pairs(data, n_users)
    src = pos[0]
    torch.manual_seed(0)
    ref = LightGCN(data.num_nodes, DIM, num_layers=LAYERS).double()
    model = copy.deepcopy(ref)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode))
    ids = part.node_ids

    # oracle: the whole graph, every pair (original ids)
    node_id_all = torch.cat([src, pos[1], neg])
    ref_losses, ref_pos, ref_grad = [], None, None
    ref_opt = torch.optim.Adam(ref.parameters(), lr=LR)
    for step in range(STEPS):
        ref_opt.zero_grad()
        pr = ref(data.edge_index, pos)
        nr = ref(data.edge_index, torch.stack([src, neg]))
        loss = ref.recommendation_loss(pr, nr, node_id=node_id_all, lambda_reg=LAMBDA)
        loss.backward()
        if step == 0:
            ref_pos, ref_neg, ref_grad = pr.detach(), nr.detach(), ref.embedding.weight.grad
            ref_grad = ref_grad.clone()
            ref_emb0 = ref.get_embedding(data.edge_index).detach()
        ref_opt.step()
        ref_losses.append(float(loss))

    # this rank: the pairs whose source it owns, in new global ids
    new = _new_ids(ctx, part)
    lo = part.edge_index.node_offsets[ctx.rank]
    hi = part.edge_index.node_offsets[ctx.rank + 1]
    mine = (new[src] >= lo) & (new[src] < hi)
    my_src, my_pos, my_neg = new[src[mine]], new[pos[1][mine]], new[neg[mine]]
    node_id = torch.cat([my_src, my_pos, my_neg])
    emb0 = model.get_embedding(part.edge_index)
    out: dict = {"emb": rel(emb0, ref_emb0[ids])}
    got: dict = {}

    def record(pr, nr, grad):
        got.update(pos=pr.detach(), neg=nr.detach(), grad=grad)

    half = STEPS // 2 if checkpoint_dir else STEPS
    losses, opt = _train(model, part.edge_index, my_src, my_pos, my_neg, node_id, half,
                         record=record)
    if checkpoint_dir:
        pyg_sar.save_checkpoint(checkpoint_dir, model, opt, epoch=half, partition=part)
        pyg_sar.barrier()  # rank 0 commits latest.json last
        torch.manual_seed(123)  # a different table: the checkpoint must restore the rows
        model = LightGCN(data.num_nodes, DIM, num_layers=LAYERS).double()
        pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode))
        pyg_sar.shard_embedding(model.embedding, part)
        opt = torch.optim.Adam(model.parameters(), lr=LR)
        pyg_sar.load_checkpoint(checkpoint_dir, model, opt, partition=part)
        more, _ = _train(model, part.edge_index, my_src, my_pos, my_neg, node_id,
                         STEPS - half, opt=opt)
        losses += more
        # the explicit helpers leave the rank-local table alone as well
        from pyg_sar.distributed.sync import check_parameters_equal
        grad = model.embedding.weight.grad.clone()
        pyg_sar.all_reduce_gradients(model)
        pyg_sar.broadcast_parameters(model)
        check_parameters_equal(model)  # rows differ between ranks: not compared
        out["helpers_skip"] = bool(torch.equal(model.embedding.weight.grad, grad))
        # a copy (deepcopy, pickle) after training over the partition: same class and rows,
        # the table still rank-local, no communicator copied
        emb = model.get_embedding(part.edge_index).detach()
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        copies = [copy.deepcopy(model), torch.load(buffer, weights_only=False)]
        out["copies_equal"] = all(
            type(c) is type(model) and is_rank_local(c.embedding.weight)
            and torch.equal(c.get_embedding(part.edge_index), emb) for c in copies)
    out["pos"] = rel(got["pos"], ref_pos[mine])
    out["neg"] = rel(got["neg"], ref_neg[mine])
    out["grad"] = rel(got["grad"], ref_grad[ids])
    out["curve"] = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    out["steps"] = len(losses)
    out["final"] = rel(model.embedding.weight, ref.embedding.weight[ids])
    out["rows"] = int(model.embedding.weight.shape[0])
    # link_pred_loss: global BCE over every rank's pairs (positives 1, negatives 0)
    for m in (model, ref):
        m.embedding.weight.grad = None
    labels = torch.cat([torch.ones(len(src)), torch.zeros(len(src))]).double()
    ref_pred = ref(data.edge_index, torch.cat([pos, torch.stack([src, neg])], dim=1))
    ref_bce = ref.link_pred_loss(ref_pred, labels)
    ref_bce.backward()
    pred = model(part.edge_index, torch.cat([torch.stack([my_src, my_pos]),
                                             torch.stack([my_src, my_neg])], dim=1))
    my_labels = torch.cat([torch.ones(len(my_src)), torch.zeros(len(my_src))]).double()
    bce = model.link_pred_loss(pred, my_labels)
    bce.backward()
    out["bce"] = abs(float(bce) - float(ref_bce)) / abs(float(ref_bce))
    out["bce_grad"] = rel(model.embedding.weight.grad, ref.embedding.weight.grad[ids])
    if recommend:
        items = torch.arange(n_users, data.num_nodes)
        with torch.no_grad():
            top = model.recommend(part.edge_index, src_index=None, dst_index=new[items], k=5)
            ref_top = ref.recommend(data.edge_index, src_index=ids, dst_index=items, k=5)
        old = torch.empty_like(new)
        old[new] = torch.arange(new.numel())
        out["recommend_equal"] = bool(torch.equal(old[top], ref_top))
    return out


def suite(ctx, cases: list, parts: dict, checkpoint_root: str) -> dict:
    """Every case ``[graph, mode, flags]``; the result per case key (a case that raises fails
    the rank: the ranks' collectives must stay in step)."""
    results = {}
    for name, mode, flags in cases:
        key = f"{name}/{mode}/{flags}" if flags else f"{name}/{mode}"
        ckpt = str(Path(checkpoint_root) / key.replace("/", "_")) if "resume" in flags \
            else None
        results[key] = case(ctx, name, mode, parts[name], checkpoint_dir=ckpt,
                            recommend="recommend" in flags)
    return results
