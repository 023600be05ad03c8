"""What ``python -m pyg_sar.train`` runs once its arguments are parsed
(:mod:`pyg_sar.train_args`): full-batch node classification over P ranks, or the plain PyG
baseline (``--reference``); ``--task link`` and ``--sampler`` hand over to
:mod:`pyg_sar.train_link` and :mod:`pyg_sar.sampling.train_loop`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import torch

import pyg_sar
from pyg_sar.distributed.terminal import terminal_columns, writes_to_terminal
from pyg_sar.nn.functional import accuracy, cross_entropy
from pyg_sar.train_args import PROGRESS
from pyg_sar.train_common import DTYPES, EpochLog, build_model
from pyg_sar.train_common import peak_rss_mb as _peak_rss_mb
from pyg_sar.train_common import write_json as _write_json

# --wire-dtype: SARConfig.wire_dtype ("float32": rows cross in their own dtype, no cast)
WIRE_DTYPES = {"float32": None, "bfloat16": torch.bfloat16}


def forward_precision(args: argparse.Namespace, device: torch.device):
    """The context of a forward pass under ``--precision``: ``torch.autocast`` in bf16 on
    ``device``'s type for ``bf16-mixed``, nothing otherwise."""
    if args.precision == "bf16-mixed":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _loss_input(args: argparse.Namespace, out: torch.Tensor) -> torch.Tensor:
    """The model's output as the loss reads it: float32 under a bf16 ``--precision``."""
    return out if args.precision == "32" else out.float()


def _dataset_kwargs(args: argparse.Namespace) -> dict:
    """``load_dataset`` keywords from ``--rmat-nodes`` / ``--rmat-edges`` (``--dataset rmat``)."""
    sizes = {"num_nodes": args.rmat_nodes, "num_edges": args.rmat_edges}
    return {k: v for k, v in sizes.items() if v is not None}


class _WholeGraph:
    """The whole dataset in the shape of a LocalPartition (for ``--reference``)."""

    def __init__(self, name: str, **kwargs) -> None:
        from pyg_sar.datasets import load_dataset
        data = load_dataset(name, **kwargs)
        self.x, self.y, self.graph = data.x, data.y, data.edge_index
        self.train_mask, self.val_mask, self.test_mask = (data.train_mask, data.val_mask,
                                                          data.test_mask)
        self.meta = {"num_classes": int(data.y.max()) + 1}


def _load(args: argparse.Namespace, ctx) -> pyg_sar.LocalPartition:
    if args.reference:
        if ctx.world_size != 1 or args.parts:
            raise ValueError("--reference runs plain PyG in one process on --dataset "
                             f"(got world size {ctx.world_size}, --parts {args.parts!r})")
        return _WholeGraph(args.dataset or "cora", **_dataset_kwargs(args))
    if args.parts:
        # The job's world size, even for one process: a 1-rank job given a P-part folder fails
        # here, naming the folder, instead of in the first forward pass.
        return pyg_sar.load_partition(args.parts, ctx.rank, world_size=ctx.world_size,
                                      context=ctx)
    name = args.dataset or "cora"
    suffix = f"-{args.balance}" if args.balance else ""
    suffix += "".join(f"-{v}" for v in _dataset_kwargs(args).values())  # R-MAT sizes
    out = Path(args.parts_dir or
               f"runs/parts-{name}-{ctx.world_size}-{args.method}{suffix}")
    if ctx.rank == 0:
        from pyg_sar.datasets import load_dataset
        data = load_dataset(name, **_dataset_kwargs(args))
        t = time.perf_counter()
        pyg_sar.partition_graph(data, ctx.world_size, out, method=args.method, seed=args.seed,
                                overwrite=True, balance=args.balance)
        print(f"partitioned {name} into {ctx.world_size} part(s) at {out} "
              f"in {time.perf_counter() - t:.2f} s", flush=True)
    ctx.comm.barrier()
    return pyg_sar.load_partition(out, ctx.rank, world_size=ctx.world_size, context=ctx)


def use_progress_bar(choice: str, lead: bool, stream=None) -> bool:
    """Whether this rank shows a tqdm bar rather than log lines (``--progress``).

    Only rank 0 (``lead``) reports progress, on stdout with its other lines (under mpiexec,
    stdout and stderr reach the terminal through separate pipes, so a bar on stderr would
    interleave with them). ``"bar"`` and ``"log"`` decide; ``"auto"`` shows the bar when
    ``stream`` (default ``sys.stdout``) ends on a terminal: it is one (one process, torchrun),
    or mpiexec forwards it to its own terminal.
    """
    if choice not in PROGRESS:
        raise ValueError(f"progress must be one of {PROGRESS} (got {choice!r})")
    if not lead or choice == "log":
        return False
    return choice == "bar" or writes_to_terminal(sys.stdout if stream is None else stream)


def _progress_bar(args: argparse.Namespace, lead: bool, first_epoch: int):
    """A tqdm bar on stdout, or ``None`` for log lines (see :func:`use_progress_bar`)."""
    if not use_progress_bar(args.progress, lead):
        return None
    from tqdm import tqdm  # a dependency of torch_geometric
    # Under mpiexec stdout is a pipe: give tqdm the width of the terminal it is forwarded to.
    ncols = None if sys.stdout.isatty() else terminal_columns(sys.stdout)
    return tqdm(total=args.epochs, initial=first_epoch - 1, desc="epochs", unit="epoch",
                file=sys.stdout, ncols=ncols)


def run(args: argparse.Namespace) -> dict:
    """Train and evaluate; returns the metrics (rank 0 also prints and writes them)."""
    if args.task == "link":
        from pyg_sar.train_link import run as run_link
        return run_link(args)
    # The launcher entry point supervises its ranks (PYG_SAR_SUPERVISE=0 turns it off).
    from pyg_sar.distributed.supervision import supervision_requested
    ctx = pyg_sar.init(backend=args.backend, supervise=supervision_requested(None, True))
    part = _load(args, ctx)
    dtype = DTYPES[args.dtype]
    if args.sampler is not None:  # minibatch training: pyg_sar.sampling.train_loop
        from pyg_sar.sampling.train_loop import run_minibatch
        metrics = run_minibatch(args, ctx, part, build_model, dtype)
        if ctx.rank == 0 and args.metrics:
            _write_json(Path(args.metrics), metrics)
        return metrics
    num_classes = int(part.meta.get("num_classes") or int(part.y.max()) + 1)
    torch.manual_seed(args.seed)  # identical initial parameters on every rank
    model = build_model(args, part.x.shape[1], num_classes).to(dtype)
    if args.precision == "bf16-true":
        model = model.bfloat16()
    if not args.reference:
        from pyg_sar.compression.cli import compressor_from_args
        config = pyg_sar.SARConfig(mode=args.mode, pipeline_depth=args.pipeline_depth,
                                   compression=compressor_from_args(args),
                                   wire_dtype=WIRE_DTYPES[args.wire_dtype])
        pyg_sar.convert(model, config)
        if args.compression_start_step:  # time one stage of a longer run (not on --resume)
            from pyg_sar.compression import step_all
            step_all(model, args.compression_start_step)
        pyg_sar.broadcast_parameters(model, ctx=ctx)
    torch.manual_seed(args.seed + 1 + ctx.rank)  # independent dropout masks per rank
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    x, y, graph = part.x.to(dtype), part.y, part.graph
    if args.precision == "bf16-true":
        x = x.bfloat16()
    lead = ctx.rank == 0
    fingerprinted = part if hasattr(part, "fingerprint") else None
    history, best_val, test_at_best, test_acc, first_epoch = [], -1.0, float("nan"), \
        float("nan"), 1
    if args.resume:
        state = pyg_sar.load_checkpoint(args.checkpoint, model, optimizer,
                                        partition=fingerprinted, ctx=ctx,
                                        missing_ok=args.resume == "auto")
        if state is not None:
            first_epoch = state.epoch + 1
            history, best_val = state.extra["history"], state.extra["best_val"]
            test_at_best, test_acc = state.extra["test_at_best"], state.extra["test_acc"]
        if lead:
            print(_resumed_line(args.checkpoint, state), flush=True)
    if not args.reference:
        from pyg_sar.distributed.sync import check_parameters_equal
        check_parameters_equal(model, ctx)  # every rank must start from the same model
    if lead:
        where = ("plain PyG, whole graph, 1 process" if args.reference else
                 f"{ctx.world_size} rank(s), mode={args.mode}, backend={ctx.backend}")
        wire = "" if args.reference else f", wire {args.wire_dtype}"
        print(f"training {args.model} ({args.layers} layers, hidden {args.hidden}) on {where}, "
              f"threads/rank={ctx.num_threads}, precision {args.precision} "
              f"(storage {args.dtype}){wire}", flush=True)

    bar = _progress_bar(args, lead, first_epoch)
    epoch = first_epoch
    epoch_log = EpochLog(args.metrics, resume=bool(args.resume)) if lead and args.metrics \
        else None
    from pyg_sar.compression import compressors_of
    from pyg_sar.distributed.traffic import EpochTraffic, summarize
    traffic, compressors = EpochTraffic(ctx.comm), compressors_of(model)
    try:
        for epoch in range(first_epoch, args.epochs + 1):
            t0 = time.perf_counter()
            traffic.start()
            model.train()
            optimizer.zero_grad()
            with forward_precision(args, x.device):
                out = model(x, graph)
            loss = cross_entropy(_loss_input(args, out), y, part.train_mask, context=ctx)
            loss.backward()
            pyg_sar.all_reduce_gradients(model, ctx)
            optimizer.step()
            ratios = {name: comp.ratio() for name, comp in compressors.items()}
            for comp in compressors.values():
                comp.step()  # the schedules advance with the optimizer
            step_time = time.perf_counter() - t0
            traffic.training_done()
            record = dict(epoch=epoch, loss=float(loss.detach()), step_time_s=step_time)
            if ratios:
                record["compression_ratio"] = ratios
            if epoch % args.eval_every == 0 or epoch == args.epochs:
                model.eval()
                with torch.no_grad(), forward_precision(args, x.device):
                    out = model(x, graph)
                out = _loss_input(args, out)
                train_acc = accuracy(out, y, part.train_mask, context=ctx)
                val_acc = accuracy(out, y, part.val_mask, context=ctx)
                test_acc = accuracy(out, y, part.test_mask, context=ctx)
                if val_acc > best_val:
                    best_val, test_at_best = val_acc, test_acc
                record.update(train_acc=train_acc, val_acc=val_acc)
            record.update(traffic.record())  # bytes per rank, layer and direction
            history.append(record)
            if epoch_log is not None:
                epoch_log.write(record)
            accs = (f"  train {record['train_acc']:.4f}  val {record['val_acc']:.4f}"
                    if "val_acc" in record else "")
            if bar is not None:
                bar.set_postfix_str(f"loss {record['loss']:.4f}{accs}", refresh=False)
                bar.update(1)
            elif lead and (epoch % args.log_every == 0 or epoch == 1 or epoch == args.epochs):
                print(f"epoch {epoch:4d}/{args.epochs}  loss {record['loss']:.4f}{accs}  "
                      f"({step_time * 1e3:.1f} ms/step)", flush=True)
            if args.checkpoint and lead:
                _write_progress(args.checkpoint, epoch)
            if args.checkpoint and (epoch % args.checkpoint_every == 0 or epoch == args.epochs):
                pyg_sar.save_checkpoint(args.checkpoint, model, optimizer, epoch, config=vars(args),
                                        partition=fingerprinted, ctx=ctx,
                                        extra=dict(history=history, best_val=best_val,
                                                   test_at_best=test_at_best, test_acc=test_acc))
    except KeyboardInterrupt as interrupt:  # main() reports it in one line
        interrupt.epoch = epoch
        if bar is not None:
            bar.close()
        raise
    finally:
        if epoch_log is not None:
            epoch_log.close()

    metrics = dict(config=vars(args), world_size=ctx.world_size, backend=ctx.backend,
                   final_test_acc=test_acc, best_val_acc=best_val,
                   test_acc_at_best_val=test_at_best, history=history,
                   peak_rss_mb=ctx.comm.allgather_object(_peak_rss_mb()),
                   traffic=summarize(history))
    if bar is not None:
        bar.close()
    if lead:
        print(f"final test accuracy: {test_acc:.4f}  (test at best val {test_at_best:.4f}, "
              f"best val {best_val:.4f})", flush=True)
        sent = metrics["traffic"]
        parts = ", ".join(f"{d} {b / 1e6:.2f}" for d, b in sent["by_direction_sent"].items())
        print(f"bytes sent by all ranks in training steps: {sent['bytes_sent'] / 1e6:.2f} MB"
              f"{f' ({parts})' if parts else ''}; in evaluation: "
              f"{sent['eval_bytes_sent'] / 1e6:.2f} MB", flush=True)
        if args.metrics:
            _write_json(Path(args.metrics), metrics)
    return metrics


# Rank 0 records the last epoch it finished next to the checkpoints (advisory, not
# durable): a restarted run then says how many epochs it computes again.
PROGRESS_FILE = "progress.json"


def _write_progress(folder: str, epoch: int) -> None:
    from pyg_sar.files import atomic_write
    atomic_write(Path(folder) / PROGRESS_FILE, json.dumps({"epoch": epoch}) + "\n")


def _resumed_line(folder: str, state) -> str:
    """What rank 0 prints on --resume: where it continues, and after a launcher's restart the
    epochs that the failed attempt had finished and this one computes again."""
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT") or os.environ.get(
        "SLURM_RESTART_COUNT")
    launcher = f" (restart {restart} by the launcher)" if restart not in (None, "0") else ""
    saved = 0 if state is None else state.epoch
    try:
        reached = int(json.loads((Path(folder) / PROGRESS_FILE).read_text())["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        reached = saved
    redone = f"; {max(0, reached - saved)} epoch(s) done before are computed again"
    if state is None:
        return f"no checkpoint in {folder} yet: starting at epoch 1{launcher}{redone}"
    return f"resumed from {state.path} after epoch {state.epoch}{launcher}{redone}"


def _interrupted(args: argparse.Namespace, epoch: Optional[int]) -> str:
    """The one line rank 0 prints after Ctrl-C: where training stopped and what is saved."""
    head = "pyg_sar.train: interrupted" + (f" at epoch {epoch}" if epoch is not None else "")
    if not args.checkpoint:
        return f"{head} (no --checkpoint: nothing saved)"
    from pyg_sar.checkpoint import read_latest
    try:
        saved = read_latest(args.checkpoint)["epoch"]
    except (OSError, ValueError):  # nothing committed yet
        return f"{head}; no checkpoint was saved yet"
    return (f"{head}; checkpoint {args.checkpoint} is intact (epoch {saved}): continue with "
            f"--resume")
