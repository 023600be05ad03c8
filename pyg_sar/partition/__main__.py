"""``python -m pyg_sar.partition``: partition a dataset into a folder and print a summary.

Example::

    python -m pyg_sar.partition --dataset cora --num-parts 2 --out parts/
    python -m pyg_sar.partition --dataset rmat --arg num_nodes=100000 --num-parts 8 --out parts/
    python -m pyg_sar.partition --dataset rmat --num-parts 8 --balance nodes --out parts/
    python -m pyg_sar.partition --dataset mypkg.graphs:build --num-parts 4 --out parts/
    python -m pyg_sar.partition --source graph_dir/ --method kaminpar --num-parts 8 --out parts/

``--dataset`` is a name known to :func:`pyg_sar.datasets.load_dataset`, or ``module:function``
naming an importable function that returns a ``torch_geometric.data.Data``. A ``HeteroData``
(``wordnet-hetero``, ``mag-like``, an ogbn-mag folder, or a function's) is partitioned with
all its node types together and loads as a :class:`~pyg_sar.partition.HeteroPartition`;
``--normalize-features`` then normalises the ``x`` of every node type that has one.

``--balance edges`` makes every part hold about as many in-edges (the aggregation work of a
rank) as nodes; ``--balance nodes`` balances nodes only. The default
(:func:`pyg_sar.partition.assign.default_balance`) is ``edges`` for METIS and KaMinPar with 4
or more parts, ``nodes`` with 2 or 3 parts and for random and contiguous
(docs/partitioning.md); a HeteroData is always balanced by nodes. The summary prints max /
mean of nodes, in-edges and halo rows over the parts.

``--source DIR`` partitions a graph on disk without loading it
(:func:`pyg_sar.partition.stream.write_partition_streaming`): a folder with ``edge_index.npy``
and ``source.json`` (``--format npy``) or edge chunks with ``manifest.json`` (``--format
chunks``); ``--method kaminpar`` (``pip install 'pyg_sar[large]'``) is available there.

The parts hold the tensors as loaded: preprocessing the training script would do (PyG's
examples use ``T.NormalizeFeatures()``) must happen here, before partitioning.
``--normalize-features`` applies ``T.NormalizeFeatures()`` (rows of ``x`` summing to one) so
that a CLI partition matches such a script; other preprocessing goes into a
``module:function`` dataset, or use :func:`pyg_sar.distribute` from the script itself.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyg_sar._extras import MissingExtraError
from pyg_sar.cli_errors import USER_ERRORS, report_error
from pyg_sar.cli_types import HelpFormatter, positive_int
from pyg_sar.names import BALANCES, EDGE_BALANCE_MIN_PARTS, KNOWN_DATASET_NAMES, is_known_dataset
from pyg_sar.names import PARTITION_METHODS as METHODS

EXAMPLES = """examples:
  python -m pyg_sar.partition --dataset cora --num-parts 2 --out parts/cora-2
  python -m pyg_sar.partition --dataset wordnet --num-parts 4 --balance edges --out parts/wn-4
  python -m pyg_sar.partition --dataset ogb:/data/ogbn_arxiv --num-parts 8 --out parts/arxiv-8
  python -m pyg_sar.partition --source graph/ --method kaminpar --num-parts 64 --out parts/big
  python -m pyg_sar.partition --dataset cora --task link --num-parts 2 --out parts/cora-link
  python -m pyg_sar.partition --dataset mymodule:load_graph --arg size=1000 --num-parts 2 \\
      --out parts/mine                                   your own loader returning a Data
"""


def _parse_arg(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (got {text!r})")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value  # a plain string


def _for_cli(err: Exception) -> str:
    """The library's message with its keyword argument spelt as this CLI's flag."""
    return (str(err).replace("pass overwrite=True", "pass --overwrite")
            .replace("use method='random'", "use --method random"))


def load_data(dataset: str, kwargs: dict[str, Any]):
    """The ``Data`` named by ``dataset`` (a built-in name or ``module:function``)."""
    from pyg_sar.datasets import load_dataset
    if ":" in dataset and not is_known_dataset(dataset):  # "ogb:<folder>" is built in
        module_name, _, func_name = dataset.partition(":")
        func = getattr(importlib.import_module(module_name), func_name, None)
        if not callable(func):
            raise ValueError(f"--dataset {dataset!r}: {module_name} has no function {func_name!r}")
        return func(**kwargs)
    return load_dataset(dataset, **kwargs)


def _progress(line: str) -> None:
    """A phase of a run that may take minutes, on stderr (the report goes to stdout)."""
    print(f"partition: {line}", file=sys.stderr, flush=True)


def run_interruptible(argv: Sequence[str] | None = None) -> int:
    """:func:`main` in a forked child, so that Ctrl-C stops it at once: METIS (``pymetis``)
    holds the interpreter for the whole partitioning, where no Python signal handler runs.
    The parent only waits; on Ctrl-C it kills the child, removes the folder it was staging
    (``.OUT.tmp-*``: the output folder itself is only ever renamed into place, complete) and
    returns 130. Without ``os.fork`` (Windows) it runs :func:`main` itself."""
    if not hasattr(os, "fork"):
        return main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # the child does the work and never returns into the caller's code
        status = 1
        try:
            status = main(argv)
        except SystemExit as done:  # argparse's exits
            status = done.code if isinstance(done.code, int) else (0 if done.code is None
                                                                   else 2)
        except KeyboardInterrupt:
            status = 130
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    # A SIGTERM or SIGHUP meant for this process (``timeout``, a closed terminal, a batch
    # system) ends the child too: no orphan that goes on and writes later. As SIGKILL: METIS
    # (GKlib) catches SIGTERM and returns METIS_ERROR, which would read as a failure.
    received: list[int] = []

    def end_child(sig: int, _frame) -> None:
        received.append(sig)
        os.kill(child, signal.SIGKILL)

    previous = {sig: signal.signal(sig, end_child) for sig in (signal.SIGTERM, signal.SIGHUP)}
    interrupted = False
    try:
        try:
            _, wait_status = os.waitpid(child, 0)
        except KeyboardInterrupt:
            interrupted = True
            os.kill(child, signal.SIGKILL)
            _, wait_status = os.waitpid(child, 0)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = os.waitstatus_to_exitcode(wait_status)  # -N: ended by signal N
    out = _out_dir(sys.argv[1:] if argv is None else argv)
    if (interrupted or received or code < 0) and out is not None:
        for staged in out.parent.glob(f".{out.name}.tmp-*"):  # what the child was staging
            shutil.rmtree(staged, ignore_errors=True)
    if interrupted or received:
        why = "interrupted" if interrupted else f"ended by {signal.Signals(received[0]).name}"
        where = f": nothing was written to {out}" if out is not None else ""
        print(f"python -m pyg_sar.partition: {why}{where}", file=sys.stderr, flush=True)
        return 130 if interrupted else 128 + received[0]
    return 128 - code if code < 0 else code


def _out_dir(argv: Sequence[str]) -> Path | None:
    """The ``--out`` folder of ``argv`` (``None`` if it names none)."""
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg == "--out" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--out="):
            return Path(arg[len("--out="):])
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pyg_sar.partition``: an error is one line naming its cause (``--debug``:
    the traceback); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _partition(argv)
    except USER_ERRORS as exc:
        if "--debug" in argv:
            raise
        return report_error("python -m pyg_sar.partition", exc)


def _partition(argv: Sequence[str]) -> int:
    # Only names so far: torch and PyG are imported once the arguments are parsed.

    parser = argparse.ArgumentParser(prog="python -m pyg_sar.partition",
                                     description="Partition a graph for pyg_sar training.",
                                     formatter_class=HelpFormatter, epilog=EXAMPLES)
    parser.add_argument("--dataset",
                        help=f"a built-in dataset ({', '.join(KNOWN_DATASET_NAMES)}) or "
                             f"module:function returning a torch_geometric Data or HeteroData")
    parser.add_argument("--arg", action="append", default=[], type=_parse_arg, metavar="KEY=VALUE",
                        help="keyword argument for the dataset loader (repeatable)")
    parser.add_argument("--num-parts", type=positive_int, required=True)
    parser.add_argument("--out", required=True, help="output folder (must be empty or absent)")
    parser.add_argument("--method", default="metis", choices=(*METHODS, "kaminpar"),
                        help="kaminpar: with --source only")
    parser.add_argument("--balance", default=None, choices=BALANCES,
                        help=f"what the parts hold equal shares of: nodes, or edges (nodes "
                             f"and in-edges, the work per rank); default: edges for metis "
                             f"and kaminpar with --num-parts >= {EDGE_BALANCE_MIN_PARTS}, "
                             f"nodes otherwise (and always for a HeteroData)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a non-empty output folder")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (default: one line naming the "
                             "cause)")
    parser.add_argument("--normalize-features", action="store_true",
                        help="apply torch_geometric.transforms.NormalizeFeatures() (each row "
                             "of x scaled to sum to one) before partitioning, as PyG's "
                             "examples preprocess Planetoid; without it the parts hold the "
                             "raw features")
    stream = parser.add_argument_group(
        "graphs on disk (--source)",
        "partition a graph read from disk in chunks instead of --dataset (memory: the "
        "partitioner's graph plus O(N + E / P))")
    stream.add_argument("--source", help="folder of the graph (see --format)")
    stream.add_argument("--format", default=None, choices=("npy", "chunks", "ogb"),
                        help="npy: edge_index.npy + source.json; chunks: edges_*.npy + "
                             "manifest.json; ogb: an OGB node-property folder (raw/*.csv.gz, "
                             "converted in chunks into --scratch first) (default: npy or "
                             "chunks, by the file present)")
    stream.add_argument("--threads", type=positive_int, default=None,
                        help="KaMinPar threads (default: the CPUs available)")
    stream.add_argument("--kaminpar-context", default="fast",
                        help="KaMinPar preset: fast (default), default, strong, terapart, ...")
    stream.add_argument("--scratch", default=None,
                        help="folder for temporary files (default: next to --out)")
    stream.add_argument("--memory-budget", default=None,
                        help="refuse up front when the estimated peak exceeds it (e.g. 12G)")
    link = parser.add_argument_group(
        "link prediction (--task link)",
        "split the graph with PyG's RandomLinkSplit (seeded by --seed) and write the split: "
        "load it with pyg_sar.load_link_split(out, rank) -> (train, val, test)")
    link.add_argument("--task", default="node", choices=("node", "link"),
                      help="node: the graph as given (default); link: a link-prediction split")
    link.add_argument("--num-val", type=float, default=0.1,
                      help="fraction of edges held out for validation (default 0.1)")
    link.add_argument("--num-test", type=float, default=0.1,
                      help="fraction of edges held out for testing (default 0.1)")
    link.add_argument("--disjoint-train-ratio", type=float, default=0.0,
                      help="fraction of training edges used only as supervision, not for "
                           "message passing (default 0)")
    link.add_argument("--directed", action="store_true",
                      help="treat the graph as directed (default: undirected, as Planetoid)")
    args = parser.parse_args(argv)
    if (args.source is None) == (args.dataset is None):
        parser.error("give exactly one of --dataset and --source")
    if args.source is not None:
        return _write_streaming(parser, args)
    if args.method == "kaminpar":
        parser.error("argument --method: kaminpar partitions --source graphs only")
    if args.task == "link":
        for flag in ("num_val", "num_test", "disjoint_train_ratio"):
            value = getattr(args, flag)
            if not 0.0 <= value < 1.0:
                parser.error(f"argument --{flag.replace('_', '-')}: expected a fraction in "
                             f"[0, 1) (got {value})")
    # Everything the arguments alone decide is refused before the (possibly long) load.
    from pyg_sar.partition.assign import resolve_balance
    default_balance = resolve_balance(args.method, None, args.num_parts)
    if args.task == "link" and args.balance is not None and args.balance != default_balance:
        parser.error(f"argument --balance: a link-prediction split (--task link) is "
                     f"partitioned with the default balance ({default_balance} for --method "
                     f"{args.method} and --num-parts {args.num_parts})")
    if ":" not in args.dataset and not is_known_dataset(args.dataset):
        parser.error(f"argument --dataset: unknown dataset {args.dataset!r} (known: "
                     f"{', '.join(KNOWN_DATASET_NAMES)}, or module:function)")
    from pyg_sar.partition.storage import check_out_dir
    try:
        check_out_dir(Path(args.out), args.overwrite)
    except ValueError as err:
        parser.error(f"argument --out: {_for_cli(err)}")

    from pyg_sar.partition.writer import write_partition

    t = time.perf_counter()
    _progress(f"loading --dataset {args.dataset}")
    try:
        data = load_data(args.dataset, dict(args.arg))
    except TypeError as err:  # a keyword the loader does not take: the --arg, not a bug
        if not args.arg:
            raise
        parser.exit(2, f"{parser.prog}: error: could not load --dataset {args.dataset!r} "
                       f"with --arg {' --arg '.join(f'{k}={v!r}' for k, v in args.arg)}: "
                       f"{err}\n")
    except (ValueError, OSError, ImportError) as err:
        parser.exit(2, f"{parser.prog}: error: could not load --dataset {args.dataset!r}: "
                       f"{err}\n")
    if args.normalize_features:
        from pyg_sar.partition.hetero_input import is_hetero
        has_x = bool(data.x_dict) if is_hetero(data) else getattr(data, "x", None) is not None
        if not has_x:
            parser.exit(2, f"{parser.prog}: error: --normalize-features: dataset "
                           f"{args.dataset!r} has no node features x\n")
        import torch_geometric.transforms as T
        data = T.NormalizeFeatures()(data)
    load_time = time.perf_counter() - t
    if args.task == "link":
        return _write_link_split(parser, args, data, load_time)
    try:
        report = write_partition(data, args.num_parts, args.out, method=args.method,
                                 seed=args.seed, overwrite=args.overwrite,
                                 balance=args.balance, progress=_progress)
    except (ValueError, MissingExtraError) as err:  # e.g. bad data, or no pymetis
        print(f"{parser.prog}: error: {_for_cli(err)}", file=sys.stderr)
        return 2
    print(f"loaded dataset {args.dataset!r} in {load_time:.2f} s"
          + (" (features normalised)" if args.normalize_features else ""))
    print(report.summary())
    return 0


def _write_streaming(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--source``: the streaming writer on a graph folder."""
    if args.task != "node" or args.normalize_features:
        parser.error("--source writes the graph as stored: --task link and "
                     "--normalize-features need --dataset")
    import tempfile

    from pyg_sar.partition.sources import open_source
    from pyg_sar.partition.stream import write_partition_streaming
    converted = None
    try:
        if args.format == "ogb":
            from pyg_sar.datasets.ogb import ogb_to_source
            base = Path(args.scratch) if args.scratch else Path(args.out).absolute().parent
            base.mkdir(parents=True, exist_ok=True)
            converted = tempfile.TemporaryDirectory(prefix=".ogb-source-", dir=base)
            source = open_source(ogb_to_source(args.source, converted.name), "chunks")
        else:
            source = open_source(args.source, args.format)
        report = write_partition_streaming(
            source, args.num_parts, args.out, args.method, balance=args.balance,
            seed=args.seed, threads=args.threads, scratch=args.scratch,
            memory_budget=args.memory_budget, overwrite=args.overwrite,
            kaminpar_context=args.kaminpar_context)
    except (ValueError, ImportError) as err:
        print(f"{parser.prog}: error: {_for_cli(err)}", file=sys.stderr)
        return 2
    finally:
        if converted is not None:
            converted.cleanup()
    print(report.summary())
    return 0


def _write_link_split(parser: argparse.ArgumentParser, args: argparse.Namespace, data,
                      load_time: float) -> int:
    """``--task link``: RandomLinkSplit of ``data`` written as a partitioned link split."""
    from pyg_sar.partition.link_split import random_link_split, write_link_split
    try:
        triple = random_link_split(data, args.num_val, args.num_test, seed=args.seed,
                                   is_undirected=not args.directed,
                                   disjoint_train_ratio=args.disjoint_train_ratio)
        t = time.perf_counter()
        write_link_split(triple, args.num_parts, args.out, method=args.method, seed=args.seed,
                         overwrite=args.overwrite)
    except (ValueError, MissingExtraError) as err:
        print(f"{parser.prog}: error: {_for_cli(err)}", file=sys.stderr)
        return 2
    pairs = ", ".join(f"{name} {d.edge_label_index.size(1)}"
                      for name, d in zip(("train", "val", "test"), triple))
    print(f"loaded dataset {args.dataset!r} in {load_time:.2f} s")
    print(f"link split (seed {args.seed}): message-passing edges train "
          f"{triple[0].edge_index.size(1)}, val {triple[1].edge_index.size(1)}, test "
          f"{triple[2].edge_index.size(1)}; supervision pairs {pairs}")
    print(f"wrote {args.num_parts} parts ({args.method}) to {args.out} in "
          f"{time.perf_counter() - t:.2f} s; load with pyg_sar.load_link_split(out, rank)")
    return 0


if __name__ == "__main__":
    sys.exit(run_interruptible())
