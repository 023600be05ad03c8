"""``python -m pyg_sar.train`` with compression: the flags, their errors, and the byte counts in
the metrics JSON of a real 2-rank run."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pyg_sar.compression import Compressor, KeepFraction, Quantize, RandomSubset, Stages, Truncate
from pyg_sar.compression.cli import compressor_from_args
from pyg_sar.compression.presets import AutoRule
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
    (["--error-feedback", "both"], "--error-feedback needs --compression"),
    (["--compression-start-step", "3"], "--compression-start-step needs --compression"),
    (["--compression", "auto", "--schedule", "linear", "--bits", "4", "--compress-last-layer"],
     "--compression auto sets its own schedule .* with --schedule, --bits, "
     "--compress-last-layer"),
    (["--compression", "auto", "--stages", "16:0.5"], "auto .* combine it with --stages"),
    (["--compression", "auto", "--ratio-max", "4", "--fraction-power", "2"],
     "combine it with --ratio-max, --fraction-power"),
    (["--compression", "auto", "--reference"], "--reference trains plain PyG"),
    (["--compression", "auto", "--compression-start-step", "5", "--resume", "--checkpoint",
      "ck"], "--compression-start-step sets where .* --resume restores"),
    (["--compression", "truncate", "--error-feedback", "rows"],
     "compression: .*error_feedback='rows' with Truncate"),
    (["--compression", "quantize", "--compress-directions", "rows", "--error-feedback",
      "grads"], "compression: .*feeds back \\['grads'\\]"),
    (["--compression", "subset", "--schedule", "linear", "--fraction-power", "3"],
     "--fraction-power is for --schedule fraction \\(got linear\\)"),
    (["--compression", "quantize", "--schedule", "stages"], "--schedule stages needs --stages"),
    (["--compression", "quantize", "--stages", "16:0.5"], "--stages needs --schedule stages"),
    (["--compression", "quantize", "--schedule", "stages", "--stages", "16:0.5",
      "--ratio-max", "4"], "takes its ratios and ends from --stages"),
    (["--compression", "quantize", "--schedule", "stages", "--stages", "16-0.5"],
     "--stages '16-0.5': each stage is RATIO:FRACTION .*got '16-0.5'"),
    (["--compression", "quantize", "--schedule", "stages", "--stages", "16:1.5"],
     "FRACTION in \\(0, 1\\]"),
    (["--compression", "quantize", "--schedule", "stages", "--stages", "16:0.5,8:0.5"],
     "stages end at steps \\[100, 100\\]"),
    (["--compression", "quantize", "--schedule", "stages", "--stages", "0.5:0.5"],
     "stage 0's ratio must be a finite number >= 1"),
    (["--compression", "subset", "--schedule", "fraction", "--ratio-max", "4", "--ratio-min",
      "8"], "ratio_min must be <= ratio_max"),
    (["--compression", "auto", "--epochs", "2"], "total_steps=2 is too small"),
    (["--logit-dtype", "bfloat16"], "--logit-dtype needs --compression"),
    (["--compression", "auto", "--logit-dtype", "float16"], "invalid choice: 'float16'"),
    (["--compression", "auto", "--compression-total-steps", "0"],
     "--compression-total-steps: expected an integer >= 1"),
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


def test_new_flags_describe_the_compressor():
    comp = compressor_from_args(parse_args([
        "--compression", "subset", "--schedule", "fraction", "--ratio-max", "32",
        "--fraction-power", "3", "--compress-last-layer", "--epochs", "90",
        "--error-feedback", "both"]))
    assert comp.codec == RandomSubset() and isinstance(comp.schedule, KeepFraction)
    assert comp.schedule.describe() == {"name": "fraction", "start": 1 / 32, "end": 1.0,
                                        "decay_steps": 90.0, "power": 3.0}  # all of training
    assert comp.error_feedback == "both" and comp.directions == "both"
    rule = compressor_from_args(parse_args([
        "--compression", "quantize", "--schedule", "stages", "--stages", "16:0.25,8:0.5",
        "--ratio-min", "2", "--epochs", "40", "--compress-directions", "grads"]))
    comp = rule("convs.0", 0, 2)
    assert rule("convs.1", 1, 2) is None and isinstance(comp.schedule, Stages)
    assert comp.schedule.stages == [(16.0, 10), (8.0, 20)] and comp.schedule.final == 2.0
    assert comp.directions == "grads" and comp.error_feedback == "none"
    # the schedule laid out for 200 steps, whatever --epochs is
    comp = compressor_from_args(parse_args([
        "--compression", "quantize", "--schedule", "stages", "--stages", "16:0.25",
        "--epochs", "4", "--compression-total-steps", "200"]))("convs.0", 0, 2)
    assert comp.schedule.stages == [(16.0, 50)]


def test_auto_flags():
    rule = compressor_from_args(parse_args(["--compression", "auto", "--epochs", "80",
                                            "--seed", "2"]))
    assert isinstance(rule, AutoRule) and rule.params["total_steps"] == 80
    assert rule("convs.2", 2, 3) is rule.last and rule("convs.0", 0, 3) is rule.inner
    assert rule.inner.seed == 2 and rule.inner.error_feedback == "none"
    assert rule.inner.schedule.stages == [(8.0, 64), (4.0, 76)]  # 4 bits to 80%, 8 to 95%
    rule = compressor_from_args(parse_args(["--compression", "auto", "--epochs", "4",
                                            "--compression-total-steps", "100",
                                            "--error-feedback", "both"]))
    assert rule.last.schedule.stages == [(8.0, 80), (4.0, 95)]
    assert rule.last.feedback is not None and rule.inner.error_feedback == "both"
    rule = compressor_from_args(parse_args(["--compression", "auto", "--compress-directions",
                                            "rows"]))
    assert (rule.inner.directions, rule.inner.error_feedback) == ("rows", "none")
    args = parse_args(["--compression", "auto", "--compression-start-step", "7"])
    assert args.compression_start_step == 7


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


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """One folder (one partition of Cora) for the 2-rank runs of this module."""
    return tmp_path_factory.mktemp("train")


@pytest.fixture(scope="module")
def plain(workdir) -> dict:
    """The uncompressed run the compressed ones are compared with (launched once)."""
    return _train(workdir, "plain")


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_metrics_count_every_byte(workdir, plain):
    comp = _train(workdir, "comp", "--compression", "truncate", "--schedule", "step",
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


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_metrics_with_auto_from_a_start_step(workdir, plain):
    """auto over a 4-epoch run started at step 1: the schedules' ratios, the bytes per layer (the
    last one compressed too) and the config."""
    comp = _train(workdir, "auto", "--compression", "auto", "--compression-start-step", "1")
    assert comp["config"]["compression_start_step"] == 1
    # auto(4): every layer 4 bits until step 3, 8 until 4, then raw
    ratios = {"convs.0": [8.0, 8.0, 4.0, 1.0],  # steps 1..4: 4, 4, 8 bits, raw
              "convs.2": [8.0, 8.0, 4.0, 1.0]}
    for layer, expected in ratios.items():  # the first compressor of each kind, the last
        assert [h["compression_ratio"][layer] for h in comp["history"]] == expected

    def layer_sent(m, epoch, layer):
        return sum(v["sent"] for rank in m["history"][epoch]["traffic"]
                   for v in rank[layer].values())
    for layer in ("convs.0", "convs.1"):  # 16 channels (64 B): 4/8 bits = 8/16 B + 8 B meta
        full = layer_sent(plain, 0, layer)
        assert [layer_sent(comp, e, layer) for e in range(4)] == [full // 4, full // 4,
                                                                   full * 3 // 8, full]
    last = [layer_sent(comp, e, "convs.2") for e in range(4)]
    assert last[0] == last[1] < last[2] < last[3] == layer_sent(plain, 3, "convs.2")
    assert comp["traffic"]["eval_bytes_sent"] == plain["traffic"]["eval_bytes_sent"]
    assert all(math.isfinite(h["loss"]) for h in comp["history"])


def test_logit_dtype_flag():
    rule = compressor_from_args(parse_args(["--compression", "auto", "--epochs", "40"]))
    assert rule.inner.logit_dtype is rule.last.logit_dtype is torch.bfloat16  # auto's default
    rule = compressor_from_args(parse_args(["--compression", "auto", "--epochs", "40",
                                            "--logit-dtype", "raw"]))
    assert rule.inner.logit_dtype is None and rule.params["logit_dtype"] == "raw"
    comp = compressor_from_args(parse_args(["--compression", "quantize", "--bits", "4",
                                            "--compress-last-layer"]))
    assert comp.logit_dtype is None  # off unless asked for outside auto
    comp = compressor_from_args(parse_args(["--compression", "quantize", "--bits", "4",
                                            "--compress-last-layer", "--logit-dtype",
                                            "bfloat16"]))
    assert comp.logit_dtype is torch.bfloat16 and comp.ratio() == 8.0
