"""The heterogeneous zoo: every configuration of what ``torch_geometric.nn`` offers for
``HeteroData`` (``pyg_sar.testing.zoo_hetero_recipes``) is EXACT or REFUSED at P = 1 and P = 3,
in modes sar, sa, halo, against plain PyG on the whole HeteroData (every node type's output,
every node type's ``x`` and edge type's ``edge_attr`` gradient and every parameter gradient
within float64 relative error 1e-10).

One launch per P runs every recipe. The results are written as JSON to
``$PYG_SAR_ZOO_HETERO_RESULTS`` (default: the pytest temporary directory; the path is printed
in the docs test's message) and the "Heterogeneous graphs" table of docs/supported_layers.md
must be the one generated from them.
"""
from __future__ import annotations

import pytest

from pyg_sar.testing.zoo import EXACT, REFUSED, recorded
from pyg_sar.testing.zoo_hetero import run_hetero_zoo
from pyg_sar.testing.zoo_hetero_recipes import (
    HETERO_RECIPES,
    NOT_IN_HETERO_ZOO,
    hetero_names,
    unclassified_hetero_names,
)
from pyg_sar.testing.zoo_recipes import CONV_RECIPES
from pyg_sar.testing.zoo_report import docs_mismatch


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    work = tmp_path_factory.mktemp("zoo_hetero")
    return recorded(run_hetero_zoo(work), work, "PYG_SAR_ZOO_HETERO_RESULTS")


def test_every_hetero_class_has_a_recipe():
    missing = unclassified_hetero_names()
    assert not missing, (f"torch_geometric.nn exports names for heterogeneous graphs without a "
                         f"heterogeneous zoo recipe: {missing}; add them to "
                         f"pyg_sar/testing/zoo_hetero_recipes.py (or to NOT_IN_HETERO_ZOO with "
                         f"the reason)")


def test_enumeration_finds_the_known_hetero_classes():
    """The introspection is not vacuous: it finds what this PyG is known to offer, and
    every name kept out of the zoo is one it found."""
    found = set(hetero_names())
    assert {"to_hetero", "to_hetero_with_bases", "HeteroConv", "HGTConv", "HANConv",
            "HEATConv", "RGCNConv", "RGATConv", "FastRGCNConv", "HeteroLinear",
            "HeteroDictLinear", "HeteroBatchNorm", "HeteroLayerNorm",
            "HeteroJumpingKnowledge"} <= found
    assert set(NOT_IN_HETERO_ZOO) <= found


def test_each_class_is_in_one_table():
    """HeteroConv, HGTConv and HANConv (dicts of node and edge types) are only in the
    heterogeneous zoo."""
    homogeneous = {rec.cls.__name__ for rec in CONV_RECIPES}
    assert not {"HeteroConv", "HGTConv", "HANConv"} & homogeneous
    assert len({rec.name for rec in HETERO_RECIPES}) == len(HETERO_RECIPES)


@pytest.mark.parametrize("name", [rec.name for rec in HETERO_RECIPES])
def test_exact_or_refused(zoo, name):
    rec = zoo["by_name"][name]
    assert rec["outcome"] in (EXACT, REFUSED), (
        f"{name} ({rec['class']}: {rec['options']}) is neither exact nor refused: "
        f"{rec['detail']}")


def test_every_cell_compared_outputs_and_gradients(zoo):
    """An exact recipe's cells compared every node type's output and some gradient (the
    comparison cannot pass by comparing nothing)."""
    for rec in zoo["results"]["recipes"]:
        if rec["outcome"] != EXACT:
            continue
        for key, cell in rec["cells"].items():
            assert cell["status"] == "exact", (rec["name"], key, cell)
    assert sum(r["outcome"] == EXACT for r in zoo["results"]["recipes"]) >= 20


def test_docs_table_is_generated_from_these_results(zoo):
    problem = docs_mismatch(zoo["results"], zoo["path"], hetero=True)
    assert problem is None, problem
