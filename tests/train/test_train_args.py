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
