"""``python -m pyg_sar.train``'s arguments, parsed without launching anything: a value that
would train nonsense (no hidden channels, a dropout of 1, a negative learning rate) is an
argparse error naming the flag; ``--resume`` takes ``auto``; ``--help`` shows the defaults and
examples."""
from __future__ import annotations

import pytest

from pyg_sar.train import build_parser, parse_args


@pytest.mark.parametrize("argv,flag", [
    (["--hidden", "0"], "--hidden"), (["--layers", "-1"], "--layers"),
    (["--heads", "0"], "--heads"), (["--dropout", "1"], "--dropout"),
    (["--dropout", "-0.1"], "--dropout"), (["--dropout", "nan"], "--dropout"),
    (["--lr", "0"], "--lr"), (["--lr", "inf"], "--lr"),
    (["--weight-decay", "-1e-4"], "--weight-decay"), (["--epochs", "0"], "--epochs"),
    (["--pipeline-depth", "-1"], "--pipeline-depth"), (["--resume", "maybe"], "--resume"),
])
def test_bad_values_name_the_flag(capsys, argv, flag):
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv + ["--checkpoint", "ck"])
    assert exit_.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err


def test_good_values_and_resume_forms():
    args = parse_args(["--hidden", "32", "--dropout", "0", "--lr", "1e-3",
                       "--weight-decay", "0", "--pipeline-depth", "0"])
    assert (args.hidden, args.dropout, args.lr, args.weight_decay, args.pipeline_depth) == \
        (32, 0.0, 1e-3, 0.0, 0)
    assert args.resume is None
    assert parse_args(["--checkpoint", "ck", "--resume"]).resume == "latest"
    assert parse_args(["--checkpoint", "ck", "--resume", "auto"]).resume == "auto"
    assert parse_args(["--resume", "--checkpoint", "ck"]).resume == "latest"


def test_help_shows_defaults_and_examples():
    text = build_parser().format_help()
    assert "hidden channels (default: 16)" in text
    assert "examples:" in text and "--resume auto" in text and "--max-restarts" in text


@pytest.mark.parametrize("cli,cases", [
    ("pyg_sar.train", ((["--help"], 0), (["--hiden", "3"], 2), (["--hidden", "0"], 2))),
    ("pyg_sar.partition", ((["--help"], 0), (["--num-parts", "0", "--out", "x"], 2),
                           (["--num-parts", "2"], 2))),
])
def test_help_and_a_bad_flag_answer_before_torch_is_imported(cli, cases):
    """``--help`` and a mistyped flag never import torch or PyG (``-X importtime`` lists every
    module the process imported)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for argv, status in cases:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", cli, *argv],
                              cwd=root, capture_output=True, text=True, timeout=120)
        assert proc.returncode == status, proc.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}
        assert "pyg_sar.names" in imported
        assert not imported & {"torch", "torch_geometric", "numpy"}, (cli, argv)


def test_the_cli_names_agree_with_the_modules_that_implement_them():
    """pyg_sar.names mirrors the tables of the modules behind each flag."""
    from pyg_sar import names
    from pyg_sar.compression.factory import CODEC_NAMES, SCHEDULE_NAMES
    from pyg_sar.compression.interface import COMPRESS_DIRECTIONS, ERROR_FEEDBACK
    from pyg_sar.compression.packing import BITS
    from pyg_sar.datasets.registry import _BUILDERS, HETERO_NAMES, KNOWN_NAMES
    from pyg_sar.partition.assign import BALANCES, EDGE_BALANCE_MIN_PARTS, METHODS
    from pyg_sar.sampling.train_loop import SAMPLERS
    from pyg_sar.train_common import DTYPES
    from pyg_sar.train_link import NEG_METHODS

    assert names.DATASETS == tuple(_BUILDERS) and names.KNOWN_DATASET_NAMES == KNOWN_NAMES
    assert set(names.HETERO_DATASETS) == set(HETERO_NAMES) <= set(names.DATASETS)
    assert (names.PARTITION_METHODS, names.BALANCES, names.EDGE_BALANCE_MIN_PARTS) == \
        (METHODS, BALANCES, EDGE_BALANCE_MIN_PARTS)
    assert names.DTYPES == tuple(DTYPES) and names.SAMPLERS == SAMPLERS
    assert names.NEG_METHODS == NEG_METHODS
    assert (names.CODECS, names.SCHEDULES, names.BITS) == (CODEC_NAMES, SCHEDULE_NAMES, BITS)
    assert names.ERROR_FEEDBACK == tuple(ERROR_FEEDBACK)
    assert names.COMPRESS_DIRECTIONS == tuple(COMPRESS_DIRECTIONS)
    for model in names.MODELS:  # every --model builds
        import argparse

        from pyg_sar.train_common import build_model
        args = argparse.Namespace(model=model, layers=2, hidden=4, heads=2, dropout=0.0,
                                  norm="none")
        assert build_model(args, 3, 2) is not None


@pytest.mark.parametrize("module", ["pyg_sar.train", "pyg_sar.partition.__main__",
                                    "pyg_sar.predict", "pyg_sar.plan"])
def test_every_cli_help_shows_defaults_and_examples(module, capsys):
    import importlib

    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(module).main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "\nexamples:\n" in text and "(default: " in text
    examples = text.split("\nexamples:\n", 1)[1].splitlines()
    assert examples and all(line.startswith("  ") for line in examples if line)
