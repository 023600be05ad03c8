"""The bf16 zoo: every recipe the float64 zoo finds exact, in bf16, no further from float32
than single-process PyG in bf16.

For every recipe (:mod:`pyg_sar.testing.zoo_recipes`, :mod:`pyg_sar.testing.zoo_models`) on a
float32 copy of the zoo graph, at P = 1 and P = 3 (one launch per P), in modes sar and halo,
in two precision variants (:data:`~pyg_sar.testing.zoo_precision_rank.VARIANTS`):

* ``autocast``: the forward runs under ``torch.autocast("cpu", dtype=torch.bfloat16)`` (model
  and inputs float32);
* ``bf16``: the module and the floating inputs are cast to bf16 (``model.bfloat16()``).

The oracle is single-process PyG in float32 on the whole graph. Each side's distance from the
oracle is measured per tensor as the relative L2 error ``||got - want|| / ||want||`` of the
output (all rows) and of every gradient: every differentiable input (all rows; a P-rank run
sums its ranks' squared errors, so it is the whole graph's error) and every parameter (after
:func:`pyg_sar.all_reduce_gradients`; a parameter's reference is at least 2^-6 of all parameter
gradients together, and a gradient that is zero in exact arithmetic, e.g. a bias before a batch
norm, is measured against all of them, as the float64 zoo measures parameters). The backward
pass is the float64 zoo's: a fixed random weighting of the output, summed in float32.

**Baseline**: single-process PyG in the same variant, on the graph and on three perturbed copies
of it (nodes relabelled, edges reordered, every floating input multiplied by ``1 + 2^-8 r``, ``r``
uniform in [-1, 1]: one bf16 rounding, a graph bf16 cannot tell from the original); per tensor
``d_pyg`` is the largest of the four distances, all four recorded. The perturbed runs measure
PyG's own spread: where a tensor is ill-conditioned (a ReLU input within rounding of 0 flips, a
softmax gradient that cancels, a learnable softmax temperature) any other bf16 computation of
the same function lands anywhere in that spread, and on this graph such tensors move by 2 to 30
times PyG's single-run distance under the perturbation alone (measured: ``DeepGCNLayer`` with
batch norm, one ReLU flip of 480 moves a norm bias gradient from 0.3 % to 4-5 %).

A recipe listed in :data:`~pyg_sar.testing.zoo_precision_rank.ILL_CONDITIONED` (with the
measurement that put it there) takes 20 perturbed copies instead of three: same criterion, a
larger sample of PyG's spread where three under-sample it.

**Criterion**, per tensor: ``d_pyg_sar <= SLACK * d_pyg + FLOOR`` with :data:`SLACK` = 2 and
:data:`FLOOR` = 2^-7, and the output dtype must be PyG's (a converted layer computing in another
precision than PyG's is wrong however close it is). Why these values:

* Both sides are bf16 computations of the same function. Their roundings fall at different
  points (pyg_sar splits each aggregation into blocks, accumulates them in float32 and rounds
  once at the end; in ``sar`` mode it recomputes messages in backward), so neither distance is
  a lower bound of the other: pyg_sar is usually closer (fewer bf16 roundings), but on a given
  tensor it can land on the other side of PyG's error. Independent rounding sequences of the
  same length give errors of the same size whose ratio varies by tens of percent around 1 on
  these small tensors; a factor 2 covers that and still fails an error that bf16 handling makes
  systematically worse (a statistic accumulated in bf16, a cast in the wrong place, a lost
  float32 accumulator: each costs well over a factor 2 on the zoo's aggregations, whose
  in-degrees reach 12).
* The floor covers tensors that PyG happens to compute (almost) exactly, e.g. a gradient that
  passes only through operations autocast keeps in float32, while pyg_sar rounds a gathered row
  to bf16 once: one bf16 rounding has relative size 2^-8, and a layer's output sums a few such
  terms, so 2^-7 (0.0078) is the size of "one extra rounding". It is an order of magnitude below
  a wrong result (a missing edge, a wrong normaliser or a dropped block moves a tensor by 5 % or
  more on this graph).

PyG's baselines are single-process, so the same at every P: the first launch computes them
(rank 0) and records them in the work folder, later launches read them.

A cell where single-process PyG raises in a variant is recorded as ``pyg_fails`` (not a failure
of pyg_sar's) and listed; at P = 1 the converted copy still runs there (its result recorded), at
P > 1 it is not run (a crash on several ranks would end the launch and prove nothing more). One
where pyg_sar raises, or exceeds the bound where PyG ran, is a failure. A recipe ``convert``
refuses is REFUSED here as in the float64 zoo (it must be refused in every cell, naming its
class).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Optional

import torch
import torch_geometric

import pyg_sar
from pyg_sar.testing.zoo import (
    WORLD_SIZES,
    _cell_key,
    _first_line,
    partition,
    recipe_table,
    run_world_size,
)
from pyg_sar.testing.zoo_precision_rank import VARIANTS, make_graph_f32

SLACK = 2.0
FLOOR = 2.0 ** -7
MODES = ("sar", "halo")
PASS, PYG_FAILS, REFUSED, FAIL = "PASS", "PYG_FAILS", "REFUSED", "FAIL"
LAUNCH_TIMEOUT_S = 600.0
_TARGET = "pyg_sar.testing.zoo_precision_rank:run"


def bound(d_pyg: float) -> float:
    """The largest distance pyg_sar may have where single-process PyG has ``d_pyg``."""
    return SLACK * d_pyg + FLOOR


def merge_cell(records: list[dict]) -> dict[str, Any]:
    """One cell from its per-rank records: a crash anywhere is the cell's, else rank 0's
    record (it holds the whole graph's distances and PyG's), judged by the criterion."""
    seconds = max(r.get("seconds", 0.0) for r in records)
    pyg = records[0].get("pyg") or {}
    crashes = [(rank, r) for rank, r in enumerate(records) if r["status"] == "crash"]
    if crashes:
        rank, r = crashes[0]
        if "error" in pyg:  # single-process PyG raises in this precision too
            return {"status": "pyg_fails", "pyg_error": pyg["error"], "error": r["error"],
                    "rank": rank, "seconds": seconds}
        return {**r, "rank": rank, "seconds": seconds}
    statuses = {r["status"] for r in records}
    if statuses == {"refused"}:
        return {"status": "refused", "message": records[0]["message"], "seconds": seconds,
                "names_class": all(r["names_class"] for r in records)}
    if statuses == {"not_run"}:  # P > 1 where single-process PyG raises: not run
        return {"status": "pyg_fails", "pyg_error": pyg["error"], "not_run": True,
                "seconds": seconds}
    if statuses != {"ran"} and len(statuses) == 1:
        return {**records[0], "seconds": seconds}
    if statuses != {"ran"}:
        return {"status": "inconsistent", "statuses": [r["status"] for r in records],
                "seconds": seconds}
    return {**judge(records[0]["distances"], records[0]["dtype"], records[0]["pyg"]),
            "seconds": seconds}


def judge(ours: dict[str, float], dtype: str, pyg: dict[str, Any]) -> dict[str, Any]:
    """A cell that ran: ``pass`` / ``exceeds`` against PyG's distances (and its output dtype:
    a converted layer computing in another precision than PyG's is wrong however close it
    is), or ``pyg_fails``."""
    cell: dict[str, Any] = {"distances": ours, "dtype": dtype}
    if "error" in pyg:
        return {"status": "pyg_fails", "pyg_error": pyg["error"], **cell}
    theirs = pyg["distances"]
    worst_key, worst = "out", -math.inf
    for key, d in ours.items():
        d_pyg = theirs.get(key, 0.0)  # absent: no gradient on PyG's side, nor the oracle's
        limit = bound(d_pyg) if math.isfinite(d_pyg) else math.inf
        margin = d / limit if d == d else math.inf  # NaN: beyond any bound
        if margin > worst:
            worst_key, worst = key, margin
    if dtype != pyg["dtype"]:
        return {"status": "dtype", "pyg_dtype": pyg["dtype"], **cell}
    status = "pass" if worst <= 1.0 else "exceeds"
    return {"status": status, "worst": worst_key, "margin": worst, "pyg_distances": theirs,
            "pyg_plain": pyg.get("plain"), "pyg_perturbed": pyg.get("perturbed"), **cell}


def describe_cell(cell: dict) -> str:
    """A cell in one line."""
    status = cell["status"]
    if status in ("pass", "exceeds"):
        key = cell["worst"]
        d, d_pyg = cell["distances"][key], cell["pyg_distances"].get(key, 0.0)
        word = "ok" if status == "pass" else "EXCEEDS"
        return f"{word} {key}: {d:.2e} vs PyG {d_pyg:.2e} (bound {bound(d_pyg):.2e})"
    if status == "dtype":
        return f"OUTPUT DTYPE {cell['dtype']}, PyG's is {cell['pyg_dtype']}"
    if status == "pyg_fails":
        err = cell["pyg_error"]
        return f"PyG fails: {err['type']}: {_first_line(err['message'])}"
    if status == "refused":
        return "REFUSED" if cell["names_class"] else "REFUSED without naming the class"
    if status in ("crash", "no_oracle"):
        err = cell["error"]
        return f"{status.upper()} in {cell.get('stage', 'oracle')}: {err['type']}: " \
               f"{_first_line(err['message'])}"
    return f"INCONSISTENT across ranks: {cell.get('statuses')}"


def classify(cells: dict[str, dict]) -> tuple[str, str]:
    """(outcome, detail) of one recipe from its cells (``"P3/sar:autocast"`` -> cell)."""
    statuses = {c["status"] for c in cells.values()}
    if statuses == {"refused"} and all(c["names_class"] for c in cells.values()):
        return REFUSED, _first_line(next(iter(cells.values()))["message"])
    bad = [f"{key}: {describe_cell(c)}" for key, c in cells.items()
           if c["status"] not in ("pass", "pyg_fails")]
    if bad:
        return FAIL, "; ".join(bad)
    ran = [c for c in cells.values() if c["status"] == "pass"]
    worst = max((c["margin"] for c in ran), default=0.0)
    detail = f"worst distance / bound {worst:.2f}"
    if "pyg_fails" in statuses:
        failing = sorted(k for k, c in cells.items() if c["status"] == "pyg_fails")
        return PYG_FAILS, f"{detail}; PyG raises in {', '.join(failing)}: " + describe_cell(
            cells[failing[0]])
    return PASS, detail


def run_precision_zoo(work: str | Path, which: str = "all",
                      world_sizes: tuple[int, ...] = WORLD_SIZES,
                      modes: tuple[str, ...] = MODES, variants: tuple[str, ...] = VARIANTS,
                      names: Optional[list[str]] = None,
                      timeout: float = LAUNCH_TIMEOUT_S) -> dict[str, Any]:
    """Run the bf16 zoo (or the recipes ``names``) and return the JSON-ready results."""
    work = Path(work)
    table = recipe_table(which)
    chosen = [table[n] for n in names] if names is not None else list(table.values())
    keys = [f"{mode}:{variant}" for mode in modes for variant in variants]
    cells = [(rec.name, key) for rec in chosen for key in keys]
    start = time.monotonic()
    parts = partition(work, world_sizes, make_graph_f32())
    per_p, launches, seconds = {}, {}, {}
    for p in world_sizes:
        begun = time.monotonic()
        per_p[p], launches[p] = run_world_size(
            parts[p], p, cells, work, which, timeout, target=_TARGET,
            extra={"baselines": str(work / "baselines.jsonl")})
        seconds[str(p)] = round(time.monotonic() - begun, 1)
    recipes = []
    for rec in chosen:
        merged = {_cell_key(p, key): merge_cell(per_p[p][(rec.name, key)])
                  for p in world_sizes for key in keys}
        outcome, detail = classify(merged)
        recipes.append({"name": rec.name, "table": rec.table, "class": rec.cls.__name__,
                        "options": rec.options, "outcome": outcome, "detail": detail,
                        "cells": merged})
    return {
        "versions": {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                     "pyg_sar": pyg_sar.__version__},
        "slack": SLACK, "floor": FLOOR, "world_sizes": list(world_sizes), "modes": list(modes),
        "variants": list(variants), "launches": {str(p): n for p, n in launches.items()},
        "seconds": round(time.monotonic() - start, 1), "seconds_per_p": seconds,
        "recipes": recipes,
    }
