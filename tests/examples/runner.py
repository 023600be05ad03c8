"""Run example scripts one after another in one process, each as ``python SCRIPT ARGS`` would
run it (``__main__``, its own ``sys.argv``, its folder first on ``sys.path``).

    python tests/examples/runner.py [--max-epochs E] [--seed S] SCRIPT [ARGS...] [::: SCRIPT ...]
    mpiexec -n 2 python tests/examples/runner.py --max-epochs 20 examples/tagcn.py ::: ...

One launch for several scripts saves the interpreter, torch and MPI start-up of each (most of
a short run). Before each script the runner seeds torch with ``--seed`` (PyG's scripts do not
seed) and, on rank 0, prints ``@@@ example <name>``, so the output splits per script.

``--max-epochs`` stops the training loops of PyG's scripts, whose epoch counts are written in
the loop (``for epoch in range(1, 201):``), after ``E`` epochs without editing them: the
script runs with a ``range`` whose two-argument form starting at 1 stops after ``E`` values.
Every other use of ``range`` is the builtin's.

``--plain`` runs the scripts as plain single-process PyG: ``pyg_sar.distribute`` and
``pyg_sar.convert`` become the identity, so PyG's own layers run on the whole graph (the
global losses and metrics of ``pyg_sar.nn.functional`` on one process are PyG's). It is the
single-process PyG baseline of the examples that are not ports of a PyG script.

``--float64`` runs the scripts in float64 (the default dtype, and every floating tensor of the
data handed to ``pyg_sar.distribute``), and ``--save-params PREFIX`` writes, after each script,
the final parameters of its global ``model`` to ``PREFIX<script>.rank<r>.pt`` (and, with
``--save-rows NAME``, its global tensor ``NAME`` of one row per local node): together they
check a port's training end to end against one process (tests/examples/test_port_exactness.py).
A script whose global ``data`` has ``node_ids`` (a partition) also saves them, as
``"__node_ids__"``: the rows of a node table the port shards (``pyg_sar.shard_embedding``).
``--no-dropout`` makes ``torch.nn.functional.dropout`` the identity while the scripts run (a
script that drops out with ``F.dropout`` would draw its masks per rank).
"""
from __future__ import annotations

import argparse
import builtins
import os
import runpy
import sys

SEPARATOR = ":::"
MARKER = "@@@ example"


def capped_range(max_epochs: int):
    """``range`` for a script whose ``range(1, N)`` loops stop after ``max_epochs`` values."""
    def range_(*args):
        if len(args) == 2 and args[0] == 1:
            return builtins.range(1, min(args[1], 1 + max_epochs))
        return builtins.range(*args)
    return range_


def split_scripts(argv: list[str]) -> list[list[str]]:
    """``[SCRIPT ARGS... ::: SCRIPT ARGS...]`` -> ``[[SCRIPT, ARGS...], ...]``."""
    runs, current = [], []
    for arg in argv:
        if arg == SEPARATOR:
            if current:
                runs.append(current)
            current = []
        else:
            current.append(arg)
    if current:
        runs.append(current)
    return runs


def _to_float64(data):
    """``data`` (a ``Data``, ``HeteroData`` or a tuple of them) with floating tensors in
    float64."""
    if isinstance(data, (tuple, list)):
        return type(data)(_to_float64(d) for d in data)
    return data.apply(lambda t: t.double() if t.is_floating_point() else t)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plain", action="store_true",
                        help="plain PyG: distribute and convert are the identity")
    parser.add_argument("--float64", action="store_true",
                        help="float64 default dtype and data (exactness checks)")
    parser.add_argument("--save-params", default=None, metavar="PREFIX",
                        help="write each script's final model parameters to PREFIX...")
    parser.add_argument("--save-rows", action="append", default=[], metavar="NAME",
                        help="with --save-params, also save the script's global tensor NAME "
                             "(one row per local node) as __rows__NAME, where it has one")
    parser.add_argument("--no-dropout", action="store_true",
                        help="torch.nn.functional.dropout is the identity")
    parser.add_argument("scripts", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    runs = split_scripts(args.scripts)
    if not runs:
        parser.error("no script given")

    import torch

    import pyg_sar

    rank = pyg_sar.init().rank
    if args.plain:
        if pyg_sar.init().world_size != 1:
            parser.error("--plain runs one process")
        pyg_sar.distribute = lambda data, *a, **k: data
        pyg_sar.convert = lambda model, *a, **k: model
    if args.no_dropout:
        torch.nn.functional.dropout = lambda input, *a, **k: input
    if args.float64:
        torch.set_default_dtype(torch.float64)
        distribute = pyg_sar.distribute
        pyg_sar.distribute = lambda data, *a, **k: distribute(_to_float64(data), *a, **k)
    for script, *script_args in runs:
        path = os.path.abspath(script)
        if rank == 0:
            print(f"{MARKER} {os.path.basename(path)} {' '.join(script_args)}", flush=True)
        torch.manual_seed(args.seed)
        sys.argv = [path, *script_args]  # (the scripts import no module of their own folder)
        init_globals = {}
        if args.max_epochs is not None:
            init_globals["range"] = capped_range(args.max_epochs)
        try:
            result = runpy.run_path(path, init_globals=init_globals, run_name="__main__")
            if args.save_params is not None:
                state = {k: v.detach().cpu() for k, v in result["model"].state_dict().items()}
                for row_name in args.save_rows:
                    if isinstance(result.get(row_name), torch.Tensor):
                        state[f"__rows__{row_name}"] = result[row_name].detach().cpu()
                node_ids = getattr(result.get("data"), "node_ids", None)
                if isinstance(node_ids, torch.Tensor):
                    state["__node_ids__"] = node_ids.cpu()
                name = "_".join([os.path.splitext(os.path.basename(path))[0],
                                 *(a.lstrip("-") for a in script_args)])
                torch.save(state, f"{args.save_params}{name}.rank{rank}.pt")
        finally:
            sys.stdout.flush()


if __name__ == "__main__":
    main()
