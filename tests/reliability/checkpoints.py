"""A run's final checkpoint and the comparison that says two runs ended alike, for the tests
that kill, cut or requeue a run and expect it to end as an uninterrupted one (tests/reliability,
tests/netns)."""
from __future__ import annotations

import json
from pathlib import Path

import torch


def final_rank_states(ck: Path, epochs: int, world_size: int = 2) -> list[dict]:
    """Every rank's saved state of the last checkpoint in ``ck``, which must be of ``epochs``."""
    latest = json.loads((ck / "latest.json").read_text())
    assert latest["epoch"] == epochs
    return [torch.load(ck / latest["snapshot"] / f"rank{r}.pt", weights_only=True)
            for r in range(world_size)]


def assert_same_states(want: list[dict], got: list[dict]) -> None:
    """Bit-identical models and torch RNG states, rank by rank."""
    for a, b in zip(want, got, strict=True):
        assert a["model"].keys() == b["model"].keys()
        for key in a["model"]:
            assert torch.equal(a["model"][key], b["model"][key]), key
        assert torch.equal(a["rng"]["torch"], b["rng"]["torch"])


def assert_same_losses(want: list[dict], got: list[dict], epochs: int) -> None:
    """The same loss at each of the ``epochs`` epochs of the saved training histories."""
    for a, b in zip(want, got, strict=True):
        losses = [h["loss"] for h in json.loads(a["extra_json"])["history"]]
        assert losses == [h["loss"] for h in json.loads(b["extra_json"])["history"]]
        assert len(losses) == epochs
