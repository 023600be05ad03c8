"""Rank side of the engine tests' shared launch (tests/core/conftest.py): the engine suite of
test_engine_exactness.py and the fused-attention suite of test_fused_attention.py, one after
the other on the same partition, each under its own key."""
from __future__ import annotations

from typing import Optional

from tests.core import engine_cases


def engine_and_fused(ctx, engine: dict, fused: Optional[dict] = None) -> dict:
    """``{"engine": engine_cases.suite(...), "fused": fused_attention_cases.suite(...)}``;
    ``fused`` is None where the native library is missing (its tests are skipped there)."""
    out = {"engine": engine_cases.suite(ctx, **engine)}
    if fused is not None:
        from tests.core import fused_attention_cases
        out["fused"] = fused_attention_cases.suite(ctx, **fused)
    return out


def several(ctx, calls: list) -> dict:
    """Run ``[name, module, function, kwargs]`` calls one after the other (``module``: a case
    file's dotted name, e.g. ``tests.core.reduce_cases``); ``{name: result}``. Nothing is
    caught: a call that raises on a rank fails the launch with that rank's traceback (the
    others would wait in a collective)."""
    import importlib
    return {name: getattr(importlib.import_module(module), function)(
        ctx, **kwargs) for name, module, function, kwargs in calls}
