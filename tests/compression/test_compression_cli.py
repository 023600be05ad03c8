"""``python -m pyg_sar.train`` with compression: the flags, their errors, and the byte counts in
the metrics JSON of a real 2-rank run."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyg_sar.compression import Compressor, Quantize, Truncate
from pyg_sar.compression.cli import compressor_from_args
from pyg_sar.testing import find_mpiexec
from pyg_sar.train import parse_args

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv,match", [
    (["--ratio-max", "4"], "--ratio-max needs --compression"),
    (["--compress-last-layer"], "--compress-last-layer needs --compression"),
    (["--compression", "truncate", "--bits", "4"], "--bits is for --compression quantize"),
    (["--compression", "quantize", "--bits", "4", "--ratio-max", "2"], "--bits sets a fixed"),
    (["--compression", "truncate", "--ratio-min", "2"], "are for a decaying --schedule"),
    (["--compression", "truncate", "--ratio-max", "0.5"], "compression: .*ratio must be"),
    (["--compression", "truncate", "--schedule", "linear", "--ratio-max", "2", "--ratio-min",
      "4"], "r_min must be <= r_max"),
    (["--compression", "truncate", "--reference"], "--reference trains plain PyG"),
    (["--compression", "truncate", "--sampler", "sage"], "not to --sampler"),
    (["--compression", "gzip"], "invalid choice: 'gzip'"),
])
def test_bad_flags_are_argparse_errors(argv, match, capsys):
    with pytest.raises(SystemExit) as e:
        parse_args(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err


def test_flags_describe_the_compressor():
    assert compressor_from_args(parse_args([])) is None
    args = parse_args(["--compression", "truncate", "--schedule", "linear", "--ratio-max",
                       "128", "--epochs", "302"])
    rule = compressor_from_args(args)
    comp = rule("convs.0", 0, 3)
    assert rule("convs.2", 2, 3) is None  # VARCO: the last layer's input is not compressed
    assert isinstance(comp, Compressor) and comp.codec == Truncate()
    assert comp.schedule.describe() == {"name": "linear", "r_max": 128.0, "r_min": 1.0,
                                        "decay_steps": 60.0}
    comp = compressor_from_args(parse_args(["--compression", "quantize", "--bits", "2",
                                            "--compress-last-layer", "--seed", "4"]))
    assert comp.codec == Quantize() and comp.ratio() == 16.0 and comp.seed == 4


def _train(tmp_path: Path, name: str, *extra: str) -> dict:
    metrics = tmp_path / f"{name}.json"
    cmd = [find_mpiexec(), "-n", "2", sys.executable, "-m", "pyg_sar.train", "--dataset",
           "cora", "--parts-dir", str(tmp_path / "parts"), "--model", "gcn", "--layers", "3",
           "--epochs", "4", "--eval-every", "2", "--metrics", str(metrics), "--progress", "log",
           *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "bytes sent by all ranks in training steps" in done.stdout
    return json.loads(metrics.read_text())


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_metrics_count_every_byte(tmp_path):
    plain = _train(tmp_path, "plain")
    comp = _train(tmp_path, "comp", "--compression", "truncate", "--schedule", "step",
                  "--ratio-max", "4", "--decay-steps", "2")
    for m in (plain, comp):
        history = m["history"]
        assert [len(h["traffic"]) for h in history] == [2] * 4  # every rank, every epoch
        for h in history:
            total = sum(v["sent"] for rank in h["traffic"] for d in rank.values()
                        for v in d.values())
            assert h["bytes_sent"] == total > 0
            for rank in h["traffic"]:
                assert set(rank) == {"convs.0", "convs.1", "convs.2"}
                assert all(set(d) == {"rows", "grads"} for d in rank.values())  # GCN: no refetch
        summary = m["traffic"]
        assert summary["bytes_sent"] == sum(h["bytes_sent"] for h in history)
        assert summary["bytes_sent"] == sum(summary["by_direction_sent"].values())
        assert summary["bytes_sent"] == sum(summary["by_layer_sent"].values())
        # evaluation (epochs 2 and 4) never compresses: a forward pass's rows only
        evals = [h["eval_bytes_sent"] for h in history]
        assert evals[0] == evals[2] == 0 and evals[1] == evals[3] > 0
    assert [h["compression_ratio"]["convs.0"] for h in comp["history"]] == [4.0, 2.0, 1.0, 1.0]
    assert "compression_ratio" not in plain["history"][0]
    assert comp["traffic"]["eval_bytes_sent"] == plain["traffic"]["eval_bytes_sent"]

    def layer_sent(m, epoch, layer):
        return sum(v["sent"] for rank in m["history"][epoch]["traffic"]
                   for v in rank[layer].values())
    for layer in ("convs.0", "convs.1"):
        full = layer_sent(plain, 0, layer)
        # ratio 4 keeps int(16 / 4) = 4 of 16 hidden channels, ratio 2 keeps 8, then all
        assert [layer_sent(comp, e, layer) for e in range(4)] == [full // 4, full // 2, full,
                                                                   full]
    assert all(layer_sent(comp, e, "convs.2") == layer_sent(plain, e, "convs.2")
               for e in range(4))  # the last layer is not compressed
