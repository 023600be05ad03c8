"""Rank side of the api tests' shared 3-rank launch (tests/api/conftest.py): case functions of
tests/api's case files, one after the other, each with its own arguments."""
from __future__ import annotations

import importlib


def several(ctx, calls: list) -> dict:
    """Run ``[name, module, function, kwargs]`` calls in order; ``{name: result}``. Nothing is
    caught: a call that raises on a rank fails the launch with that rank's traceback (the
    other ranks would wait in a collective)."""
    return {name: getattr(importlib.import_module(f"tests.api.{module}"), function)(ctx, **kwargs)
            for name, module, function, kwargs in calls}
