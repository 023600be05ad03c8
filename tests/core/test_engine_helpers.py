"""DDP compatibility, distributed batch norm, global loss and accuracy on real processes."""
from __future__ import annotations

from pathlib import Path

import pytest

import pyg_sar
from pyg_sar.testing import run_on_ranks
from tests.core import engine_cases as ec

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("helpers") / "p3"
    pyg_sar.partition_graph(ec.make_graph(), 3, root, method="metis")
    return str(root)


def gloo3_call(root: Path) -> list:
    """The DDP case of the shared P = 3 spawn/gloo launch (tests/core/conftest.py): its
    partition (METIS, as the ``parts`` fixture's) and ``[name, module, function, kwargs]``."""
    pyg_sar.partition_graph(ec.make_graph(), 3, root, method="metis")
    return ["ddp", "tests.core.helper_cases", "ddp", {"parts": str(root)}]


def test_ddp_with_sum_hook_gives_single_process_gradients(gloo3_launch):
    """Under spawn/gloo, in the launch shared with test_reduce.py and test_model_adapters.py."""
    for res in gloo3_launch["ddp"]:
        assert res["loss_diff"] <= 1e-12
        assert res["grad_rel"] <= 1e-10


def test_batch_norm_loss_and_accuracy_use_global_statistics(parts):
    for rank, res in enumerate(run_on_ranks(f"{HERE / 'helper_cases.py'}:helpers", 3,
                                            kwargs={"parts": parts}, timeout=300)):
        assert res["running_stats"] <= 1e-12, rank
        assert res["eval_out"] <= 1e-10, rank
        assert set(res["accuracy"]) == {"train", "rank0_only"}
        assert max(res["accuracy"].values()) <= 1e-12, (rank, res["accuracy"])
        assert res["loss_rank0_only"] <= 1e-12, rank
