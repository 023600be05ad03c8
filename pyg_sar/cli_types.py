"""Argument types shared by the command-line tools (``python -m pyg_sar.train``,
``python -m pyg_sar.partition``): a bad value is an argparse error naming the flag."""
from __future__ import annotations

import argparse


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low} (got {text!r})") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low} (got {value})")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1, for ``type=`` of an argparse option."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An integer >= 0, for ``type=`` of an argparse option."""
    return _int_at_least(text, 0)


def _float(text: str, want: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {want} (got {text!r})") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected {want} (got {text!r})")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a learning rate)."""
    value = _float(text, "a number > 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0 (got {value:g})")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (a weight decay)."""
    value = _float(text, "a number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 (got {value:g})")
    return value


def probability(text: str) -> float:
    """A dropout probability: a number in [0, 1)."""
    value = _float(text, "a probability in [0, 1)")
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1) (got {value:g})")
    return value


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` of the command-line tools: each option's default after its help (unless the
    help names it already, or there is none to show), and an epilog that starts with
    ``examples:`` as written (other texts are wrapped as usual)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or "default" in text.lower() or action.default in (
                None, False, argparse.SUPPRESS) or action.nargs == 0):
            return text
        return f"{text} (default: %(default)s)".lstrip()
