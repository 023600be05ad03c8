"""The main job: full-batch node classification with an unchanged PyG model over P ranks.

Examples::

    python -m pyg_sar.partition --dataset cora --num-parts 2 --out parts/cora-2
    mpiexec -n 2 python -m pyg_sar.train --parts parts/cora-2 --model gcn
    python -m pyg_sar.train --dataset cora --model gcn          # one process, no launcher
    mpiexec -n 2 python -m pyg_sar.train --dataset cora --precision bf16-mixed \
        --wire-dtype bfloat16                                   # bf16 compute and traffic

``--precision`` takes Lightning's names: ``32`` (the ``--dtype`` throughout), ``bf16-mixed``
(the forward passes under ``torch.autocast`` in bf16 on the features' device: matmuls in
bf16, parameters, optimizer and loss in float32) and ``bf16-true`` (``model.bfloat16()`` and
bf16 features: parameters and optimizer state in bf16 too). The loss is computed in float32
from the output in both. ``--wire-dtype bfloat16`` sends boundary rows and their gradients as
bf16 (``SARConfig(wire_dtype=torch.bfloat16)``); ``float32`` (the default) sends them in their
own dtype, uncast.

With ``--dataset`` and several ranks, rank 0 partitions the dataset into ``--parts-dir`` first.
Only the public API is used here.
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
from pyg_sar.cli_errors import USER_ERRORS, report_error
from pyg_sar.cli_types import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)
from pyg_sar.datasets.registry import KNOWN_NAMES, is_hetero_dataset, is_known_dataset
from pyg_sar.distributed.terminal import terminal_columns, writes_to_terminal
from pyg_sar.nn.functional import accuracy, cross_entropy
from pyg_sar.partition.assign import BALANCES, METHODS
from pyg_sar.train_common import DTYPES, EpochLog, build_model
from pyg_sar.train_common import peak_rss_mb as _peak_rss_mb
from pyg_sar.train_common import write_json as _write_json

MODELS = ("gcn", "sage", "gin", "gat")
PRECISIONS = ("32", "bf16-mixed", "bf16-true")
# --wire-dtype: SARConfig.wire_dtype ("float32": rows cross in their own dtype, no cast)
WIRE_DTYPES = {"float32": None, "bfloat16": torch.bfloat16}
PROGRESS = ("auto", "bar", "log")


# Rank variables of the launchers (MPICH/Intel MPI, Open MPI, MVAPICH, PMIx, torchrun).
_RANK_ENV = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK", "RANK")


def _launch_rank() -> int:
    """This process's rank as its launcher set it (0 without a launcher), before init()."""
    for name in _RANK_ENV:
        if name in os.environ:
            try:
                return int(os.environ[name])
            except ValueError:
                return 0
    return 0


EXAMPLES = """examples:
  mpiexec -n 2 python -m pyg_sar.train                      Cora, GCN, 2 ranks
  mpiexec -n 4 python -m pyg_sar.train --dataset citeseer --model gat --epochs 100
  python -m pyg_sar.partition --dataset cora --num-parts 2 --out parts
  mpiexec -n 2 python -m pyg_sar.train --parts parts --checkpoint ckpt --resume auto
  torchrun --standalone --nproc-per-node 2 --max-restarts 3 -m pyg_sar.train \\
      --checkpoint ckpt --resume auto                           restarted after a failure
  python -m pyg_sar.train --reference                       plain PyG, one process
"""


class _Parser(argparse.ArgumentParser):
    """Every rank of a launch parses the same arguments: only rank 0 prints the error."""

    def error(self, message: str):
        if _launch_rank() != 0:
            self.exit(2)
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m pyg_sar.train", description=__doc__.split("\n")[0],
                usage="%(prog)s [--parts DIR | --dataset NAME] [options]",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--parts", help="partition folder written by pyg_sar.partition")
    src.add_argument("--dataset", default=None,
                     help=f"built-in dataset, partitioned on the fly: {', '.join(KNOWN_NAMES)} "
                          f"(default: cora)")
    p.add_argument("--parts-dir", default=None,
                   help="where --dataset is partitioned (default: "
                        "runs/parts-<dataset>-<P>-<method>)")
    p.add_argument("--method", choices=METHODS, default="metis",
                   help="partition method for --dataset")
    p.add_argument("--balance", choices=BALANCES, default=None,
                   help="what --dataset's parts hold equal shares of: nodes, or edges (nodes "
                        "and in-edges); default: edges for metis with 4 or more ranks, nodes "
                        "otherwise")
    p.add_argument("--rmat-nodes", type=positive_int, default=None,
                   help="with --dataset rmat: nodes of the generated graph (default 100,000)")
    p.add_argument("--rmat-edges", type=positive_int, default=None,
                   help="with --dataset rmat: requested directed edges (default 1,000,000)")
    p.add_argument("--task", choices=("node", "link"), default="node",
                   help="node classification (default) or link prediction (pyg_sar.train_link)")
    p.add_argument("--model", choices=MODELS, default="gcn",
                   help="PyG model class (default: %(default)s)")
    p.add_argument("--layers", type=positive_int, default=2,
                   help="message-passing layers (default: %(default)s)")
    p.add_argument("--hidden", type=positive_int, default=16,
                   help="hidden channels (default: %(default)s)")
    p.add_argument("--heads", type=positive_int, default=8,
                   help="attention heads, with --model gat (default: %(default)s)")
    p.add_argument("--dropout", type=probability, default=0.5,
                   help="dropout probability in [0, 1) (default: %(default)s)")
    p.add_argument("--norm", choices=("none", "batch_norm"), default="none",
                   help="normalisation between layers (default: %(default)s)")
    p.add_argument("--epochs", type=positive_int, default=200,
                   help="training epochs (default: %(default)s)")
    p.add_argument("--lr", type=positive_float, default=0.01,
                   help="Adam learning rate (default: %(default)s)")
    p.add_argument("--weight-decay", type=non_negative_float, default=5e-4,
                   help="Adam weight decay (default: %(default)s)")
    p.add_argument("--mode", choices=("sar", "sa", "halo"), default="sar",
                   help="sar: linear memory, remote rows fetched again for backward; sa: "
                        "fetched rows kept for backward; halo: every remote row fetched once "
                        "per layer (default: %(default)s)")
    p.add_argument("--pipeline-depth", type=non_negative_int, default=None,
                   help="block fetches in flight ahead of the computation (default: 1 on "
                        "gloo/NCCL, 0 on MPI, where data moves only inside waits)")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32",
                   help="storage dtype of parameters and features (default float32)")
    p.add_argument("--precision", choices=PRECISIONS, default="32",
                   help="32: --dtype throughout; bf16-mixed: forward under torch.autocast "
                        "(bf16 matmuls, float32 parameters); bf16-true: model and features "
                        "in bf16. The loss is float32 in all (default 32)")
    p.add_argument("--wire-dtype", choices=tuple(WIRE_DTYPES), default="float32",
                   help="dtype of the boundary rows and gradients that cross the network: "
                        "float32 sends them in their own dtype (no cast), bfloat16 rounds "
                        "wider rows to bf16 (half the bytes of float32; default float32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default=None, help="mpi, gloo or nccl (default: by launcher)")
    p.add_argument("--metrics", default=None,
                   help="write the run's metrics JSON here at the end; in full-batch node "
                        "classification each epoch's record is also appended to PATH's stem "
                        "+ .epochs.jsonl as the epoch ends (kept if the run stops early)")
    p.add_argument("--progress", choices=PROGRESS, default="auto",
                   help="rank 0's per-epoch progress: a tqdm bar, log lines, or auto: the bar "
                        "when its output reaches a terminal (directly, or forwarded by mpiexec "
                        "or torchrun), log lines otherwise")
    p.add_argument("--log-every", type=positive_int, default=10)
    p.add_argument("--eval-every", type=positive_int, default=1,
                   help="evaluate (one more forward pass) every N epochs and at the end")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint folder: save the training state there (see --resume)")
    p.add_argument("--checkpoint-every", type=positive_int, default=10,
                   help="save a checkpoint every N epochs (and after the last one)")
    p.add_argument("--resume", nargs="?", const="latest", choices=("latest", "auto"),
                   default=None, metavar="auto",
                   help="continue from the latest checkpoint in --checkpoint (bit-identical "
                        "to a run that was never interrupted; an error if there is none). "
                        "--resume auto: continue when --checkpoint holds a checkpoint, else "
                        "start fresh, so a launcher can restart the same command "
                        "(torchrun --max-restarts, a requeued Slurm job)")
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of an error (default: one line naming the cause)")
    p.add_argument("--reference", action="store_true",
                   help="train the plain, unconverted PyG model on the whole graph in this one "
                        "process instead (the single-process baseline)")
    from pyg_sar.sampling.train_loop import add_arguments
    add_arguments(p)  # --sampler, --fanout, --batch-size, --bulk, ... (minibatch training)
    from pyg_sar.compression.cli import add_arguments as add_compression_arguments
    add_compression_arguments(p)  # --compression, --schedule, ..., --compression-start-step
    from pyg_sar.train_link import add_arguments as add_link_arguments
    add_link_arguments(p)  # --num-val, --num-test, --neg-method, --hits-k (--task link)
    return p


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """Parse and cross-check the arguments; a bad combination is an argparse error (exit
    status 2, naming the flag) before anything is loaded or launched."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint (the folder to resume from)")
    if args.dataset is not None and not is_known_dataset(args.dataset):
        parser.error(f"argument --dataset: unknown dataset {args.dataset!r} (known: "
                     f"{', '.join(KNOWN_NAMES)})")
    if args.dataset is not None and is_hetero_dataset(args.dataset):
        parser.error(f"argument --dataset: {args.dataset!r} is a heterogeneous graph "
                     f"(HeteroData); this CLI trains homogeneous models: partition it with "
                     f"python -m pyg_sar.partition and train a to_hetero / HeteroConv model "
                     f"from a script")
    if (args.rmat_nodes or args.rmat_edges) and (args.dataset or "").lower() != "rmat":
        parser.error(f"--rmat-nodes / --rmat-edges size the generated graph of --dataset rmat "
                     f"(got --dataset {args.dataset!r})")
    if args.balance is not None and (args.parts or args.reference):
        parser.error("argument --balance: it applies when --dataset is partitioned on the "
                     "fly, not to --parts (already partitioned) or --reference")
    if args.reference and args.parts:
        parser.error("--reference trains plain PyG on the whole --dataset in one process; "
                     "it does not take --parts")
    if args.parts and _is_hetero_folder(args.parts):
        parser.error(f"argument --parts: '{args.parts}' holds a heterogeneous partition "
                     f"(written from a HeteroData); this CLI trains homogeneous node "
                     f"classification. Load it with pyg_sar.load_partition (a HeteroPartition) "
                     f"and train a to_hetero / HeteroConv model, or RGCNConv on "
                     f"part.to_homogeneous(), from a script: see examples/hetero_rgcn.py")
    from pyg_sar.compression.cli import check_arguments as check_compression_arguments
    check_compression_arguments(parser, args)
    if args.precision != "32" and args.dtype != "float32":
        parser.error(f"--precision {args.precision} computes in bf16 from float32 storage; it "
                     f"does not combine with --dtype {args.dtype}")
    if args.wire_dtype != "float32" and args.reference:
        parser.error(f"--wire-dtype {args.wire_dtype} casts what crosses the network between "
                     f"ranks; --reference trains plain PyG in one process")
    if args.sampler is not None:
        for flag, value, default in (("--precision", args.precision, "32"),
                                     ("--wire-dtype", args.wire_dtype, "float32")):
            if value != default:
                parser.error(f"{flag} {value} applies to full-batch training, not to "
                             f"--sampler")
    from pyg_sar.train_link import check_arguments as check_link_arguments
    check_link_arguments(parser, args)
    return args


def _is_hetero_folder(parts: str) -> bool:
    """Whether the folder's ``meta.json`` has a ``hetero`` section (a missing or malformed one
    is reported later, by ``pyg_sar.load_partition``)."""
    try:
        meta = json.loads((Path(parts) / "meta.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "hetero" in meta


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


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except KeyboardInterrupt as interrupt:  # Ctrl-C (or PeerInterrupted): one line per job
        from pyg_sar.distributed.context import release_after_interrupt, report_interrupt
        report_interrupt()  # ranks not interrupted themselves stop too, quietly
        ctx = pyg_sar.get_context()
        if (ctx.rank if ctx is not None else _launch_rank()) == 0:
            print(_interrupted(args, getattr(interrupt, "epoch", None)), file=sys.stderr,
                  flush=True)
        release_after_interrupt()  # the others exit only after rank 0's line, all together
        return 130  # 128 + SIGINT, as a shell reports it
    except USER_ERRORS as exc:  # the cause in one line per rank, not a traceback per rank
        if args.debug:
            raise
        ctx = pyg_sar.get_context()
        if ctx is not None:
            return report_error("pyg_sar.train", exc, ctx.rank, ctx.world_size)
        launched = any(name in os.environ for name in _RANK_ENV)
        return report_error("pyg_sar.train", exc, _launch_rank(), 2 if launched else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
