r"""Minibatch training with the bulk samplers: ``python -m pyg_sar.train --sampler sage|ladies``.

Every rank samples its minibatches (``r, r + P, ...`` of the epoch's global list) over the
partition, trains an unchanged PyG GraphSAGE on them
(``model(batch.x, batch.edge_index)[:batch.batch_size]``), and sums gradients over ranks with
:func:`pyg_sar.all_reduce_gradients` (each rank's loss is its minibatch mean divided by ``P``,
so the sum is the mean over the step's minibatches, as DDP does). A rank with one minibatch
fewer in an epoch takes a zero-gradient step, so all ranks make the same collective calls.
Test accuracy is measured on sampled minibatches of the test nodes (global counts).
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

SAMPLERS = ("sage", "ladies")


def parse_fanout(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--fanout must be comma-separated integers (got {text!r})") from None
    if not sizes:
        raise ValueError(f"--fanout needs at least one hop (got {text!r})")
    return sizes


def make_loader(args: argparse.Namespace, part, sizes: list[int], input_nodes, shuffle: bool,
                ctx):
    from pyg_sar.sampling import BulkLadiesLoader, BulkNeighborLoader
    cls = BulkNeighborLoader if args.sampler == "sage" else BulkLadiesLoader
    return cls(part, sizes, batch_size=args.batch_size, bulk=args.bulk, shuffle=shuffle,
               seed=args.seed, input_nodes=input_nodes, replicate_graph=args.replicate_graph,
               replication=args.replication, context=ctx, progress=getattr(args, "progress",
                                                                             False))


def evaluate(model: torch.nn.Module, loader, ctx, dtype: torch.dtype) -> float:
    """Accuracy over the loader's seed nodes on every rank (global counts)."""
    model.eval()
    counts = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for batch in loader:
            out = model(batch.x.to(dtype), batch.edge_index)[:batch.batch_size]
            counts[0] += float((out.argmax(1) == batch.y[:batch.batch_size]).sum())
            counts[1] += batch.batch_size
    ctx.comm.all_reduce(counts)
    return float(counts[0] / counts[1]) if counts[1] > 0 else float("nan")


def run_minibatch(args: argparse.Namespace, ctx, part, build_model, dtype: torch.dtype) -> dict:
    """Trains ``args.epochs`` epochs on sampled minibatches; returns the metrics."""
    from pyg_sar.distributed.sync import all_reduce_gradients, broadcast_parameters
    sizes = parse_fanout(args.fanout)
    args.layers = len(sizes)
    num_classes = int(part.meta.get("num_classes") or int(part.y.max()) + 1)
    torch.manual_seed(args.seed)
    model = build_model(args, part.x.shape[1], num_classes).to(dtype)
    broadcast_parameters(model)
    torch.manual_seed(args.seed + 1 + ctx.rank)  # independent dropout masks per rank
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    train = make_loader(args, part, sizes, part.train_mask, True, ctx)
    test = make_loader(args, part, sizes, part.test_mask, False, ctx)
    lead = ctx.rank == 0
    if lead:
        layout = ("replicated structure" if args.replicate_graph else
                  f"{'1.5D' if args.replication == 2 else '1D'} row partition")
        print(f"minibatch training: {args.sampler} {sizes}, batch {args.batch_size}, bulk "
              f"{args.bulk}, {train.num_global_batches} minibatches/epoch over "
              f"{ctx.world_size} rank(s) ({layout}), threads/rank={ctx.num_threads}",
              flush=True)
    history, test_acc = [], float("nan")
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        losses, steps = [], 0
        for batch in train:
            optimizer.zero_grad()
            out = model(batch.x.to(dtype), batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size]) / ctx.world_size
            loss.backward()
            all_reduce_gradients(model)
            optimizer.step()
            losses.append(float(loss) * ctx.world_size)
            steps += 1
        for _ in range(train.steps_per_epoch - steps):  # padding: a zero-gradient step
            optimizer.zero_grad()
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            all_reduce_gradients(model)
            optimizer.step()
        epoch_time = time.perf_counter() - t0
        record = dict(epoch=epoch, loss=sum(losses) / max(len(losses), 1),
                      epoch_time_s=epoch_time)
        if epoch % args.eval_every == 0 or epoch == args.epochs:
            test_acc = evaluate(model, test, ctx, dtype)
            record["test_acc"] = test_acc
        history.append(record)
        if lead:
            acc = f"  test {record['test_acc']:.4f}" if "test_acc" in record else ""
            print(f"epoch {epoch:4d}/{args.epochs}  loss {record['loss']:.4f}{acc}  "
                  f"({epoch_time:.2f} s)", flush=True)
    if lead:
        print(f"final test accuracy: {test_acc:.4f}", flush=True)
    return dict(config=vars(args), world_size=ctx.world_size, backend=ctx.backend,
                final_test_acc=test_acc, history=history)
