"""Rank side of tests/api/test_convert_before_init.py (run under ``mpiexec -n 2``): a PyG
script's order, ``convert`` before ``distribute`` (``model, data = pyg_sar.convert(model),
pyg_sar.distribute(data)``), with a model that reads its graph from a global ``data`` (PyG's
``sgc.py``) and each rank initialising its own parameters. Three SGD steps in float64 must
equal one process's, without the "first step is not exact" warning (warnings are errors).

Prints one JSON line: the largest relative difference of the parameters from one process's.
"""
import json
import os
import warnings

import torch
import torch.nn.functional as F
from torch_geometric.nn import SGConv

import pyg_sar
import pyg_sar.nn.functional as SF
from pyg_sar.datasets import cora

warnings.simplefilter("error", RuntimeWarning)
torch.set_default_dtype(torch.float64)
data = cora()
data.x = data.x.double()


class Net(torch.nn.Module):  # PyG's sgc.py: forward() takes no arguments
    def __init__(self):
        super().__init__()
        self.conv1 = SGConv(data.num_features, int(data.y.max()) + 1, K=2, cached=True)

    def forward(self):
        return F.log_softmax(self.conv1(data.x, data.edge_index), dim=1)


def train(model, loss_of) -> list[torch.Tensor]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    for _ in range(3):
        optimizer.zero_grad()
        loss_of(model()).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


torch.manual_seed(0)
reference = train(Net(), lambda out: F.nll_loss(out[data.train_mask], data.y[data.train_mask]))

# Rank 0 starts from the reference's parameters, rank 1 from others (mpiexec's PMI_RANK).
torch.manual_seed(int(os.environ.get("PMI_RANK", "0")))
model, data = pyg_sar.convert(Net()), pyg_sar.distribute(data)
got = train(model, lambda out: SF.nll_loss(out, data.y, data.train_mask))
error = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(got, reference))
pyg_sar.print(json.dumps({"rel_error": error}))
