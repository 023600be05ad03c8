"""Argument types shared by the command-line tools (``python -m pyg_sar.train``,
``python -m pyg_sar.partition``): a bad value is an argparse error naming the flag."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1, for ``type=`` of an argparse option."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 (got {text!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 (got {value})")
    return value
