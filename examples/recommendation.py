"""LightGCN recommendation on a generated user-item graph, full-batch over the ranks of a job.

    mpiexec -n 2 python examples/recommendation.py
    mpiexec -n 2 python examples/recommendation.py --compare   # and plain PyG, whole graph
    python examples/recommendation.py --users 4000 --items 2000

PyG's ``examples/lightgcn.py`` (its ``LightGCN``, ``recommendation_loss`` and evaluation) on a
graph generated here instead of AmazonBook: users and items with latent factors
(``pyg_sar.datasets.synthetic_bipartite.user_item``), a fifth of each user's interactions held
out. Training is full-batch: every epoch scores every training interaction against one
negative item, drawn as a function of ``(seed, epoch, pair)``, so any number of ranks trains
on the same pairs. What pyg_sar changes:

* ``pyg_sar.distribute`` partitions the user-item graph; ``pyg_sar.convert`` shards
  ``LightGCN``'s embedding table by owner rank (each rank keeps its own nodes' rows) and
  fetches the ends of each pair from their owners; ``recommendation_loss`` is global;
* pairs are in the partition's new node ids (rank ``r`` owns ``[node_offsets[r],
  node_offsets[r + 1])``; ``part.node_ids`` are the original ids of its rows);
* ``pyg_sar.link.topk_items`` ranks the items of every rank for each of the rank's users
  (training items excluded) and ``recall_at_k`` / ``ndcg_at_k`` average over all users.

``--compare`` also trains plain PyG on the whole graph in rank 0's process, with the same
initial table and negatives, and evaluates it with PyG's ``LinkPredRecall`` / ``LinkPredNDCG``:
both columns are printed per evaluation (equal up to float32 rounding).
"""
import argparse

import torch

import pyg_sar
from pyg_sar.datasets.synthetic_bipartite import user_item
from pyg_sar.link import ndcg_at_k, recall_at_k, topk_items
from pyg_sar.ops.sampling_rng import dart_tensor, make_key
from torch_geometric.data import Data
from torch_geometric.metrics import LinkPredNDCG, LinkPredRecall
from torch_geometric.nn import LightGCN

parser = argparse.ArgumentParser()
parser.add_argument('--users', type=int, default=1000)
parser.add_argument('--items', type=int, default=500)
parser.add_argument('--interactions', type=int, default=20)
parser.add_argument('--embedding_dim', type=int, default=64)
parser.add_argument('--num_layers', type=int, default=2)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=50)
parser.add_argument('--eval_every', type=int, default=10)
parser.add_argument('--k', type=int, default=20)
parser.add_argument('--seed', type=int, default=0)
parser.add_argument('--dtype', choices=('float32', 'float64'), default='float32')
parser.add_argument('--compare', action='store_true',
                    help='also train plain PyG on the whole graph (rank 0) and print both')
args = parser.parse_args()

ctx = pyg_sar.init()
data = user_item(args.users, args.items, interactions_per_user=args.interactions,
                 seed=args.seed)
num_users, num_items = data.num_users, data.num_items
half = data.edge_index.size(1) // 2
train_pairs = data.edge_index[:, :half]  # (user, item) in original ids; pair j has key j
test_pairs = data.edge_label_index


def negative_items(keys, epoch):
    """One item per training pair, a function of (seed, epoch, key) only."""
    u = dart_tensor(torch.full_like(keys, make_key(args.seed, epoch)), keys)
    return num_users + (u * num_items).long().clamp(max=num_items - 1)


# ---- pyg_sar: the graph partitioned over the ranks ------------------------------------------
part = pyg_sar.distribute(Data(edge_index=data.edge_index, num_nodes=data.num_nodes))
graph = part.edge_index
lo, hi = graph.node_offsets[ctx.rank], graph.node_offsets[ctx.rank + 1]
# original id -> new id: rank r holds the new ids [node_offsets[r], node_offsets[r + 1]), its
# nodes in local order (part.node_ids: their original ids)
original = pyg_sar.gather(part.node_ids, torch.arange(data.num_nodes), ids="new",
                          node_offsets=graph)
new_of = torch.empty(data.num_nodes, dtype=torch.long)
new_of[original] = torch.arange(data.num_nodes)
# this rank is responsible for the pairs of the users it owns
train_new = new_of[train_pairs]
mine = (train_new[0] >= lo) & (train_new[0] < hi)
keys, pos = mine.nonzero().view(-1), train_new[:, mine]

dtype = getattr(torch, args.dtype)
torch.manual_seed(args.seed)  # the same full table on every rank (and in PyG's model)
model = LightGCN(data.num_nodes, args.embedding_dim, args.num_layers).to(dtype)
reference = LightGCN(data.num_nodes, args.embedding_dim, args.num_layers).to(dtype) \
    if args.compare and ctx.rank == 0 else None
if reference is not None:
    reference.load_state_dict(model.state_dict())
model = pyg_sar.convert(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

# topk_items numbers the items of rank 0, then rank 1, ... in local order: that is their order
# by new id. item_of[j] = the original id of the item numbered j.
item_new = new_of[num_users:]
item_of = num_users + item_new.argsort()
topk_id = torch.empty(data.num_nodes, dtype=torch.long)
topk_id[item_of] = torch.arange(num_items)
local = (part.node_ids < num_users).long().cumsum(0) - 1  # local row -> index among users


def user_pairs(pairs):
    """This rank's users' pairs as (index among its users, item number)."""
    new_user = new_of[pairs[0]]
    own = (new_user >= lo) & (new_user < hi)
    return local[new_user[own] - lo], topk_id[pairs[1, own]]


train_gt, test_gt = user_pairs(train_pairs), user_pairs(test_pairs)


def train(epoch):
    model.train()
    optimizer.zero_grad()
    neg = torch.stack([pos[0], new_of[negative_items(keys, epoch)]])
    pos_rank, neg_rank = model(graph, torch.cat([pos, neg], dim=1)).chunk(2)
    loss = model.recommendation_loss(pos_rank, neg_rank)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test(k):
    model.eval()
    emb = model.get_embedding(graph)
    is_user = part.node_ids < num_users
    _, pred = topk_items(emb[is_user], emb[~is_user], k, exclude=train_gt)
    return float(recall_at_k(pred, test_gt, k)), float(ndcg_at_k(pred, test_gt, k))


# ---- plain PyG on the whole graph, same table and negatives (rank 0, --compare) -------------
if reference is not None:
    ref_optimizer = torch.optim.Adam(reference.parameters(), lr=args.lr)
    all_keys = torch.arange(half)


def train_reference(epoch):
    reference.train()
    ref_optimizer.zero_grad()
    neg = torch.stack([train_pairs[0], negative_items(all_keys, epoch)])
    pos_rank, neg_rank = reference(data.edge_index,
                                   torch.cat([train_pairs, neg], dim=1)).chunk(2)
    loss = reference.recommendation_loss(pos_rank, neg_rank)
    loss.backward()
    ref_optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test_reference(k):
    """PyG's lightgcn.py evaluation (training items excluded) with PyG's metrics."""
    reference.eval()
    emb = reference.get_embedding(data.edge_index)
    logits = emb[:num_users] @ emb[num_users:].t()
    logits[train_pairs[0], train_pairs[1] - num_users] = float('-inf')
    pred = logits.topk(k, dim=-1).indices
    gt = (test_pairs[0], test_pairs[1] - num_users)
    recall, ndcg = LinkPredRecall(k), LinkPredNDCG(k)
    recall.update(pred, gt)
    ndcg.update(pred, gt)
    return float(recall.compute()), float(ndcg.compute())


pyg_sar.print(f'{num_users} users, {num_items} items, {half} training and '
              f'{test_pairs.size(1)} held-out interactions; {ctx.world_size} rank(s)')
for epoch in range(1, args.epochs + 1):
    loss = train(epoch)
    ref_loss = train_reference(epoch) if reference is not None else None
    if epoch % args.eval_every == 0 or epoch == args.epochs:
        recall, ndcg = test(args.k)
        line = (f'Epoch: {epoch:03d}, Loss: {loss:.4f}, Recall@{args.k}: {recall:.4f}, '
                f'NDCG@{args.k}: {ndcg:.4f}')
        if reference is not None:
            ref_recall, ref_ndcg = test_reference(args.k)
            line += (f' | PyG: Loss: {ref_loss:.4f}, Recall@{args.k}: {ref_recall:.4f}, '
                     f'NDCG@{args.k}: {ref_ndcg:.4f}')
        pyg_sar.print(line)
