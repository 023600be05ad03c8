"""The 3-rank launch shared by test_grad_sync.py, test_losses.py, test_mistakes_training.py and
test_values_graph.py (its P = 3 half). The first three check their cases
(``training_cases.py``) on the same METIS partition of ``training_cases.make_graph()``; the
values suite (``values_cases.py``) runs on its own partition in the same launch
(``shared_launch_cases.several``). A rank start imports torch and PyG: three launches of 3
ranks saved. A rank that raises fails these files' tests with its traceback (naming the case
function); a wrong value fails its own test, as before."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TRAINING_CASES = ("grad_sync", "losses", "mistakes", "entry_points")


@pytest.fixture(scope="session")
def api_p3_launch(tmp_path_factory) -> dict[str, list]:
    """Case name ("grad_sync", "losses", "mistakes", "values") -> the 3 ranks' results."""
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    root = tmp_path_factory.mktemp("api_p3")
    make_graph = runpy.run_path(str(HERE / "training_cases.py"))["make_graph"]
    pyg_sar.partition_graph(make_graph(), 3, root / "training", method="metis")
    make_data = runpy.run_path(str(HERE / "values_cases.py"))["make_data"]
    pyg_sar.partition_graph(make_data(), 3, root / "values", method="metis")
    calls = [[name, "training_cases", name, {"parts": str(root / "training")}]
             for name in TRAINING_CASES]
    calls.append(["values", "values_cases", "suite", {"parts": str(root / "values")}])
    ranks = run_on_ranks(f"{HERE / 'shared_launch_cases.py'}:several", 3, timeout=1500,
                         kwargs={"calls": calls})
    return {name: [res[name] for res in ranks] for name, *_ in calls}
