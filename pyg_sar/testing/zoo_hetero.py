"""The heterogeneous zoo's driver: every recipe of
:mod:`pyg_sar.testing.zoo_hetero_recipes` at P = 1 and P = 3 in modes sar, sa, halo,
classified EXACT / REFUSED / FAIL by the same rules as the homogeneous zoo
(:mod:`pyg_sar.testing.zoo`), on partitions of the heterogeneous zoo graph written by
``pyg_sar.partition_graph(HeteroData, ...)`` (random parts at P > 1: many cut edges of every
edge type). One launch per P runs every cell (the rank side is
:mod:`pyg_sar.testing.zoo_hetero_rank`).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

from pyg_sar.testing.zoo import MODES, WORLD_SIZES, partition, run_recipes
from pyg_sar.testing.zoo_hetero_recipes import HETERO_RECIPES, make_hetero_graph

HETERO_LAUNCH_TIMEOUT_S = 420.0  # hang detector for one launch (all recipes take ~1 min)
_TARGET = "pyg_sar.testing.zoo_hetero_rank:run"


def run_hetero_zoo(work: str | Path, world_sizes: tuple[int, ...] = WORLD_SIZES,
                   modes: tuple[str, ...] = MODES, names: Optional[list[str]] = None,
                   timeout: float = HETERO_LAUNCH_TIMEOUT_S) -> dict[str, Any]:
    """Run the heterogeneous zoo (or the recipes ``names``); JSON-ready results in the form of
    :func:`pyg_sar.testing.zoo.run_zoo`'s (every recipe's ``table`` is ``"hetero"``)."""
    work = Path(work)
    table = {rec.name: rec for rec in HETERO_RECIPES}
    unknown = [n for n in names or [] if n not in table]
    if unknown:
        raise ValueError(f"unknown heterogeneous zoo recipes {unknown}; known: {sorted(table)}")
    chosen = [table[n] for n in names] if names is not None else list(HETERO_RECIPES)
    start = time.monotonic()
    parts = partition(work, world_sizes, make_hetero_graph())
    return run_recipes(chosen, parts, work, world_sizes, modes, start, "hetero", timeout,
                       target=_TARGET)
