"""Rank-side cases of tests/link/test_infomax.py: PyG's DeepGraphInfomax converted and trained
on a rank's part of Cora (float64) against single-process PyG on the whole graph (the oracle,
the same corruption object type, so the same permutations), many cases per launch.

Every rank builds the same reference model (seeded) and trains it on the whole graph; the
converted copy trains on the rank's part. A case reports relative errors of the embeddings,
the corrupted embeddings and the summary at the first step, the loss curve and the final
parameters, the rows ``test`` gathers (against the oracle's, in rank order) and, where
scikit-learn is installed, both test accuracies. ``refusals`` checks that a summary that is not
a function of the node mean and a corruption that shuffles within a rank raise on EVERY rank.
"""
from __future__ import annotations

import copy

import torch
from torch_geometric.nn import DeepGraphInfomax, GCNConv

import pyg_sar
from pyg_sar.nn import infomax
from tests.closeness import rel_norm_error as rel

HIDDEN, STEPS, LR = 32, 6, 0.01


class Encoder(torch.nn.Module):
    """PyG's examples/infomax_transductive.py encoder."""

    def __init__(self, in_channels: int, hidden_channels: int) -> None:
        super().__init__()
        self.conv = GCNConv(in_channels, hidden_channels)
        self.prelu = torch.nn.PReLU(hidden_channels)

    def forward(self, x, edge_index):
        return self.prelu(self.conv(x, edge_index))


def graph():
    from pyg_sar.datasets.planetoid import cora
    data = cora()
    data.x = data.x.double()
    return data


def summary(z, *args, **kwargs):
    return z.mean(dim=0).sigmoid()


def model_pair(num_features: int, seed: int = 0, corruption=None):
    torch.manual_seed(seed)
    ref = DeepGraphInfomax(HIDDEN, Encoder(num_features, HIDDEN), summary=summary,
                           corruption=corruption or infomax.corruption(seed=seed)).double()
    return ref, copy.deepcopy(ref)


def _every(ctx, t: torch.Tensor) -> torch.Tensor:
    """The rank's rows of ``t`` concatenated over ranks (rank order)."""
    if ctx.world_size == 1:
        return t
    return torch.cat([torch.as_tensor(r) for r in ctx.comm.allgather_object(t.tolist())])


def case(ctx, parts: str, mode: str, seed: int) -> dict:
    data = graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    x = part.x.double()
    ids = part.node_ids
    ref, model = model_pair(data.num_features, seed)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode))
    out: dict = {}
    ref_opt = torch.optim.Adam(ref.parameters(), lr=LR)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    curve = []
    for step in range(STEPS):
        for m, o in ((ref, ref_opt), (model, opt)):
            m.train()
            o.zero_grad()
        rp, rn, rs = ref(data.x, data.edge_index)
        ref_loss = ref.loss(rp, rn, rs)
        ref_loss.backward()
        pz, nz, s = model(x, part.edge_index)
        loss = model.loss(pz, nz, s)
        loss.backward()
        if step == 0:
            out["pos_z"] = rel(pz, rp[ids])
            out["neg_z"] = rel(nz, rn[ids])
            out["summary"] = rel(s, rs)
            out["grad"] = max(rel(p.grad, q.grad) for p, q in
                              zip(model.parameters(), ref.parameters()))
        curve.append(abs(float(loss) - float(ref_loss)) / abs(float(ref_loss)))
        ref_opt.step()
        opt.step()
    out["curve"] = max(curve)
    out["steps"] = len(curve)
    out["final"] = max(rel(p, q) for p, q in zip(model.parameters(), ref.parameters()))
    out["epoch_equal"] = model.corruption.epoch == ref.corruption.epoch == STEPS

    # test: the rows gathered to every rank are the oracle's, in rank order
    ref.eval()
    model.eval()
    rz, _, _ = ref(data.x, data.edge_index)
    z, _, _ = model(x, part.edge_index)
    order = _every(ctx, ids)
    want = [rz[order][data.train_mask[order]], data.y[order][data.train_mask[order]],
            rz[order][data.test_mask[order]], data.y[order][data.test_mask[order]]]
    seen = []
    base_test = DeepGraphInfomax.test
    try:
        DeepGraphInfomax.test = lambda self, *a, **k: seen.append(a[:4]) or 0.5
        model.test(z[part.train_mask], part.y[part.train_mask], z[part.test_mask],
                   part.y[part.test_mask], max_iter=150)
    finally:
        DeepGraphInfomax.test = base_test
    out["test_rows"] = max(rel(a, b) for a, b in zip(seen[0][::2], want[::2]))
    out["test_labels_equal"] = all(torch.equal(a, b) for a, b in zip(seen[0][1::2],
                                                                      want[1::2]))
    try:
        import sklearn  # noqa: F401
    except ImportError:
        out["acc"] = out["ref_acc"] = None
    else:
        out["acc"] = model.test(z[part.train_mask], part.y[part.train_mask],
                                z[part.test_mask], part.y[part.test_mask], max_iter=150)
        out["ref_acc"] = ref.test(rz[data.train_mask], data.y[data.train_mask],
                                  rz[data.test_mask], data.y[data.test_mask], max_iter=150)
    # a deep copy after training over the partition: same class, no communicator copied
    twin = copy.deepcopy(model)
    out["copy_ok"] = (type(twin) is type(model) and "_sar_context" not in vars(twin)
                      and torch.equal(twin(x, part.edge_index)[0], model(x, part.edge_index)[0]))
    return out


def _raises(fn) -> str:
    try:
        fn()
    except ValueError as exc:
        return str(exc)
    return ""


def refusals(ctx, parts: str) -> dict:
    """Each refusal raises on every rank (a rank that did not would hang the launch)."""
    data = graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    x = part.x.double()
    out = {}
    bad_summaries = {"sum": lambda z, *a, **k: z.sum(dim=0).sigmoid(),
                     "max": lambda z, *a, **k: z.max(dim=0).values}
    for name, fn in bad_summaries.items():
        _, model = model_pair(data.num_features)
        model.summary = fn
        pyg_sar.convert(model)
        out[f"summary_{name}"] = _raises(lambda m=model: m(x, part.edge_index))

    def shuffle(x, edge_index):
        return x[torch.randperm(x.size(0))], edge_index

    _, model = model_pair(data.num_features, corruption=shuffle)
    pyg_sar.convert(model)
    out["corruption"] = _raises(lambda: model(x, part.edge_index))
    # node-wise corruption and a summary marked distributed run
    _, model = model_pair(data.num_features, corruption=lambda x, ei: (-x, ei))
    model.summary = infomax.distributed_summary(
        lambda z, x, g: infomax.node_mean(z, g).sigmoid())
    pyg_sar.convert(model)
    pz, nz, s = model(x, part.edge_index)
    ref, _ = model_pair(data.num_features, corruption=lambda x, ei: (-x, ei))
    rp, rn, rs = ref(data.x, data.edge_index)
    out["nodewise"] = max(rel(pz, rp[part.node_ids]), rel(nz, rn[part.node_ids]), rel(s, rs))
    return out


def suite(ctx, cases: list, parts: str) -> dict:
    """Every case ``[mode, seed]`` and the refusals; the result per case key."""
    results = {f"{mode}/{seed}": case(ctx, parts, mode, seed) for mode, seed in cases}
    results["refusals"] = refusals(ctx, parts)
    return results
