"""The backward pass as the autograd engine runs it: a callback at the end of the pass now
running, whether a pass is running, and the mark a global loss leaves on the pass.

No communication and no model: the global losses (:mod:`pyg_sar.core.loss_reduction`) mark
the pass, and the model-level gradient policy (:mod:`pyg_sar.nn.grad_sync`) reads the mark
and queues its end-of-pass work here.
"""
from __future__ import annotations

from collections.abc import Callable

import torch


def at_end_of_backward(callback: Callable[[], None]) -> None:
    """Run ``callback`` once the backward pass now running has finished (every gradient
    accumulated). Call it only from inside a backward pass (a hook or a Function's
    ``backward``).

    PyTorch offers this only through the autograd engine's private ``queue_callback``, which
    its own DistributedDataParallel uses for the same purpose (reducing gradients once the pass
    is over); tensor and module hooks fire per tensor, never at the end of the pass. Every use
    in pyg_sar goes through this one function.
    """
    torch.autograd.Variable._execution_engine.queue_callback(callback)


def in_backward() -> bool:
    """Whether a backward pass is running now (e.g. a checkpointed forward recomputed inside
    one): the engine accepts an end-of-pass callback only then."""
    try:
        at_end_of_backward(lambda: None)
    except RuntimeError:
        return False
    return True


class _BackwardMarks:
    """Whether the backward pass now running went through a global loss.

    Process-wide, as the autograd engine's passes are: a global loss's backward sets the mark
    and queues its reset for the end of the pass.
    """

    def __init__(self) -> None:
        self.global_loss = False

    def mark(self) -> None:
        self.global_loss = True
        at_end_of_backward(self.reset)

    def reset(self) -> None:
        self.global_loss = False


_MARKS = _BackwardMarks()


def mark_global_loss() -> None:
    """Called by the backward of every global loss: this backward pass is a global one."""
    _MARKS.mark()
