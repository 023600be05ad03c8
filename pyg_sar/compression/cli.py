"""The compression flags of ``python -m pyg_sar.train`` and the compressor they describe.

    mpiexec -n 4 python -m pyg_sar.train --dataset wordnet --model sage --layers 3 \\
        --hidden 256 --compression truncate --schedule linear --ratio-max 128

``--schedule fixed`` compresses at ``--ratio-max`` throughout (``--bits N`` is the same as
``--ratio-max 32/N`` for ``quantize``); the decaying schedules go from ``--ratio-max`` to
``--ratio-min`` (default 1: lossless) over ``--decay-steps`` optimizer steps (default
``(epochs - 2) / 5``: VARCO's slope 5). As in VARCO the last message-passing layer's input is
not compressed unless ``--compress-last-layer`` is given.
"""
from __future__ import annotations

import argparse
from typing import Optional

from pyg_sar.compression.factory import CODEC_NAMES, SCHEDULE_NAMES, make_compressor
from pyg_sar.compression.interface import CompressionSpec, all_but_last
from pyg_sar.compression.packing import BITS

NONE = "none"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the compression flags to the training CLI's parser."""
    g = p.add_argument_group("compression of the rows that cross the network (VARCO)")
    g.add_argument("--compression", choices=(NONE, *CODEC_NAMES), default=NONE,
                   help="codec of boundary rows and their gradients: channel truncation "
                        "(VARCO), a random channel subset, or stochastic-rounding "
                        "quantisation (default: none)")
    g.add_argument("--schedule", choices=SCHEDULE_NAMES, default=None,
                   help="compression ratio over training steps (default: fixed)")
    g.add_argument("--ratio-max", type=float, default=None,
                   help="the fixed ratio, or where a decaying schedule starts (default 4)")
    g.add_argument("--ratio-min", type=float, default=None,
                   help="where a decaying schedule ends (default 1: lossless)")
    g.add_argument("--decay-steps", type=float, default=None,
                   help="steps a decaying schedule takes to reach --ratio-min (default "
                        "(epochs - 2) / 5, VARCO's slope 5)")
    g.add_argument("--bits", type=int, choices=BITS, default=None,
                   help="quantize at this many bits (a fixed ratio of 32 / bits)")
    g.add_argument("--compress-last-layer", action="store_true",
                   help="also compress the last message-passing layer's input (VARCO does not)")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse inconsistent compression flags with an argparse error naming the flag."""
    given = [f for f, v in (("--schedule", args.schedule), ("--ratio-max", args.ratio_max),
                            ("--ratio-min", args.ratio_min), ("--decay-steps", args.decay_steps),
                            ("--bits", args.bits)) if v is not None]
    if args.compress_last_layer:
        given.append("--compress-last-layer")
    if args.compression == NONE:
        if given:
            parser.error(f"{given[0]} needs --compression (truncate, subset or quantize)")
        return
    if getattr(args, "reference", False):
        parser.error("--compression compresses what crosses the network between ranks; "
                     "--reference trains plain PyG in one process")
    if getattr(args, "sampler", None) is not None:
        parser.error("--compression applies to full-batch training, not to --sampler")
    if args.bits is not None:
        if args.compression != "quantize":
            parser.error(f"--bits is for --compression quantize (got {args.compression})")
        if args.ratio_max is not None or (args.schedule or "fixed") != "fixed":
            parser.error("--bits sets a fixed ratio; do not combine it with --ratio-max or a "
                         "decaying --schedule")
    if (args.schedule or "fixed") == "fixed" and (args.ratio_min is not None
                                                  or args.decay_steps is not None):
        parser.error("--ratio-min and --decay-steps are for a decaying --schedule (linear, "
                     "exponential or step)")
    try:
        compressor_from_args(args)
    except ValueError as e:
        parser.error(f"compression: {e}")


def compressor_from_args(args: argparse.Namespace) -> Optional[CompressionSpec]:
    """The ``SARConfig.compression`` the flags describe (``None`` without ``--compression``)."""
    if args.compression == NONE:
        return None
    schedule = args.schedule or "fixed"
    ratio_max = (32 / args.bits if args.bits is not None
                 else args.ratio_max if args.ratio_max is not None else 4.0)
    ratio_min = args.ratio_min if args.ratio_min is not None else 1.0
    decay = (args.decay_steps if args.decay_steps is not None
             else max(args.epochs - 2, 1) / 5)
    comp = make_compressor(args.compression, schedule, ratio_max, ratio_min,
                           None if schedule == "fixed" else decay, seed=args.seed)
    return comp if args.compress_last_layer else all_but_last(comp)
