"""The bf16 zoo: every recipe the float64 zoo finds exact runs under bf16 autocast and in pure
bf16 (``model.bfloat16()``) at P = 1 and P = 3, modes sar and halo, no further from the float32
result than single-process PyG in the same precision (criterion, slack and floor:
:mod:`pyg_sar.testing.zoo_precision`).

One launch per P runs every recipe. The results are written as JSON to
``$PYG_SAR_ZOO_BF16_RESULTS`` (default: the pytest temporary directory); the summary test prints
the recipes where single-process PyG itself raises in bf16.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from pyg_sar.testing.zoo import write_results
from pyg_sar.testing.zoo_models import MODEL_RECIPES
from pyg_sar.testing.zoo_precision import (
    FAIL,
    FLOOR,
    PASS,
    PYG_FAILS,
    REFUSED,
    run_precision_zoo,
)
from pyg_sar.testing.zoo_precision_rank import ILL_CONDITIONED
from pyg_sar.testing.zoo_recipes import CONV_RECIPES

RECIPES = CONV_RECIPES + MODEL_RECIPES


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    work = tmp_path_factory.mktemp("zoo_bf16")
    results = run_precision_zoo(work)
    path = Path(os.environ.get("PYG_SAR_ZOO_BF16_RESULTS") or work / "results.json")
    write_results(results, path)
    return {"results": results, "path": path,
            "by_name": {rec["name"]: rec for rec in results["recipes"]}}


@pytest.mark.parametrize("name", [rec.name for rec in RECIPES])
def test_bf16_within_pyg(zoo, name):
    rec = zoo["by_name"][name]
    assert rec["outcome"] in (PASS, PYG_FAILS, REFUSED), (
        f"{name} ({rec['class']}: {rec['options']}) in bf16: {rec['detail']} "
        f"(results: {zoo['path']})")


def test_summary(zoo):
    """Every recipe has every cell; the comparison is not vacuous (pyg_sar's bf16 results are
    measurably off float32 somewhere, i.e. bf16 really ran, and PyG's too); the recipes where
    single-process PyG raises are listed."""
    results = zoo["results"]
    unknown = set(ILL_CONDITIONED) - {rec.name for rec in RECIPES}
    assert not unknown, f"ILL_CONDITIONED names recipes that do not exist: {sorted(unknown)}"
    expected = {f"P{p}/{mode}:{variant}" for p in results["world_sizes"]
                for mode in results["modes"] for variant in results["variants"]}
    outcomes: dict[str, list[str]] = {}
    largest = {"ours": 0.0, "pyg": 0.0}
    for rec in results["recipes"]:
        assert set(rec["cells"]) == expected, f"{rec['name']}: cells {sorted(rec['cells'])}"
        outcomes.setdefault(rec["outcome"], []).append(rec["name"])
        for cell in rec["cells"].values():
            if cell["status"] == "pass":
                largest["ours"] = max(largest["ours"], cell["distances"]["out"])
                largest["pyg"] = max(largest["pyg"], cell["pyg_distances"]["out"])
    assert largest["ours"] > FLOOR / 4 and largest["pyg"] > FLOOR / 4, largest
    assert all(math.isfinite(v) for v in largest.values()), largest
    assert outcomes.get(PASS), "no recipe passed"
    print(f"\nbf16 zoo in {results['seconds']} s ({results['seconds_per_p']}): "
          + ", ".join(f"{k} {len(v)}" for k, v in sorted(outcomes.items())))
    if outcomes.get(PYG_FAILS):
        print("single-process PyG raises in bf16 (not counted against pyg_sar): "
              + ", ".join(outcomes[PYG_FAILS]))
    if outcomes.get(FAIL):
        print("failing: " + ", ".join(outcomes[FAIL]))
