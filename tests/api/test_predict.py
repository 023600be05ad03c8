"""``pyg_sar.predict`` / ``predict_pairs``: full-graph inference written in original node order.

One launch per P (1 and 3; every case of ``predict_cases.suite`` in it): GraphSAGE and GAT over a
METIS and a random partition, both storages, equal single-process PyG on the whole graph in
original order (float64); a to_hetero model (one array per node type); pair scores in order;
failures on one rank raise on every rank and leave nothing under the final name. And the CLI end
to end on 2 ranks after ``python -m pyg_sar.train --checkpoint``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import pyg_sar
from pyg_sar.testing import find_mpiexec, run_on_ranks
from pyg_sar.testing.launcher import has_mpi
from tests.api import predict_cases as pc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

TOL = 1e-10
LAUNCHES = {"p1": 1, "p3": 3}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = {}
    for name, world in LAUNCHES.items():
        if world > 1 and not has_mpi():
            continue
        root = tmp_path_factory.mktemp(name)
        pyg_sar.partition_graph(pc.make_data(), world, root / "random", method="random",
                                seed=3)
        (root / "out").mkdir()
        launcher = "mpiexec" if world > 1 else "spawn"
        ranks = run_on_ranks(f"{HERE / 'predict_cases.py'}:suite", world, timeout=900,
                             launcher=launcher,
                             kwargs={"root": str(root / "out"),
                                     "random_parts": str(root / "random")})
        out[name] = ranks
    return out


@pytest.fixture(params=sorted(LAUNCHES))
def ranks(request, results):
    if request.param not in results:
        pytest.skip("no MPI")
    return results[request.param]


def test_sage_and_gat_equal_pyg_in_original_order(ranks):
    for res in ranks:
        assert len(res["node_errors"]) == 2 * 2 * 4
        for case, err in res["node_errors"].items():
            assert err <= TOL, (case, err)
        assert res["training_kept"]  # model.train() again after predict
        assert res["method_error"] <= TOL
        assert res["float32"][0] == "float32" and res["float32"][1] <= 1e-5


def test_hetero_one_array_per_node_type(ranks):
    for res in ranks:
        assert res["hetero_files"] == ["author.npy", "paper.npy"]
        for errors in (res["hetero_errors"], res["hetero_shared_errors"]):
            assert set(errors) == {"author", "paper"}
            assert max(errors.values()) <= TOL, errors


def test_pair_scores_in_order(ranks):
    for res in ranks:
        assert res["pairs_same"] <= TOL
        assert res["pairs_spread"] <= TOL
        assert res["pairs_link"] <= TOL
        assert res["pairs_link_training_kept"]


def test_a_failure_on_one_rank_raises_everywhere_and_writes_nothing(ranks):
    world = len(ranks)
    last = world - 1
    for rank, res in enumerate(ranks):
        f = res["failures"]
        for storage in ("gather", "shared"):
            err = f[f"method/{storage}"]
            if rank == last:
                assert err == {"type": "RuntimeError",
                               "message": "simulated failure of the method"}, err
            else:
                assert err["type"] == "RuntimeError", err
                assert f"failed on rank {last}: RuntimeError: simulated failure" in \
                    err["message"]
            err = f[f"short/{storage}"]
            assert err["type"] == "ValueError", err
            assert "one row per local node" in err["message"]
        for storage, who in (("gather", 0), ("shared", last)):
            err = f[f"write/{storage}"]
            assert err["type"] in ("OSError", "RuntimeError"), err
            assert "No space left on device (simulated)" in err["message"], err
            if rank != who:
                assert f"writing the output failed on rank {who}" in err["message"], err
        assert f["bad_storage"]["type"] == "ValueError"
        assert res["fail_dir"] == []  # no final file, no temporary one
        assert res["overwrite_failure"]["type"] == "RuntimeError"
        assert res["old_output_intact"]
        assert res["leftovers"] == []


def test_one_process_plain_graph_and_module_call(tmp_path):
    """Without a launcher, a plain PyG Data is written in its own order; ``pyg_sar.predict``
    is both the module (``python -m pyg_sar.predict``) and the function."""
    import pyg_sar.predict as module
    assert pyg_sar.predict is module and callable(pyg_sar.predict)
    from torch_geometric.nn import GraphSAGE
    data = pc.make_data()
    torch.manual_seed(0)
    model = GraphSAGE(7, 8, 2, 3).double()
    path = pyg_sar.predict(model, data, tmp_path / "plain.npy")
    with torch.no_grad():
        want = model(data.x, data.edge_index).numpy()
    assert np.abs(np.load(path) - want).max() == 0
    assert sorted(os.listdir(tmp_path)) == ["plain.npy"]


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _two_ranks() -> list[str]:
    mpiexec = find_mpiexec()
    if mpiexec is not None:
        return [mpiexec, "-n", "2", sys.executable]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            "--nproc-per-node=2"]


def test_cli_after_train_writes_what_pyg_computes(tmp_path):
    """partition -> train --checkpoint (2 ranks) -> python -m pyg_sar.predict (2 ranks): the
    logits, probabilities and embeddings equal the trained parameters run by plain PyG on the
    whole graph, in original order."""
    from torch_geometric.nn import GraphSAGE

    from pyg_sar.datasets import load_dataset
    parts, ck = tmp_path / "parts", tmp_path / "ck"
    _run([sys.executable, "-m", "pyg_sar.partition", "--dataset", "cora", "--num-parts", "2",
          "--out", str(parts)], tmp_path)
    _run([*_two_ranks(), "-m", "pyg_sar.train", "--parts", str(parts), "--model", "sage",
          "--hidden", "12", "--epochs", "3", "--dtype", "float64", "--checkpoint", str(ck),
          "--progress", "log"], tmp_path)
    outputs = {}
    for output, storage in (("logits", "gather"), ("probabilities", "shared"),
                            ("embedding", "gather")):
        target = tmp_path / f"{output}.npy"
        proc = _run([*_two_ranks(), "-m", "pyg_sar.predict", "--parts", str(parts),
                     "--checkpoint", str(ck), "--out", str(target), "--output", output,
                     "--storage", storage], tmp_path)
        assert f"wrote {output}" in proc.stdout and "epoch 3" in proc.stdout
        outputs[output] = np.load(target)
    # the reference: the checkpoint's parameters in plain PyG on the whole graph
    latest = json.loads((ck / "latest.json").read_text())
    state = torch.load(ck / latest["snapshot"] / "rank0.pt", weights_only=True)["model"]
    data = load_dataset("cora")
    model = GraphSAGE(data.num_features, 12, 2, int(data.y.max()) + 1).double()
    model.load_state_dict(state)
    model.eval()
    hidden = {}
    model.convs[-1].register_forward_pre_hook(lambda m, i: hidden.__setitem__("z", i[0]))
    with torch.no_grad():
        logits = model(data.x.double(), data.edge_index)
    for name, want in (("logits", logits), ("probabilities", logits.softmax(-1)),
                       ("embedding", hidden["z"])):
        got = outputs[name]
        assert got.shape == tuple(want.shape) and got.dtype == np.float64, name
        assert np.abs(got - want.numpy()).max() <= TOL, name
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
