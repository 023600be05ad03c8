"""Prefetch depth and gradient-return overlap follow the transport: posting early only pays
where data moves in the background (gloo, NCCL); with MPICH it only holds buffers longer."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pyg_sar.core.exchange import GradReturner, pipeline_depth
from pyg_sar.distributed.transport import Communicator, MPICommunicator, TorchCommunicator


def _graph(background: bool):
    comm = SimpleNamespace(progresses_in_background=background)
    return SimpleNamespace(context=SimpleNamespace(comm=comm))


@pytest.mark.parametrize("background, expected", [(True, 1), (False, 0)])
def test_default_depth_follows_the_transport(background, expected):
    assert pipeline_depth(_graph(background), None) == expected


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_an_explicit_depth_is_kept(depth):
    assert pipeline_depth(_graph(False), depth) == depth
    assert pipeline_depth(_graph(True), depth) == depth


def test_transport_flags():
    assert Communicator.progresses_in_background
    assert TorchCommunicator.progresses_in_background
    assert not MPICommunicator.progresses_in_background


class _Pending:
    def __init__(self) -> None:
        self.waited = False

    def wait(self):
        self.waited = True
        return SimpleNamespace(shape=(0,))


@pytest.mark.parametrize("background", [True, False])
def test_gradient_return_finishes_before_the_next_block_without_background_progress(
        background):
    returner = GradReturner(_graph(background), [])
    pending = _Pending()
    returner.pending = (None, [], [pending])
    returner.before_next_block()
    assert pending.waited is (not background)
    assert (returner.pending is None) is (not background)
