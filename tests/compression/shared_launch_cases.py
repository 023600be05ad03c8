"""Rank side of the compression tests' shared launch (tests/compression/conftest.py): the
``suite`` of each named case file (rank_cases.py, wire_cases.py) on the same partition, one
after the other, each under its file's name."""
from __future__ import annotations

import importlib


def suites(ctx, parts: str, groups: dict) -> dict:
    """``{module: module.suite(ctx, parts, groups[module])}``. Nothing is caught: a group that
    raises fails the launch with the rank's traceback (the other ranks would wait in a
    collective)."""
    return {module: importlib.import_module(f"tests.compression.{module}").suite(ctx, parts, names)
            for module, names in groups.items()}
