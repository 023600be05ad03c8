"""Pairs that index like PyG's (pyg_sar.link.pair_ids): ``z[edge_label_index[0]]`` over a
partition equals one process on the whole graph (rank side: pair_ids_cases.py, in the shared
pairs launch at P = 1, 3, 4 on a random partition; second tier, with test_gather.py and
test_negatives.py). One process, first tier: test_pair_ids_one_process.py."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WORLD_SIZES = (1, 3, 4)
TOL = 1e-12


@pytest.fixture(scope="module")
def launches(tmp_path_factory) -> dict[int, list[dict]]:
    pairs = runpy.run_path(str(HERE / "pairs_cases.py"))["shared"]()
    return pairs.suite_results(tmp_path_factory, "pair_ids")


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_rows_of_pairs_come_from_their_owners(launches, p):
    for rank, res in enumerate(launches[p]):
        assert res["rows"] and res["rows_grad"], (p, rank)


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_torch_losses_of_fetched_rows_equal_one_process(launches, p):
    for rank, res in enumerate(launches[p]):
        assert set(res["losses"]) == {"bce_module", "bce_sum", "mse", "mean", "none_then_mean"}
        for name, (value, grad) in res["losses"].items():
            assert value <= TOL and grad <= TOL, (p, rank, name, value, grad)


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_a_tuple_index_takes_the_rows_first_or_is_refused(launches, p):
    for res in launches[p]:
        assert res["rows_then_column"]
        msg = res["pairs_not_first"]
        assert msg is not None and "index the rows first" in msg, msg


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_selection_keeps_pairs_and_arithmetic_does_not(launches, p):
    for res in launches[p]:
        assert all(res["kept"].values()), res["kept"]


@pytest.mark.parametrize("p", (3, 4))
def test_a_tensor_that_is_not_the_ranks_rows_is_refused_on_every_rank(launches, p):
    for rank, res in enumerate(launches[p]):
        msg = res["not_rows"]
        assert msg is not None and not msg.startswith("WRONG"), (rank, msg)
        assert "rows" in msg, msg


def test_pyg_form_negatives_are_the_same_for_every_p(launches):
    want = launches[1][0]["negatives"]
    assert len(want[0]) == 31 and want[0] != want[1]  # a second call draws others
    for p in WORLD_SIZES:
        for res in launches[p]:
            assert res["neg_is_pairs"]
            assert res["negatives"] == want, p


@pytest.mark.parametrize("p", WORLD_SIZES)
def test_roc_auc_score_is_over_every_rank(launches, p):
    for res in launches[p]:
        got, want = res["auc"]
        assert abs(got - want) <= 1e-15, (got, want)
