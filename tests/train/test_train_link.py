"""``python -m pyg_sar.train --task link``: on 2 ranks under mpiexec it prints and records what
``--reference`` (plain PyG on the whole split in one process, the same negatives) does, and bad
link options are refused naming the flag.

float64 and no dropout: both runs train the same model on the same pairs, so the per-epoch
losses, AUCs and Hits@K agree to 1e-9 (in float32, Adam's first steps, which move a parameter
by about lr * sign(gradient), let runs that differ only in rounding drift apart wherever a
gradient is near zero).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec
from pyg_sar.train import parse_args

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--task", "link", "--dataset", "cora", "--epochs", "12", "--dropout", "0",
        "--weight-decay", "0", "--hidden", "32", "--log-every", "4", "--dtype", "float64",
        "--eval-every", "3"]
AUC_FLOOR = 0.70  # 12 epochs reach about 0.85 here; chance is 0.5


def _run(args: list[str], tmp: Path, launcher: tuple[str, ...] = ()) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    metrics = tmp / "metrics.json"
    proc = subprocess.run([*launcher, sys.executable, "-m", "pyg_sar.train", *args,
                           "--metrics", str(metrics), "--parts-dir", str(tmp / "parts")],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return dict(json.loads(metrics.read_text()), stdout=proc.stdout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("needs mpiexec")
    ref_dir, dist_dir = tmp_path_factory.mktemp("ref"), tmp_path_factory.mktemp("dist")
    return (_run([*ARGS, "--reference"], ref_dir),
            _run(ARGS, dist_dir, launcher=(mpiexec, "-n", "2")))


def test_two_ranks_equal_the_reference(runs):
    ref, dist = runs
    assert (ref["world_size"], dist["world_size"]) == (1, 2)
    assert len(ref["history"]) == len(dist["history"]) == 12
    for a, b in zip(dist["history"], ref["history"]):
        assert abs(a["loss"] - b["loss"]) <= 1e-9 * abs(b["loss"]), (a, b)
        for key in ("val_auc", "test_auc", "val_hits", "test_hits"):
            assert (key in a) == (key in b) == (a["epoch"] % 3 == 0), (key, a, b)
            if key in a:
                assert abs(a[key] - b[key]) <= 1e-9, (key, a, b)
    assert ref["history"][-1]["loss"] < ref["history"][0]["loss"] - 0.01
    assert dist["final_test_auc"] >= AUC_FLOOR
    assert len(dist["peak_rss_mb"]) == 2 and dist["task"] == "link"


def test_prints_auc_and_hits_per_evaluation(runs):
    _, dist = runs
    lines = [line for line in dist["stdout"].splitlines() if line.startswith("epoch")]
    assert [line.split()[1] for line in lines] == ["1/12", "4/12", "8/12", "12/12"], lines
    assert "test auc" in lines[-1] and "hits@20" in lines[-1], lines[-1]
    assert "final test AUC:" in dist["stdout"]


@pytest.mark.parametrize("extra, word", [
    (["--num-val", "0"], "--num-val"),
    (["--num-val", "0.6", "--num-test", "0.5"], "--num-test"),
    (["--hits-k", "0"], "--hits-k"),
    (["--sampler", "sage"], "--sampler"),
    (["--precision", "bf16-mixed"], "--precision"),
    (["--checkpoint", "ckpt"], "--checkpoint"),
])
def test_bad_link_options_are_refused(extra, word, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(["--task", "link", *extra])
    assert exc.value.code == 2
    assert word in capsys.readouterr().err


def test_link_options_parse():
    args = parse_args(["--task", "link", "--num-val", "0.1", "--num-test", "0.2",
                       "--neg-method", "degree", "--hits-k", "50"])
    assert (args.task, args.num_val, args.num_test, args.neg_method, args.hits_k) == (
        "link", 0.1, 0.2, "degree", 50)
    assert parse_args([]).task == "node"
