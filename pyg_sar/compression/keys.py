"""Keys of the random choices a compressor makes on one message.

Sender and receiver must make the same choice (the channel subset) and a rematerialised block
must see the same bytes as in forward (the subset and the stochastic-rounding noise), so every
random number comes from a generator seeded by the message's coordinates, never from the global
RNG: ``(seed, training step, layer index, propagate call within the step, tensor, owner rank,
user rank)`` plus the direction for the rounding noise.

Error feedback (:mod:`pyg_sar.compression.feedback`) keeps one residual per message across
steps, under :meth:`MessageKey.state_key`: the key without the seed and the step.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

DIRECTIONS = ("rows", "grads")

StateKey = tuple[int, int, int, int, int, str]
"""``(layer, call, tensor, owner, user, direction)``: a message's coordinates across steps."""

# Salts that keep the two streams of a message apart.
_SHARED, _NOISE = 1, 2


@dataclass(frozen=True)
class MessageKey:
    """The coordinates of one message of one tensor between two ranks.

    Attributes:
        seed: the compressor's seed.
        step: the training step (the schedule's clock) the propagation ran at.
        layer: index of the layer among the model's message-passing layers.
        call: index of the layer's propagate call within the step.
        tensor: index of the source tensor within the propagate call.
        owner: rank that owns the rows (sends them forward, receives their gradients).
        user: rank that uses the rows (receives them, sends their gradients back).
        direction: ``"rows"`` (forward features) or ``"grads"`` (their gradients).
    """

    seed: int
    step: int
    layer: int
    call: int
    tensor: int
    owner: int
    user: int
    direction: str = "rows"

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"MessageKey: direction must be one of {DIRECTIONS} "
                             f"(got {self.direction!r})")

    def state_key(self) -> StateKey:
        """The message's coordinates across steps (seed and step dropped): the key of its
        error-feedback residual, the same in every mode."""
        return (self.layer, self.call, self.tensor, self.owner, self.user, self.direction)

    def _coordinates(self) -> tuple[int, ...]:
        return (self.seed, self.step, self.layer, self.call, self.tensor, self.owner, self.user)

    def shared_seed(self) -> int:
        """Seed of the choices the rows and their gradients share (the channel subset)."""
        return _hash(_SHARED, *self._coordinates())

    def noise_seed(self) -> int:
        """Seed of choices made separately per direction (stochastic-rounding noise)."""
        return _hash(_NOISE, *self._coordinates(), DIRECTIONS.index(self.direction))


def _hash(*coordinates: int) -> int:
    """A 63-bit seed from integer coordinates (the same on every rank and platform)."""
    text = ",".join(str(int(c)) for c in coordinates).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def generator(seed: int, device: torch.device) -> torch.Generator:
    """A fresh generator on ``device`` seeded with ``seed`` (the global RNG is untouched)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
