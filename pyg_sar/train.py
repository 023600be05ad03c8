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

import os
import sys
from typing import Optional

from pyg_sar.cli_errors import USER_ERRORS, report_error
from pyg_sar.train_args import _RANK_ENV, _launch_rank, build_parser, parse_args

__all__ = ["build_parser", "parse_args", "main"]  # and run, loaded on first use


def __getattr__(name: str):
    # The job itself (imports torch and PyG) is loaded on first use, after parsing.
    if name == "run":
        from pyg_sar.train_node import run
        return run
    raise AttributeError(f"module 'pyg_sar.train' has no attribute {name!r}")


def main(argv: Optional[list[str]] = None) -> int:
    """Parse ``argv`` (before torch is imported: ``--help`` and a bad flag answer at once),
    run the job and return its exit status: 0, 1 after an error (one line naming the cause;
    the traceback with ``--debug``), 130 after Ctrl-C."""
    args = parse_args(argv)
    from pyg_sar.distributed.context import get_context
    from pyg_sar.train_node import _interrupted, run
    try:
        run(args)
    except KeyboardInterrupt as interrupt:  # Ctrl-C (or PeerInterrupted): one line per job
        from pyg_sar.distributed.context import release_after_interrupt, report_interrupt
        report_interrupt()  # ranks not interrupted themselves stop too, quietly
        ctx = get_context()
        if (ctx.rank if ctx is not None else _launch_rank()) == 0:
            print(_interrupted(args, getattr(interrupt, "epoch", None)), file=sys.stderr,
                  flush=True)
        release_after_interrupt()  # the others exit only after rank 0's line, all together
        return 130  # 128 + SIGINT, as a shell reports it
    except USER_ERRORS as exc:  # the cause in one line per rank, not a traceback per rank
        if args.debug:
            raise
        ctx = get_context()
        if ctx is not None:
            return report_error("pyg_sar.train", exc, ctx.rank, ctx.world_size)
        launched = any(name in os.environ for name in _RANK_ENV)
        return report_error("pyg_sar.train", exc, _launch_rank(), 2 if launched else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
