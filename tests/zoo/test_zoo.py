"""The zoo: every class of ``torch_geometric.nn.conv`` (and the node-level models of
``torch_geometric.nn.models``) is EXACT or REFUSED, at P = 1 and P = 3, in modes sar, sa, halo.

One launch per P runs every recipe (a crash inside a converted layer on several ranks costs one
more launch). The results are written as JSON to ``$PYG_SAR_ZOO_RESULTS`` (default: the pytest
temporary directory; the path is printed in the docs test's message) and the table of
docs/supported_layers.md must be the one generated from them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyg_sar.testing.zoo import EXACT, REFUSED, run_zoo, write_results
from pyg_sar.testing.zoo_models import MODEL_RECIPES, unclassified_models
from pyg_sar.testing.zoo_recipes import CONV_RECIPES, unclassified_classes
from pyg_sar.testing.zoo_report import (
    BEGIN,
    END,
    SUPPORTED_PAGE,
    marked_section,
    supported_table,
)

ROOT = Path(__file__).resolve().parents[2]
RECIPES = CONV_RECIPES + MODEL_RECIPES


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    work = tmp_path_factory.mktemp("zoo")
    results = run_zoo(work)
    path = Path(os.environ.get("PYG_SAR_ZOO_RESULTS") or work / "results.json")
    write_results(results, path)
    return {"results": results, "path": path,
            "by_name": {rec["name"]: rec for rec in results["recipes"]}}


def test_every_conv_class_has_a_recipe():
    missing = unclassified_classes()
    assert not missing, (f"torch_geometric.nn.conv exports classes without a zoo recipe: "
                         f"{missing}; add them to pyg_sar/testing/zoo_recipes.py")


def test_every_model_is_classified():
    missing = unclassified_models()
    assert not missing, (f"torch_geometric.nn.models exports names neither in the model zoo "
                         f"nor in NOT_IN_ZOO: {missing} (pyg_sar/testing/zoo_models.py)")


@pytest.mark.parametrize("name", [rec.name for rec in RECIPES])
def test_exact_or_refused(zoo, name):
    rec = zoo["by_name"][name]
    assert rec["outcome"] in (EXACT, REFUSED), (
        f"{name} ({rec['class']}: {rec['options']}) is neither exact nor refused: "
        f"{rec['detail']}")


def test_docs_table_is_generated_from_these_results(zoo):
    page = SUPPORTED_PAGE.relative_to(ROOT)
    section = marked_section(SUPPORTED_PAGE.read_text(encoding="utf-8"))
    regenerate = (f"python -m pyg_sar.testing.zoo_report --results {zoo['path']} "
                  f"--write-docs")
    assert section is not None, (
        f"{page} has no '{BEGIN}' ... '{END}' markers around its supported-layers table; "
        f"add them, then run: {regenerate}")
    assert section == supported_table(zoo["results"]), (
        f"{page}'s zoo table differs from the table generated from this run's results; "
        f"run: {regenerate}")
