"""The zoo's classification and the supported-layers table, on hand-made cell records (no
launches)."""
from __future__ import annotations

import pytest

from pyg_sar.testing.zoo import EXACT, FAIL, REFUSED, classify, merge_ranks
from pyg_sar.testing.zoo_report import (
    BEGIN,
    END,
    SUPPORTED_PAGE,
    marked_section,
    replace_section,
    supported_table,
)


def ran(out=1e-16, grad=2e-16, notes=()):
    return {"status": "ran", "errors": {"out": out, "grad:x": grad}, "notes": list(notes)}


def refused(message="pyg_sar.convert: layer '' (ChebConv): reason", names=True):
    return {"status": "refused", "message": message, "names_class": names}


def crash(stage="forward"):
    return {"status": "crash", "stage": stage,
            "error": {"type": "TypeError", "message": "boom", "traceback": ""}}


def cells(*per_cell):
    keys = [f"P{p}/{m}" for p in (1, 3) for m in ("sar", "sa", "halo")]
    return dict(zip(keys, per_cell))


def test_exact_needs_every_cell_within_tolerance():
    good = merge_ranks([ran(), ran(), ran()])
    assert good["status"] == "exact"
    assert classify(cells(*[good] * 6))[0] == EXACT
    bad = merge_ranks([ran(), ran(grad=3e-3), ran()])
    assert bad["status"] == "wrong" and bad["worst"] == "grad:x" and bad["max_error"] == 3e-3
    outcome, detail = classify(cells(*[good] * 5, bad))
    assert outcome == FAIL and "P3/halo" in detail and "3.0e-03" in detail


def test_nan_and_notes_are_wrong():
    assert merge_ranks([ran(out=float("nan"))])["status"] == "wrong"
    assert merge_ranks([ran(notes=["output shape [3], expected [4]"])])["status"] == "wrong"


def test_refused_only_everywhere_and_naming_the_class():
    r = merge_ranks([refused()] * 3)
    assert classify(cells(*[r] * 6)) == (REFUSED, refused()["message"])
    unnamed = merge_ranks([refused(names=False)] * 3)
    assert classify(cells(*[r] * 5, unnamed))[0] == FAIL
    exact = merge_ranks([ran()])
    assert classify(cells(*[r] * 3, *[exact] * 3))[0] == FAIL  # refused only sometimes


def test_crash_on_one_rank_fails_the_cell():
    merged = merge_ranks([ran(), crash(), ran()])
    assert merged["status"] == "crash" and merged["rank"] == 1
    outcome, detail = classify(cells(*[merge_ranks([ran()])] * 5, merged))
    assert outcome == FAIL and "CRASH in forward: TypeError: boom" in detail


def test_accepted_without_oracle_fails():
    no_oracle = {"status": "no_oracle",
                 "error": {"type": "ImportError", "message": "needs pyg-lib", "traceback": ""}}
    assert classify(cells(*[no_oracle] * 6))[0] == FAIL


def _results(outcome, detail):
    return {"versions": {"torch_geometric": "2.8.1", "torch": "2", "pyg_sar": "0"},
            "tolerance": 1e-10, "world_sizes": [1, 3], "modes": ["sar", "sa", "halo"],
            "recipes": [{"name": "X", "table": "conv", "class": "XConv", "options": "a|b",
                         "requires": None, "requires_available": True, "outcome": outcome,
                         "detail": detail, "cells": {}}]}


def test_supported_table_rows():
    table = supported_table(_results(REFUSED, "pyg_sar.convert: layer '' (XConv): no"))
    assert "| `XConv` | a\\|b | refused: layer '' (XConv): no |" in table
    table = supported_table(_results(EXACT, "max relative error 1e-16"))
    assert "exact (sar, sa, halo; P = 1, 3)" in table
    assert "not exact, not refused" in supported_table(_results(FAIL, "P1/sar: CRASH"))


def test_replace_between_markers():
    text = f"a\n{BEGIN}\nold\n{END}\nb\n"
    new = replace_section(text, "new table")
    assert new == f"a\n{BEGIN}\nnew table\n{END}\nb\n"
    assert marked_section(new) == "new table"
    assert marked_section("no markers") is None
    with pytest.raises(ValueError, match="markers"):
        replace_section("no markers", "t")


def test_supported_page_has_the_markers():
    """The docs page the zoo test checks holds exactly one marked table."""
    text = SUPPORTED_PAGE.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, SUPPORTED_PAGE
    section = marked_section(text)
    assert section is not None and "**Layers of `torch_geometric.nn.conv`**" in section
