"""The compression flags of ``python -m pyg_sar.train`` (declared in
:mod:`pyg_sar.train_args`): their checks and the compressor they describe.

    mpiexec -n 4 python -m pyg_sar.train --dataset wordnet --model sage --layers 3 \\
        --hidden 256 --compression truncate --schedule linear --ratio-max 128
    mpiexec -n 4 python -m pyg_sar.train ... --compression auto

``--compression auto`` is the preset :func:`pyg_sar.compression.auto` (stochastic-rounding
quantisation along a bit ladder, the last layer included, laid out over the run); it sets its
own schedule, so the schedule flags are refused with it.

``--schedule fixed`` compresses at ``--ratio-max`` throughout (``--bits N`` is the same as
``--ratio-max 32/N`` for ``quantize``); the decaying schedules go from ``--ratio-max`` to
``--ratio-min`` (default 1: lossless) over ``--decay-steps`` optimizer steps (default
``(epochs - 2) / 5``: VARCO's slope 5; all of training for ``fraction``, whose kept fraction
grows as the power ``--fraction-power``). ``--schedule stages --stages 16:0.35,8:0.65`` holds
ratio 16 until 35% of the run, 8 until 65%, then ``--ratio-min``. As in VARCO the last
message-passing layer's input is not compressed unless ``--compress-last-layer`` is given.

``--logit-dtype bfloat16`` sends GAT's attention logits as bf16 while the codec is lossy
(``raw``: never cast); ``auto`` does so by default.

The run's length for the schedules is ``--epochs`` optimizer steps, or
``--compression-total-steps``; ``--compression-start-step T`` starts the schedules at step
``T`` (to time one stage of a longer run).
"""
from __future__ import annotations

import argparse
from typing import Optional

from pyg_sar.compression.factory import SCHEDULE_NAMES, make_compressor
from pyg_sar.compression.interface import (
    CompressionSpec,
    all_but_last,
)
from pyg_sar.compression.presets import auto

NONE = "none"
AUTO = "auto"
DECAYING = tuple(s for s in SCHEDULE_NAMES if s not in ("fixed", "stages"))


def _given(args: argparse.Namespace, *flags: str) -> list[str]:
    """The flags among ``flags`` that were given (not left at their default)."""
    out = []
    for flag in flags:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and value is not False:
            out.append(flag)
    return out


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse inconsistent compression flags with an argparse error naming the flag."""
    schedule_flags = ("--schedule", "--ratio-max", "--ratio-min", "--decay-steps",
                      "--fraction-power", "--stages", "--bits", "--compress-last-layer")
    given = _given(args, *schedule_flags, "--error-feedback", "--compress-directions",
                   "--logit-dtype", "--compression-total-steps", "--compression-start-step")
    if args.compression == NONE:
        if given:
            parser.error(f"{given[0]} needs --compression (truncate, subset, quantize or "
                         f"auto)")
        return
    if getattr(args, "reference", False):
        parser.error("--compression compresses what crosses the network between ranks; "
                     "--reference trains plain PyG in one process")
    if getattr(args, "sampler", None) is not None:
        parser.error("--compression applies to full-batch training, not to --sampler")
    if args.compression_start_step is not None and getattr(args, "resume", False):
        parser.error("--compression-start-step sets where a fresh run's schedules start; "
                     "--resume restores them from the checkpoint")
    schedule = args.schedule or "fixed"
    if args.compression == AUTO:
        conflicts = _given(args, *schedule_flags)
        if conflicts:
            parser.error(f"--compression auto sets its own schedule and compresses the last "
                         f"layer; do not combine it with {', '.join(conflicts)}")
    else:
        if args.bits is not None:
            if args.compression != "quantize":
                parser.error(f"--bits is for --compression quantize (got {args.compression})")
            if args.ratio_max is not None or schedule != "fixed":
                parser.error("--bits sets a fixed ratio; do not combine it with --ratio-max "
                             "or a decaying --schedule")
        if schedule == "fixed" and (args.ratio_min is not None
                                    or args.decay_steps is not None):
            parser.error(f"--ratio-min and --decay-steps are for a decaying --schedule "
                         f"({', '.join(DECAYING)}) or stages")
        if args.fraction_power is not None and schedule != "fraction":
            parser.error(f"--fraction-power is for --schedule fraction (got {schedule})")
        if (args.stages is not None) != (schedule == "stages"):
            parser.error("--schedule stages needs --stages, and --stages needs --schedule "
                         "stages")
        if schedule == "stages" and (args.ratio_max is not None
                                     or args.decay_steps is not None):
            parser.error("--schedule stages takes its ratios and ends from --stages; do not "
                         "combine it with --ratio-max or --decay-steps")
    try:
        compressor_from_args(args)
    except ValueError as e:
        parser.error(f"compression: {e}")


def parse_stages(text: str, total_steps: int) -> list[tuple[float, int]]:
    """``"R:F,R:F"`` -> ``[(R, round(F * total_steps)), ...]`` (F a fraction of the run)."""
    pairs = []
    for item in text.split(","):
        ratio, sep, frac = item.partition(":")
        try:
            r, f = float(ratio), float(frac)
        except ValueError:
            r = f = float("nan")
        if not sep or not (0 < f <= 1):
            raise ValueError(f"--stages {text!r}: each stage is RATIO:FRACTION with FRACTION "
                             f"in (0, 1] (got {item!r})")
        pairs.append((r, round(f * total_steps)))
    until = [u for _, u in pairs]
    if until[0] < 1 or any(b <= a for a, b in zip(until, until[1:])):
        raise ValueError(f"--stages {text!r}: over {total_steps} steps the stages end at "
                         f"steps {until}, which must be >= 1 and strictly increasing")
    return pairs


def total_steps_of(args: argparse.Namespace) -> int:
    """The run length the schedules are laid out for (``--compression-total-steps`` or
    ``--epochs``)."""
    return args.compression_total_steps or args.epochs


def compressor_from_args(args: argparse.Namespace) -> Optional[CompressionSpec]:
    """The ``SARConfig.compression`` the flags describe (``None`` without ``--compression``)."""
    if args.compression == NONE:
        return None
    total = total_steps_of(args)
    if args.compression == AUTO:
        return auto(total, seed=args.seed, error_feedback=args.error_feedback,
                    directions=args.compress_directions, logit_dtype=args.logit_dtype)
    schedule = args.schedule or "fixed"
    ratio_min = args.ratio_min if args.ratio_min is not None else 1.0
    stages, ratio_max, decay = None, None, None
    if schedule == "stages":
        stages = parse_stages(args.stages, total)
    else:
        ratio_max = (32 / args.bits if args.bits is not None
                     else args.ratio_max if args.ratio_max is not None else 4.0)
    if schedule in DECAYING:
        decay = (args.decay_steps if args.decay_steps is not None
                 else total if schedule == "fraction" else max(total - 2, 1) / 5)
    power = args.fraction_power if args.fraction_power is not None else 1.0
    comp = make_compressor(args.compression, schedule, ratio_max, ratio_min, decay,
                           seed=args.seed, power=power, stages=stages,
                           error_feedback=args.error_feedback or "none",
                           directions=args.compress_directions or "both",
                           logit_dtype=args.logit_dtype)
    return comp if args.compress_last_layer else all_but_last(comp)
