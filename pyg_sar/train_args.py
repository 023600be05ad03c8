"""The arguments of ``python -m pyg_sar.train``: its parser and the checks of the arguments.

Importable without torch or PyG (the choices come from :mod:`pyg_sar.names`), so that
``--help`` and a mistyped flag answer at once; :func:`parse_args` imports the compression codecs
only to check the compression flags, after everything else was parsed.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Optional

from pyg_sar.cli_types import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)
from pyg_sar.names import (
    BALANCES,
    BITS,
    CODECS,
    COMPRESS_DIRECTIONS,
    DTYPES,
    ERROR_FEEDBACK,
    KNOWN_DATASET_NAMES,
    MODELS,
    NEG_METHODS,
    PARTITION_METHODS,
    SAMPLERS,
    SCHEDULES,
    is_hetero_dataset,
    is_known_dataset,
)

DESCRIPTION = ("The main job: full-batch node classification with an unchanged PyG model over "
               "P ranks.")
PRECISIONS = ("32", "bf16-mixed", "bf16-true")
# --wire-dtype: SARConfig.wire_dtype (float32: rows cross in their own dtype, no cast)
WIRE_DTYPES = ("float32", "bfloat16")
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
    p = _Parser(prog="python -m pyg_sar.train", description=DESCRIPTION,
                usage="%(prog)s [--parts DIR | --dataset NAME] [options]",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--parts", help="partition folder written by pyg_sar.partition")
    src.add_argument("--dataset", default=None,
                     help=f"built-in dataset, partitioned on the fly: "
                          f"{', '.join(KNOWN_DATASET_NAMES)} (default: cora)")
    p.add_argument("--parts-dir", default=None,
                   help="where --dataset is partitioned (default: "
                        "runs/parts-<dataset>-<P>-<method>)")
    p.add_argument("--method", choices=PARTITION_METHODS, default="metis",
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
    p.add_argument("--dtype", choices=DTYPES, default="float32",
                   help="storage dtype of parameters and features (default float32)")
    p.add_argument("--precision", choices=PRECISIONS, default="32",
                   help="32: --dtype throughout; bf16-mixed: forward under torch.autocast "
                        "(bf16 matmuls, float32 parameters); bf16-true: model and features "
                        "in bf16. The loss is float32 in all (default 32)")
    p.add_argument("--wire-dtype", choices=WIRE_DTYPES, default="float32",
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
    _add_sampling_arguments(p)  # --sampler, --fanout, --batch-size, --bulk, ... (minibatch)
    _add_compression_arguments(p)  # --compression, --schedule, ..., --compression-start-step
    _add_link_arguments(p)  # --num-val, --num-test, --neg-method, --hits-k (--task link)
    return p


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """Parse and cross-check the arguments; a bad combination is an argparse error (exit
    status 2, naming the flag) before anything is loaded or launched."""
    parser = build_parser()
    args = parser.parse_args(argv)  # --help and malformed flags end here, before torch
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint (the folder to resume from)")
    if args.dataset is not None and not is_known_dataset(args.dataset):
        parser.error(f"argument --dataset: unknown dataset {args.dataset!r} (known: "
                     f"{', '.join(KNOWN_DATASET_NAMES)})")
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
    # The compression flags are checked by building the compressor they describe (imports
    # torch): only once everything the arguments alone decide was refused.
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


def _add_sampling_arguments(p: argparse.ArgumentParser) -> None:
    """The minibatch flags (:mod:`pyg_sar.sampling.train_loop`)."""
    g = p.add_argument_group("minibatch training (matrix-based bulk sampling)")
    g.add_argument("--sampler", choices=SAMPLERS, default=None,
                   help="train on sampled minibatches: GraphSAGE (node-wise) or LADIES "
                        "(layer-wise) instead of full-batch")
    g.add_argument("--fanout", default="15,10,5",
                   help="per hop: neighbours per node (sage) or nodes per layer (ladies); "
                        "the number of hops is the number of layers")
    g.add_argument("--batch-size", type=int, default=1024)
    g.add_argument("--bulk", type=int, default=32, help="minibatches sampled per call (k)")
    g.add_argument("--replicate-graph", action="store_true",
                   help="hold the whole graph structure on every rank (no communication "
                        "for sampling)")
    g.add_argument("--replication", type=int, choices=(1, 2), default=1,
                   help="1: 1D row partition of the adjacency; 2: 1.5D (pairs of ranks hold "
                        "both their parts)")


def _add_compression_arguments(p: argparse.ArgumentParser) -> None:
    """The compression flags (checked by :func:`pyg_sar.compression.cli.check_arguments`)."""
    g = p.add_argument_group("compression of the rows that cross the network (VARCO)")
    g.add_argument("--compression", choices=("none", "auto", *CODECS), default="none",
                   help="codec of boundary rows and their gradients: channel truncation "
                        "(VARCO), a random channel subset, or stochastic-rounding "
                        "quantisation; auto: the preset (every layer quantised 4 -> 8 bits -> "
                        "raw) "
                        "(default: none)")
    g.add_argument("--schedule", choices=SCHEDULES, default=None,
                   help="compression ratio over training steps (default: fixed)")
    g.add_argument("--ratio-max", type=float, default=None,
                   help="the fixed ratio, or where a decaying schedule starts (default 4)")
    g.add_argument("--ratio-min", type=float, default=None,
                   help="where a decaying schedule ends, or the ratio after the last of "
                        "--stages (default 1: lossless)")
    g.add_argument("--decay-steps", type=float, default=None,
                   help="steps a decaying schedule takes to reach --ratio-min (default "
                        "(epochs - 2) / 5, VARCO's slope 5; all of training for fraction)")
    g.add_argument("--fraction-power", type=float, default=None,
                   help="--schedule fraction: the kept fraction 1/ratio grows as this power "
                        "of the step (default 1)")
    g.add_argument("--stages", default=None, metavar="R:F,R:F,...",
                   help="--schedule stages: ratio R until the fraction F of the run, in "
                        "order; then --ratio-min (quantize: R = 32/bits, e.g. "
                        "16:0.35,8:0.65,4:0.95 is 2, 4, 8 bits, then raw)")
    g.add_argument("--bits", type=int, choices=BITS, default=None,
                   help="quantize at this many bits (a fixed ratio of 32 / bits)")
    g.add_argument("--compress-last-layer", action="store_true",
                   help="also compress the last message-passing layer's input (VARCO does not)")
    g.add_argument("--error-feedback", choices=ERROR_FEEDBACK, default=None,
                   help="add each message's previous compression error before encoding it, "
                        "for the rows, the gradients or both (subset and quantize; default: "
                        "none; meant for biased codecs such as subset without rescaling; with "
                        "quantize's unbiased rounding it added error in our study)")
    g.add_argument("--compress-directions", choices=COMPRESS_DIRECTIONS, default=None,
                   help="compress the rows sent forward, the gradients sent back, or both "
                        "(default both)")
    g.add_argument("--logit-dtype", choices=("bfloat16", "raw"), default=None,
                   help="the dtype of attention logits (GAT) in the steps where the codec is "
                        "lossy; raw at ratio 1 whatever this says (default: bfloat16 for "
                        "auto, raw otherwise)")
    g.add_argument("--compression-total-steps", type=positive_int, default=None,
                   help="lay the schedule out for this many optimizer steps instead of "
                        "--epochs (the stage ends of --stages and auto, the default "
                        "--decay-steps)")
    g.add_argument("--compression-start-step", type=non_negative_int, default=None,
                   help="start the schedules at this step instead of 0 (to time one stage "
                        "of a longer run; not with --resume)")


def _add_link_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--task link`` options (:mod:`pyg_sar.train_link`)."""
    g = p.add_argument_group("link prediction (--task link)")
    g.add_argument("--num-val", type=float, default=0.05,
                   help="share of edges held out for validation (RandomLinkSplit)")
    g.add_argument("--num-test", type=float, default=0.1,
                   help="share of edges held out for test (RandomLinkSplit)")
    g.add_argument("--neg-method", choices=NEG_METHODS, default="uniform",
                   help="negative sampling: uniform or degree-weighted destinations")
    g.add_argument("--hits-k", type=int, default=20, help="K of Hits@K (default 20)")
