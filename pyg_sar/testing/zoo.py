"""The zoo driver: run every recipe at P = 1 and P = 3 in modes sar, sa, halo and classify it.

The contract, per recipe (a layer or model configuration, see
:mod:`pyg_sar.testing.zoo_recipes` and :mod:`pyg_sar.testing.zoo_models`):

* **EXACT**: at every P and in every mode, the converted module's output rows, the gradients of
  every differentiable input and every parameter gradient (after
  :func:`pyg_sar.all_reduce_gradients`) match plain PyG on the whole graph within float64
  relative error :data:`TOLERANCE`;
* **REFUSED**: in every cell ``pyg_sar.convert`` raised :class:`pyg_sar.UnsupportedLayerError`
  (before anything ran) with a message naming the class;
* anything else (wrong numbers, a crash anywhere, a refusal at forward time or without the
  class name, a layer ``convert`` accepts that plain PyG cannot run here) is **FAIL**.

One launch per P runs every cell (:func:`pyg_sar.testing.run_on_ranks`). A crash inside a
converted layer on several ranks ends its launch (peers may be blocked or hold messages in
flight); the driver records that cell and starts a new launch after it.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional

import torch
import torch_geometric

import pyg_sar
from pyg_sar.testing.launcher import RankFailure, run_on_ranks
from pyg_sar.testing.zoo_models import recipe_table
from pyg_sar.testing.zoo_recipes import package_available

WORLD_SIZES = (1, 3)
MODES = ("sar", "sa", "halo")
TOLERANCE = 1e-10
EXACT, REFUSED, FAIL = "EXACT", "REFUSED", "FAIL"
LAUNCH_TIMEOUT_S = 900.0  # hang detector for one launch (the whole zoo takes a few minutes)
COMM_TIMEOUT_S = 60.0  # a rank blocked this long in one wait raises (the zoo graph is tiny)
_TARGET = "pyg_sar.testing.zoo_rank:run"


def _cell_key(world_size: int, mode: str) -> str:
    return f"P{world_size}/{mode}"


def _read_logs(log_dir: Path, world_size: int) -> list[dict[tuple[str, str], dict]]:
    """Per rank: (recipe, mode) -> last "start"/"end" record (partial last lines ignored)."""
    per_rank = []
    for rank in range(world_size):
        events: dict[tuple[str, str], dict] = {}
        path = log_dir / f"rank{rank}.jsonl"
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut off by a killed rank
                events[(record["recipe"], record["mode"])] = record
        per_rank.append(events)
    return per_rank


def _launch_error(exc: RankFailure, lines: int = 12) -> dict:
    text = str(exc).strip().splitlines()
    return {"type": type(exc).__name__, "message": "\n".join(text[-lines:]), "traceback": ""}


def run_world_size(parts: Path, world_size: int, cells: list[tuple[str, str]], work: Path,
                   which: str = "all", timeout: float = LAUNCH_TIMEOUT_S,
                   target: str = _TARGET, extra: Optional[dict] = None
                   ) -> tuple[dict[tuple[str, str], list[dict]], int]:
    """Run ``cells`` on ``world_size`` ranks with the rank function ``target`` (the float64
    zoo's by default; ``extra``: more keyword arguments for it); returns per cell the
    per-rank records and the number of launches it took."""
    done: dict[tuple[str, str], list[dict]] = {}
    remaining = list(cells)
    launches = 0
    while remaining:
        log_dir = work / f"log-P{world_size}-{launches}"
        log_dir.mkdir(parents=True)
        launches += 1
        error: Optional[RankFailure] = None
        try:
            run_on_ranks(target, world_size, timeout=timeout, comm_timeout=COMM_TIMEOUT_S,
                         kwargs={"parts": str(parts), "cells": [list(c) for c in remaining],
                                 "log_dir": str(log_dir), "recipes": which,
                                 **(extra or {})})
        except RankFailure as exc:
            error = exc
        logs = _read_logs(log_dir, world_size)
        finished = 0
        for cell in remaining:
            records = [events.get(cell) for events in logs]
            if all(r is not None and r["event"] == "end" for r in records):
                done[cell] = [r["cell"] for r in records]
                finished += 1
                continue
            if error is None:
                raise RuntimeError(f"zoo: launch at P={world_size} returned without "
                                   f"finishing {cell}")
            if not any(events for events in logs):
                raise error  # nothing ran at all: the harness, not a recipe, is broken
            if all(r is None for r in records):
                break  # every rank recorded the previous cell's crash, then stopped
            crashed = [r["cell"] for r in records if r is not None and r["event"] == "end"
                       and r["cell"]["status"] == "crash"]
            done[cell] = crashed or [{"status": "crash", "stage": "launch",
                                      "error": _launch_error(error)}]
            finished += 1
            break
        remaining = remaining[finished:]
        if error is None and remaining:
            raise RuntimeError(f"zoo: launch at P={world_size} left {len(remaining)} cells")
    return done, launches


def merge_ranks(records: list[dict]) -> dict[str, Any]:
    """One cell's result from its per-rank records (the worst rank decides), with the
    slowest rank's seconds."""
    merged = _merge_statuses(records)
    merged["seconds"] = max(r.get("seconds", 0.0) for r in records)
    return merged


def _merge_statuses(records: list[dict]) -> dict[str, Any]:
    crashes = [(rank, r) for rank, r in enumerate(records) if r["status"] == "crash"]
    if crashes:
        rank, r = crashes[0]
        return {**r, "rank": rank}
    statuses = {r["status"] for r in records}
    if statuses == {"refused"}:
        return {"status": "refused", "message": records[0]["message"],
                "names_class": all(r["names_class"] for r in records)}
    if "no_oracle" in statuses:
        return next(r for r in records if r["status"] == "no_oracle")
    if statuses != {"ran"}:
        return {"status": "inconsistent", "statuses": [r["status"] for r in records]}
    worst_value, worst_key, notes = 0.0, "out", []
    for r in records:
        notes += r["notes"]
        for key, value in r["errors"].items():
            if value > worst_value or value != value:  # NaN is the worst
                worst_value, worst_key = value, key
    status = "exact" if worst_value <= TOLERANCE and not notes else "wrong"
    return {"status": status, "max_error": worst_value, "worst": worst_key, "notes": notes}


def describe_cell(cell: dict) -> str:
    """A cell in one line: ``exact 4.4e-16``, ``WRONG 5.6e+03 (grad:x)``, ``CRASH ...``."""
    status = cell["status"]
    if status == "exact":
        return f"exact {cell['max_error']:.1e}"
    if status == "wrong":
        note = f"; {cell['notes'][0]}" if cell["notes"] else ""
        return f"WRONG {cell['max_error']:.1e} ({cell['worst']}{note})"
    if status == "refused":
        return "REFUSED" if cell["names_class"] else "REFUSED without naming the class"
    if status == "no_oracle":
        err = cell["error"]
        return f"ACCEPTED, plain PyG fails here: {err['type']}: {_first_line(err['message'])}"
    if status == "crash":
        err = cell["error"]
        what = "REFUSED AFTER CONVERT (must be at convert)" \
            if err["type"] == "UnsupportedLayerError" else "CRASH"
        return f"{what} in {cell['stage']}: {err['type']}: {_first_line(err['message'])}"
    return f"INCONSISTENT across ranks: {cell.get('statuses')}"


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def classify(cells: dict[str, dict]) -> tuple[str, str]:
    """(outcome, detail) of one recipe from its cells (``"P1/sar"`` -> merged cell)."""
    statuses = {c["status"] for c in cells.values()}
    if statuses == {"exact"}:
        worst = max(c["max_error"] for c in cells.values())
        return EXACT, f"max relative error {worst:.1e}"
    if statuses == {"refused"} and all(c["names_class"] for c in cells.values()):
        messages = {c["message"] for c in cells.values()}
        if len(messages) == 1:
            return REFUSED, messages.pop()
        return FAIL, "refused with different messages: " + " / ".join(sorted(messages))
    bad = [f"{key}: {describe_cell(c)}" for key, c in cells.items()
           if c["status"] not in ("exact", "refused") or not c.get("names_class", True)]
    if not bad:  # exact in some cells, refused in others
        bad = [f"{key}: {describe_cell(c)}" for key, c in cells.items()]
    return FAIL, "; ".join(bad)


def partition(work: Path, world_sizes: Iterable[int], data: Optional[Any] = None
              ) -> dict[int, Path]:
    """The zoo graph (or ``data``) partitioned for every world size (random parts: many cut
    edges)."""
    from pyg_sar.testing.zoo_rank import make_graph

    data = make_graph() if data is None else data
    out = {}
    for p in world_sizes:
        out[p] = work / f"parts-P{p}"
        pyg_sar.partition_graph(data, p, out[p], method="random" if p > 1 else "contiguous",
                                seed=p)
    return out


def run_zoo(work: str | Path, which: str = "all", world_sizes: tuple[int, ...] = WORLD_SIZES,
            modes: tuple[str, ...] = MODES, names: Optional[list[str]] = None,
            timeout: float = LAUNCH_TIMEOUT_S) -> dict[str, Any]:
    """Run the zoo (or the recipes ``names``) and return the JSON-ready results."""
    work = Path(work)
    table = recipe_table(which)
    chosen = [table[n] for n in names] if names is not None else list(table.values())
    start = time.monotonic()
    parts = partition(work, world_sizes)
    return run_recipes(chosen, parts, work, world_sizes, modes, start, which, timeout)


def run_recipes(chosen: list, parts: dict[int, Path], work: Path,
                world_sizes: tuple[int, ...], modes: tuple[str, ...], start: float,
                which: str = "all", timeout: float = LAUNCH_TIMEOUT_S,
                target: str = _TARGET) -> dict[str, Any]:
    """Run the recipes ``chosen`` on the partitions ``parts`` (P -> folder) with the rank
    function ``target``, one launch per P, classify them and return the JSON-ready results
    (``start``: the run's ``time.monotonic()`` start, for its seconds)."""
    cells = [(rec.name, mode) for rec in chosen for mode in modes]
    per_p, launches = {}, {}
    for p in world_sizes:
        per_p[p], launches[p] = run_world_size(parts[p], p, cells, work, which, timeout,
                                               target=target)
    recipes = []
    for rec in chosen:
        merged = {_cell_key(p, mode): merge_ranks(per_p[p][(rec.name, mode)])
                  for p in world_sizes for mode in modes}
        outcome, detail = classify(merged)
        recipes.append({"name": rec.name, "table": rec.table, "class": rec.cls.__name__,
                        "options": rec.options, "requires": rec.requires,
                        "requires_available": package_available(rec.requires),
                        "outcome": outcome, "detail": detail, "cells": merged})
    return {
        "versions": {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                     "pyg_sar": pyg_sar.__version__},
        "tolerance": TOLERANCE, "world_sizes": list(world_sizes), "modes": list(modes),
        "launches": {str(p): n for p, n in launches.items()},
        "seconds": round(time.monotonic() - start, 1),
        "recipes": recipes,
    }


def write_results(results: dict, path: str | Path) -> Path:
    """Write ``results`` as JSON, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(results, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def recorded(results: dict, work: Path, env_var: str) -> dict[str, Any]:
    """A zoo test's record of its run: ``results`` written as JSON to ``$env_var`` (default
    ``work/results.json``), with the path and the recipes by name."""
    path = Path(os.environ.get(env_var) or work / "results.json")
    write_results(results, path)
    return {"results": results, "path": path,
            "by_name": {rec["name"]: rec for rec in results["recipes"]}}

