"""Rank-side cases of the ``pyg_sar.predict`` tests (every case in one launch per P).

Every rank builds the same small graphs, runs ``pyg_sar.predict`` / ``predict_pairs`` and
reports the largest difference between the file written and single-process PyG on the whole
graph, in original order; and what every rank saw when one rank fails (the errors, and the
folder's content afterwards).
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import HeteroData
from torch_geometric.nn import GAT, GraphSAGE, SAGEConv, to_hetero

import pyg_sar
import pyg_sar.predict as predict_module
from pyg_sar.datasets import sbm

NUM_NODES = 90


def make_data():
    data = sbm(num_nodes=NUM_NODES, num_classes=3, avg_degree=5.0, num_features=7, seed=4)
    data.x = data.x.double()
    return data


def make_hetero() -> HeteroData:
    gen = torch.Generator().manual_seed(3)
    data = HeteroData()
    data["paper"].x = torch.randn(40, 6, generator=gen, dtype=torch.float64)
    data["author"].x = torch.randn(25, 4, generator=gen, dtype=torch.float64)
    writes = torch.stack([torch.randint(0, 25, (80,), generator=gen),
                          torch.randint(0, 40, (80,), generator=gen)])
    data["author", "writes", "paper"].edge_index = writes
    data["paper", "rev_writes", "author"].edge_index = writes.flip(0)
    data["paper", "cites", "paper"].edge_index = torch.randint(0, 40, (2, 100), generator=gen)
    return data


class Sage(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), 8)
        self.conv2 = SAGEConv((-1, -1), 3)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


class LinkNet(torch.nn.Module):
    """The ported link model of examples/link_pred.py (decode takes pairs in new ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = GraphSAGE(7, 8, 2, 4)

    def encode(self, x, edge_index):
        return self.encoder(x, edge_index)

    def decode(self, z, edge_label_index):
        src, dst = pyg_sar.gather(z, edge_label_index.flatten(), ids="new").chunk(2)
        return (src * dst).sum(dim=-1)


def _error(fn) -> dict:
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - reported to the test
        return {"type": type(err).__name__, "message": str(err)}
    return {"type": None, "message": ""}


def _models() -> dict:
    torch.manual_seed(0)
    sage = GraphSAGE(7, 16, 2, 3, dropout=0.3).double()
    torch.manual_seed(1)
    gat = GAT(7, 8, 2, 3, heads=2, dropout=0.3).double()
    return {"sage": sage.eval(), "gat": gat.eval()}  # the references run without dropout


def suite(ctx, root: str, random_parts: str) -> dict:
    out: dict = {}
    rank, world = ctx.rank, ctx.world_size
    root_path = Path(root)
    data = make_data()
    parts = {"metis": pyg_sar.distribute(data, method="metis"),
             "random": pyg_sar.load_partition(random_parts, rank, world_size=world,
                                              context=ctx)}

    # 1. GraphSAGE and GAT over METIS and random parts, both storages, equal plain PyG
    errors, training_kept = {}, True
    for name, model in _models().items():
        model.eval()
        with torch.no_grad():
            want = model(data.x, data.edge_index).numpy()
        dist = pyg_sar.convert(copy.deepcopy(model))
        for method, part in parts.items():
            for storage, batch in (("gather", None), ("shared", None), ("gather", 7),
                                   ("shared", 5)):
                dist.train()
                path = root_path / f"{name}-{method}-{storage}-{batch}.npy"
                got = pyg_sar.predict(dist, part, out=path, storage=storage, batch=batch)
                training_kept &= dist.training
                array = np.load(got)
                errors[f"{name}/{method}/{storage}/{batch}"] = (
                    float(np.abs(array - want).max()) if array.shape == want.shape
                    else float("inf"))
    out["node_errors"] = errors
    out["training_kept"] = bool(training_kept)

    # 2. a method= callable (softmax of the logits) and a float32 model
    model = _models()["sage"]
    with torch.no_grad():
        want = model(data.x, data.edge_index).softmax(-1).numpy()
    dist = pyg_sar.convert(copy.deepcopy(model))
    path = pyg_sar.predict(dist, parts["metis"], root_path / "softmax.npy",
                           method=lambda m, d: m(d.x, d.edge_index).softmax(-1))
    out["method_error"] = float(np.abs(np.load(path) - want).max())
    model32 = copy.deepcopy(model).float()
    dist32 = pyg_sar.convert(copy.deepcopy(model32))
    path = pyg_sar.predict(dist32, parts["metis"], root_path / "f32.npy",
                           method=lambda m, d: m(d.x.float(), d.edge_index))
    array = np.load(path)
    with torch.no_grad():
        want32 = model32(data.x.float(), data.edge_index).numpy()
    out["float32"] = [str(array.dtype), float(np.abs(array - want32).max())]

    # 3. heterogeneous: a to_hetero model, one array per node type
    hdata = make_hetero()
    hpart = pyg_sar.distribute(hdata, method="random")
    torch.manual_seed(2)
    hmodel = to_hetero(Sage(), hdata.metadata(), aggr="sum").double()
    with torch.no_grad():
        hwant = {k: v.numpy() for k, v in hmodel(hdata.x_dict, hdata.edge_index_dict).items()}
    hdist = pyg_sar.convert(copy.deepcopy(hmodel))
    folder = pyg_sar.predict(hdist, hpart, root_path / "hetero")
    out["hetero_files"] = sorted(os.listdir(folder))
    out["hetero_errors"] = {t: float(np.abs(np.load(folder / f"{t}.npy") - w).max())
                            for t, w in hwant.items()}
    # written again over the existing folder
    pyg_sar.predict(hdist, hpart, root_path / "hetero", storage="shared", batch=3)
    out["hetero_shared_errors"] = {t: float(np.abs(np.load(folder / f"{t}.npy") - w).max())
                                   for t, w in hwant.items()}

    # 4. pairs: a decoder function on z (same pairs everywhere / each rank its own share),
    # and a link model (encode / decode) on the partition
    part = parts["metis"]
    model = _models()["sage"]
    with torch.no_grad():
        z_all = model(data.x, data.edge_index)
    dist = pyg_sar.convert(copy.deepcopy(model))
    with torch.no_grad():
        z = dist(part.x, part.edge_index)
    gen = torch.Generator().manual_seed(11)
    pairs = torch.randint(0, NUM_NODES, (2, 50), generator=gen)

    def dot(s, d):
        return (s * d).sum(-1)

    path = pyg_sar.predict_pairs(dot, z, pairs, root_path / "pairs_same.npy", same_pairs=True,
                                 graph=part.edge_index)
    want = dot(z_all[pairs[0]], z_all[pairs[1]]).numpy()
    got = np.load(path)
    out["pairs_same"] = float(np.abs(got - want).max()) if got.shape == want.shape else 1e9
    shares = [torch.randint(0, NUM_NODES, (2, 7 + 4 * r),
                            generator=torch.Generator().manual_seed(100 + r))
              for r in range(world)]
    path = pyg_sar.predict_pairs(dot, z, shares[rank], root_path / "pairs_spread.npy",
                                 graph=part, storage="shared")
    every = torch.cat(shares, dim=1)
    want = dot(z_all[every[0]], z_all[every[1]]).numpy()
    got = np.load(path)
    out["pairs_spread"] = float(np.abs(got - want).max()) if got.shape == want.shape else 1e9
    torch.manual_seed(5)
    link = LinkNet().double()
    with torch.no_grad():
        lz = link.encode(data.x, data.edge_index)
    want = dot(lz[pairs[0]], lz[pairs[1]]).numpy()
    dlink = pyg_sar.convert(copy.deepcopy(link))
    dlink.train()
    path = pyg_sar.predict_pairs(dlink, part, pairs, root_path / "pairs_link.npy",
                                 same_pairs=True, batch=4)
    got = np.load(path)
    out["pairs_link"] = float(np.abs(got - want).max()) if got.shape == want.shape else 1e9
    out["pairs_link_training_kept"] = dlink.training

    # 5. failures: nothing under the final name (nor a temporary file), an error on every rank
    last = world - 1
    fail_dir = root_path / "fail"
    if rank == 0:
        fail_dir.mkdir()
    ctx.comm.barrier()
    dist = pyg_sar.convert(copy.deepcopy(_models()["sage"]))

    def raising(m, d):
        y = m(d.x, d.edge_index)  # the forward runs on every rank, then this rank fails
        if ctx.rank == last:
            raise RuntimeError("simulated failure of the method")
        return y

    def short(m, d):
        y = m(d.x, d.edge_index)
        return y[:-1] if ctx.rank == last else y

    failures = {}
    for storage in ("gather", "shared"):
        failures[f"method/{storage}"] = _error(lambda storage=storage: pyg_sar.predict(
            dist, part, fail_dir / "raise.npy", method=raising, storage=storage))
        failures[f"short/{storage}"] = _error(lambda storage=storage: pyg_sar.predict(
            dist, part, fail_dir / "short.npy", method=short, storage=storage))
    # a write that fails (rank 0 writes everything under "gather"; the last rank its own rows
    # under "shared")
    original = predict_module._write_chunk

    def failing_write(array, ids, rows):
        raise OSError(28, "No space left on device (simulated)")

    for storage, who in (("gather", 0), ("shared", last)):
        if rank == who:
            predict_module._write_chunk = failing_write
        try:
            failures[f"write/{storage}"] = _error(lambda storage=storage: pyg_sar.predict(
                dist, part, fail_dir / "write.npy", storage=storage, batch=10))
        finally:
            predict_module._write_chunk = original
    failures["bad_storage"] = _error(lambda: pyg_sar.predict(dist, part, fail_dir / "x.npy",
                                                             storage="nfs"))
    out["failures"] = failures
    ctx.comm.barrier()
    out["fail_dir"] = sorted(os.listdir(fail_dir))
    # the previous output survives a failed rewrite
    good = root_path / "sage-metis-gather-None.npy"
    before = np.load(good).tobytes()
    out["overwrite_failure"] = _error(lambda: pyg_sar.predict(dist, part, good, method=raising))
    ctx.comm.barrier()
    out["old_output_intact"] = np.load(good).tobytes() == before
    out["leftovers"] = sorted(n for n in os.listdir(root_path) if n.startswith("."))
    return out
