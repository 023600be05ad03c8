"""``examples/graph_transformer.py`` on 2 ranks follows single-process PyG's loss curve.

One ``mpiexec -n 2`` launch of ``tests/examples/runner.py`` runs the example with
``--compare`` for each model: the model trains over 2 ranks (pyg_sar: the graph partitioned,
the global attention exact across ranks) and, in rank 0's process, PyG's unchanged model
trains on the whole graph from the same initial weights. In float64 with dropout 0, every
epoch's loss of the 2-rank run must equal the single-process loss to a relative 1e-10 (3
epochs, so the optimizer steps' gradients are compared too), and the loss must fall.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.examples.test_examples import EXAMPLES, TIMEOUT_S, _has_mpi, launch, sections

RUNNER = Path(__file__).with_name("runner.py")
SCRIPT = EXAMPLES / "graph_transformer.py"
MODELS = ["gps", "sgformer"]
EPOCHS = 3
ARGS = ["--nodes", "600", "--epochs", str(EPOCHS), "--eval_every", str(EPOCHS),
        "--dropout", "0", "--dtype", "float64", "--compare"]
LOSS = re.compile(r"^Epoch: (\d+), Loss: (\S+) \| PyG: Loss: (\S+)$")
REL_TOL = 1e-10


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> dict[str, list[str]]:
    if not _has_mpi():
        pytest.skip("needs mpiexec and mpi4py")
    tmp = tmp_path_factory.mktemp("graph_transformer_two_ranks")
    cmd = [sys.executable, str(RUNNER)]
    for i, model in enumerate(MODELS):
        cmd += ([":::"] if i else []) + [str(SCRIPT), "--model", model, *ARGS]
    runs = sections(launch(cmd, tmp, ranks=2, timeout=TIMEOUT_S))
    assert [name for name, _ in runs] == [SCRIPT.name] * len(MODELS), runs
    return {model: lines for model, (_, lines) in zip(MODELS, runs)}


@pytest.mark.parametrize("model", MODELS)
def test_graph_transformer_two_ranks_match_one_process(model, two_ranks):
    lines = two_ranks[model]
    assert lines and lines[0].startswith(f"{model}: 600 nodes") and "2 rank(s)" in lines[0], \
        lines[:3]
    curve = [LOSS.match(line) for line in lines]
    curve = [(float(m[2]), float(m[3])) for m in curve if m]
    assert len(curve) == EPOCHS, "\n".join(lines)
    for epoch, (ours, pyg) in enumerate(curve, 1):
        assert abs(ours - pyg) <= REL_TOL * abs(pyg), (model, epoch, ours, pyg)
    assert curve[-1][1] < curve[0][1], curve  # it trains
