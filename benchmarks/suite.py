"""Per-rank measurements of the benchmark suite (run under ``mpiexec`` by ``benchmarks/run.py``).

One launch per (workload, P) runs every (model, mode) in turn, so the ~3 s start-up of a rank is
paid once. For each pair, per rank:

* ``saved_mb``: bytes saved for backward during one forward (unique storages,
  ``torch.autograd.graph.saved_tensors_hooks``),
* ``peak_growth_mb``: peak RSS growth during a training step (``VmHWM`` after
  ``echo 5 > /proc/self/clear_refs`` minus ``VmRSS`` before; the launcher sets
  ``MALLOC_MMAP_THRESHOLD_`` so freed blocks go back to the OS), max over the measured steps,
* ``epoch_s``: median time of a full-batch training step (forward, loss, backward, gradient
  all-reduce, optimizer) over the measured steps, after warm-up,
* ``bytes_sent`` / ``bytes_recv`` / ``messages``: the engine's row and gradient traffic of one
  epoch (``comm.stats``), plus ``allreduce_bytes``, the gradient all-reduce payload,
* ``comm_wait_s``: time blocked in the engine's exchanges, ``allreduce_s``: time in the gradient
  all-reduce; ``compute_s = epoch_s - comm_wait_s - allreduce_s`` (medians).

``dgl_rank`` runs the same models in DGL 1.1.3 on one process (a benchmark-only peer).
"""
from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

import torch
from procmem import reset_peak, status_kib  # benchmarks/procmem.py

import pyg_sar


class TransformerNet(torch.nn.Module):
    """``layers`` TransformerConvs (hidden 32 x 4 heads), batch norm and ReLU between them: a
    softmax inside ``message``, which pyg_sar runs by destination chunks."""

    def __init__(self, in_channels: int, classes: int, layers: int = 3) -> None:
        from torch_geometric.nn import BatchNorm, TransformerConv
        super().__init__()
        sizes = [in_channels] + [32 * 4] * (layers - 1)
        self.convs = torch.nn.ModuleList(
            [TransformerConv(i, 32, heads=4) for i in sizes[:-1]]
            + [TransformerConv(sizes[-1], classes, heads=1)])
        self.norms = torch.nn.ModuleList([BatchNorm(32 * 4) for _ in range(layers - 1)])

    def forward(self, x: torch.Tensor, edge_index) -> torch.Tensor:
        for conv, norm in zip(self.convs[:-1], self.norms):
            x = norm(conv(x, edge_index)).relu()
        return self.convs[-1](x, edge_index)


def build_model(name: str, in_channels: int, classes: int, layers: int = 3) -> torch.nn.Module:
    """3-layer GraphSAGE (hidden 256), GAT or TransformerConv stack (hidden 32 x 4 heads),
    batch norm between layers."""
    from torch_geometric.nn import GAT, GraphSAGE
    if name == "sage":
        return GraphSAGE(in_channels, 256, layers, classes, norm="batch_norm")
    if name == "gat":
        return GAT(in_channels, 32 * 4, layers, classes, heads=4, norm="batch_norm")
    if name == "transformer":
        return TransformerNet(in_channels, classes, layers)
    raise ValueError(f"unknown model {name!r} (expected 'sage', 'gat' or 'transformer')")


def _saved_bytes(forward: Callable[[], torch.Tensor], loss_of) -> int:
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward()
    loss_of(out).backward()
    return sum(storages.values())


def training_step(net, forward, loss_of, opt, comm):
    """One training step of ``net`` (``forward()`` its output) with the traffic it caused:
    the step function both memory benchmarks measure."""
    def step() -> dict:
        comm.stats.reset()
        opt.zero_grad()
        loss_of(forward()).backward()
        t = time.perf_counter()
        pyg_sar.all_reduce_gradients(net)
        allreduce_s = time.perf_counter() - t
        opt.step()
        s = comm.stats
        return {"bytes_sent": s.bytes_sent, "bytes_recv": s.bytes_recv,
                "messages": s.messages, "comm_wait_s": s.wait_s, "allreduce_s": allreduce_s}
    return step


def _measure(step: Callable[[], dict], barrier: Callable[[], None], repeats: int) -> dict:
    times, growth, extra = [], [], []
    for _ in range(repeats):
        barrier()
        gc.collect()
        reset_peak()
        base = status_kib("VmRSS")
        t = time.perf_counter()
        info = step()
        times.append(time.perf_counter() - t)
        growth.append((status_kib("VmHWM") - base) / 1024)
        extra.append(info)
    med = {k: statistics.median(e[k] for e in extra) for k in extra[0]}
    epoch = statistics.median(times)
    comm = med.get("comm_wait_s", 0.0) + med.get("allreduce_s", 0.0)
    return {"epoch_s": epoch, "epoch_times_s": times, "peak_growth_mb": max(growth),
            "peak_growth_all_mb": growth, "compute_s": max(epoch - comm, 0.0), **med}


def rank_suite(ctx, parts: str, models: list[str], modes: list[str], warmup: int = 1,
               repeats: int = 5) -> list[dict]:
    """Runs on every rank: measure every (model, mode) on this rank's partition."""
    part = pyg_sar.load_partition(parts, ctx.rank)
    x, y, mask = part.x, part.y, part.train_mask
    classes = int(part.meta["num_classes"])
    comm = ctx.comm
    results = []
    for model in models:
        for mode in modes:
            if mode == "pyg" and ctx.world_size != 1:
                continue  # the plain single-process reference exists at P = 1 only
            torch.manual_seed(0)
            net = build_model(model, x.shape[1], classes)
            if mode == "pyg":
                graph = part.global_edge_index()
            else:
                pyg_sar.convert(net, pyg_sar.SARConfig(mode=mode))
                pyg_sar.broadcast_parameters(net)
                graph = part.graph
            opt = torch.optim.Adam(net.parameters(), lr=0.01)
            grad_bytes = sum(p.numel() * p.element_size() for p in net.parameters())

            def loss_of(out):
                return pyg_sar.nn.functional.cross_entropy(out, y, mask)

            step = training_step(net, lambda net=net, graph=graph: net(x, graph), loss_of,
                                 opt, comm)

            for _ in range(warmup):
                step()
            opt.zero_grad()
            saved = _saved_bytes(lambda net=net, graph=graph: net(x, graph), loss_of)
            row = _measure(step, comm.barrier, repeats)
            row.update(model=model, mode=mode, rank=ctx.rank, saved_mb=saved / 2**20,
                       allreduce_bytes=grad_bytes if ctx.world_size > 1 else 0,
                       num_nodes=part.num_nodes, halo_rows=sum(part.graph.recv_counts),
                       threads=torch.get_num_threads())
            results.append(row)
            del net, opt, graph
            gc.collect()
    return results


class _DGLNet(torch.nn.Module):
    """The same 3-layer models in DGL: SAGE (mean, hidden 256) / GAT (32 x 4 heads), batch norm."""

    def __init__(self, name: str, in_channels: int, classes: int, layers: int = 3) -> None:
        super().__init__()
        from dgl.nn import GATConv, SAGEConv
        self.name = name
        self.convs, self.norms = torch.nn.ModuleList(), torch.nn.ModuleList()
        dim = in_channels
        for i in range(layers):
            last = i == layers - 1
            if name == "sage":
                self.convs.append(SAGEConv(dim, classes if last else 256, "mean"))
                dim = 256
            else:  # as PyG's GAT: hidden layers concatenate heads, the last averages them
                self.convs.append(GATConv(dim, classes if last else 32, 4))
                dim = 128
            if not last:
                self.norms.append(torch.nn.BatchNorm1d(dim))

    def forward(self, g, x: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(g, x)
            if self.name == "gat":
                x = x.mean(1) if i == len(self.convs) - 1 else x.flatten(1)
            if i < len(self.norms):
                x = self.norms[i](x).relu()
        return x


def dgl_rank(ctx, parts: str, models: list[str], warmup: int = 1, repeats: int = 5) -> list:
    """Single-process DGL peer (P = 1 partition): the same measurements, no communication."""
    import dgl
    if ctx.world_size != 1:
        raise ValueError(f"the DGL peer runs on one process (got world size {ctx.world_size})")
    part = pyg_sar.load_partition(parts, 0)
    x, y, mask = part.x, part.y, part.train_mask
    ei = part.global_edge_index()
    plain = dgl.graph((ei[0], ei[1]), num_nodes=x.shape[0])
    # PyG's GATConv adds self-loops itself; DGL's expects them in the graph.
    looped = dgl.add_self_loop(dgl.remove_self_loop(plain))
    results = []
    for model in models:
        torch.manual_seed(0)
        net = _DGLNet(model, x.shape[1], int(part.meta["num_classes"]))
        g = looped if model == "gat" else plain
        opt = torch.optim.Adam(net.parameters(), lr=0.01)

        def loss_of(out):
            return torch.nn.functional.cross_entropy(out[mask], y[mask])

        def step(net=net, opt=opt, g=g) -> dict:
            opt.zero_grad()
            loss_of(net(g, x)).backward()
            opt.step()
            return {"bytes_sent": 0, "bytes_recv": 0, "messages": 0, "comm_wait_s": 0.0,
                    "allreduce_s": 0.0}

        for _ in range(warmup):
            step()
        opt.zero_grad()
        saved = _saved_bytes(lambda net=net, g=g: net(g, x), loss_of)
        row = _measure(step, lambda: None, repeats)
        row.update(model=model, mode="dgl", rank=0, saved_mb=saved / 2**20, allreduce_bytes=0,
                   num_nodes=part.num_nodes, halo_rows=0, threads=torch.get_num_threads(),
                   dgl_version=dgl.__version__)
        results.append(row)
        del net, opt
        gc.collect()
    return results
