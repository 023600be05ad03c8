"""``python -m pyg_sar.partition``: partition a dataset into a folder and print a summary.

Example::

    python -m pyg_sar.partition --dataset cora --num-parts 2 --out parts/
    python -m pyg_sar.partition --dataset rmat --arg num_nodes=100000 --num-parts 8 --out parts/
    python -m pyg_sar.partition --dataset mypkg.graphs:build --num-parts 4 --out parts/

``--dataset`` is a name known to :func:`pyg_sar.datasets.load_dataset`, or ``module:function``
naming an importable function that returns a ``torch_geometric.data.Data``.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import sys
import time
from collections.abc import Sequence
from typing import Any

from pyg_sar.partition.assign import METHODS


def _parse_arg(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (got {text!r})")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value  # a plain string


def load_data(dataset: str, kwargs: dict[str, Any]):
    """The ``Data`` named by ``dataset`` (a built-in name or ``module:function``)."""
    if ":" in dataset:
        module_name, _, func_name = dataset.partition(":")
        func = getattr(importlib.import_module(module_name), func_name, None)
        if not callable(func):
            raise ValueError(f"--dataset {dataset!r}: {module_name} has no function {func_name!r}")
        return func(**kwargs)
    from pyg_sar.datasets import load_dataset
    return load_dataset(dataset, **kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyg_sar.partition",
                                     description="Partition a graph for pyg_sar training.")
    parser.add_argument("--dataset", required=True,
                        help="dataset name (pyg_sar.datasets) or module:function returning Data")
    parser.add_argument("--arg", action="append", default=[], type=_parse_arg, metavar="KEY=VALUE",
                        help="keyword argument for the dataset loader (repeatable)")
    parser.add_argument("--num-parts", type=int, required=True)
    parser.add_argument("--out", required=True, help="output folder (must be empty or absent)")
    parser.add_argument("--method", default="metis", choices=METHODS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a non-empty output folder")
    args = parser.parse_args(argv)

    from pyg_sar.partition.writer import write_partition

    t = time.perf_counter()
    data = load_data(args.dataset, dict(args.arg))
    load_time = time.perf_counter() - t
    try:
        report = write_partition(data, args.num_parts, args.out, method=args.method,
                                 seed=args.seed, overwrite=args.overwrite)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"loaded dataset {args.dataset!r} in {load_time:.2f} s")
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
