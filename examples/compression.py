"""Compressing what crosses the network, for a slow link (GraphSAGE, CiteSeer).

    mpiexec -n 2 python examples/compression.py                  # VARCO
    mpiexec -n 2 python examples/compression.py --codec none     # full
    mpiexec -n 2 python examples/compression.py --codec quantize --ratio 4
    # Over a real, rate-limited link (two network-namespace hosts, root):
    python examples/across_hosts.py --rate 100mbit examples/compression.py

A compressor sits on the rows that cross the network, forward (features of
remote neighbours) and backward (their gradients). VARCO (Cervino et al.,
2024) truncates each row to its first C / r channels, with a ratio r that
falls linearly from --ratio to 1 (lossless) over training: early, noisy
epochs send little and training ends on full communication. The last layer's
input is never compressed (``all_but_last``). Every byte sent is counted in
``comm.traffic``; the script prints the bytes all ranks sent per epoch.
"""
import argparse
import os.path as osp

import torch

import pyg_sar
import torch_geometric.transforms as T
from pyg_sar.compression import (
    Compressor,
    Fixed,
    Quantize,
    RandomSubset,
    Truncate,
    all_but_last,
    varco,
)
from pyg_sar.datasets import Planetoid
from torch_geometric.nn import GraphSAGE

parser = argparse.ArgumentParser()
parser.add_argument('--dataset', type=str, default='CiteSeer')
parser.add_argument('--codec', type=str, default='truncate',
                    choices=['none', 'truncate', 'subset', 'quantize'])
parser.add_argument('--ratio', type=float, default=32.0,
                    help='compression ratio (the start of the VARCO schedule)')
parser.add_argument('--schedule', type=str, default='varco',
                    choices=['varco', 'fixed'])
parser.add_argument('--hidden_channels', type=int, default=256)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=100)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

path = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data', 'Planetoid')
dataset = Planetoid(path, args.dataset, transform=T.NormalizeFeatures())
data = pyg_sar.distribute(dataset[0])

config = pyg_sar.SARConfig()
comp = None
if args.codec != 'none':
    codec = {'truncate': Truncate(), 'subset': RandomSubset(),
             'quantize': Quantize()}[args.codec]
    # VARCO's slope 5: lossless after a fifth of the epochs.
    schedule = (varco(args.ratio, 1.0, slope=5, total_steps=args.epochs)
                if args.schedule == 'varco' else Fixed(args.ratio))
    comp = Compressor(codec, schedule, seed=args.seed)
    config = pyg_sar.SARConfig(compression=all_but_last(comp))

model = GraphSAGE(dataset.num_features, args.hidden_channels, 3,
                  dataset.num_classes, dropout=0.5)
pyg_sar.convert(model, config)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
traffic = pyg_sar.init().comm.traffic  # bytes this rank sent, by layer


def train():
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = pyg_sar.nn.functional.cross_entropy(out, data.y, data.train_mask)
    loss.backward()
    optimizer.step()
    if comp is not None:
        comp.step()  # the schedule's clock: one step per optimizer step
    return float(loss.detach())


@torch.no_grad()
def test():
    model.eval()  # evaluation is never compressed
    pred = model(data.x, data.edge_index).argmax(dim=-1)
    return [pyg_sar.nn.functional.accuracy(pred, data.y, mask)
            for mask in (data.train_mask, data.val_mask, data.test_mask)]


total_bytes = 0
for epoch in range(1, args.epochs + 1):
    ratio = comp.ratio() if comp is not None else 1.0
    traffic.reset()
    loss = train()
    sent = pyg_sar.global_sum(torch.tensor(traffic.totals()['sent']))
    total_bytes += int(sent)
    train_acc, val_acc, test_acc = test()
    pyg_sar.print(f'Epoch: {epoch:03d}, Ratio: {ratio:5.1f}, '
                  f'Sent: {int(sent) / 2**20:7.2f} MiB, Loss: {loss:.4f}, '
                  f'Train: {train_acc:.4f}, Val: {val_acc:.4f}, '
                  f'Test: {test_acc:.4f}')
pyg_sar.print(f'Training sent {total_bytes / 2**20:.1f} MiB over all ranks')
