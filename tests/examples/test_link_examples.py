"""``examples/link_pred.py`` (PyG's script, ported) runs under ``mpiexec -n 2`` and as one
process, and learns.

Its hard-coded 100-epoch loop is stopped after ``MAX_EPOCHS`` by ``tests/examples/runner.py``
(without editing the script). The floor sits well under what the runs reach here (about 0.78
after 20 epochs, 0.91 after 100) and well above chance (AUC 0.5). The 2-rank run and the
single process train on the same pairs; their float32 numbers drift apart within a few epochs
(Adam's first steps move a parameter by about lr * sign(gradient), and near-zero gradients
differ in sign from rounding), so they are not compared here: the float64 comparisons with
PyG are in tests/link/test_link_exactness.py and tests/train/test_train_link.py.
``examples/recommendation.py`` is tested in test_recommendation_example.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_examples import (  # noqa: E402
    EXAMPLES,
    TIMEOUT_S,
    _has_mpi,
    final_test_accuracy,
    launch,
    sections,
)

RUNNER = Path(__file__).with_name("runner.py")
MAX_EPOCHS = 20
AUC_FLOOR = 0.70


@pytest.mark.parametrize("ranks", [2, 1])
def test_link_pred_example_learns(ranks, tmp_path):
    if ranks > 1 and not _has_mpi():
        pytest.skip("needs mpiexec and mpi4py")
    cmd = [sys.executable, str(RUNNER), "--max-epochs", str(MAX_EPOCHS),
           str(EXAMPLES / "link_pred.py")]
    runs = dict(sections(launch(cmd, tmp_path, ranks=ranks, timeout=TIMEOUT_S)))
    lines = runs["link_pred.py"]
    epochs = [line for line in lines if line.startswith("Epoch:")]
    assert len(epochs) == MAX_EPOCHS, "\n".join(lines[-5:])
    assert lines[-1].startswith("Final Test:"), lines[-1]
    assert final_test_accuracy(lines) >= AUC_FLOOR, "\n".join(lines[-5:])
