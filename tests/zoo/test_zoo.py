"""The zoo: every class of ``torch_geometric.nn.conv`` (and the node-level models of
``torch_geometric.nn.models``) is EXACT or REFUSED, at P = 1 and P = 3, in modes sar, sa, halo.

One launch per P runs every recipe (a crash inside a converted layer on several ranks costs one
more launch). The results are written as JSON to ``$PYG_SAR_ZOO_RESULTS`` (default: the pytest
temporary directory; the path is printed in the docs test's message) and the table of
docs/supported_layers.md must be the one generated from them.
"""
from __future__ import annotations

import pytest

from pyg_sar.testing.zoo import EXACT, REFUSED, recorded, run_zoo
from pyg_sar.testing.zoo_models import MODEL_RECIPES, unclassified_models
from pyg_sar.testing.zoo_recipes import CONV_RECIPES, unclassified_classes
from pyg_sar.testing.zoo_report import docs_mismatch

RECIPES = CONV_RECIPES + MODEL_RECIPES


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    work = tmp_path_factory.mktemp("zoo")
    return recorded(run_zoo(work), work, "PYG_SAR_ZOO_RESULTS")


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
    problem = docs_mismatch(zoo["results"], zoo["path"])
    assert problem is None, problem
