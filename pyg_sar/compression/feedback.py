"""Sender-side error feedback: what a lossy message left out is added to the next step's
message of the same coordinates.

For a message ``x`` (the rows a rank sends a peer, or the gradients it returns) with key ``k``
at step ``t``, the sender encodes ``v = x + e_k`` instead of ``x``, where ``e_k`` is the
residual its message ``k`` left at step ``t - 1``, and keeps ``v - decode(encode(v))`` as the
next residual. Summed over steps the receiver gets ``sum(x) - e_K``: the codec's error no
longer accumulates (it telescopes). The payload has the same shape and dtype as without
feedback, so nothing changes on the wire or on the receiving side; the sender pays one extra
decode per message.

Where the state lives. A :class:`Feedback` belongs to one
:class:`~pyg_sar.compression.Compressor` on one rank and keeps one residual per message,
under :meth:`MessageKey.state_key <pyg_sar.compression.keys.MessageKey.state_key>`
``(layer, call, tensor, owner, user, direction)``: per layer, per propagate call, per peer and
per direction. A rows residual (``owner`` = this rank) has the shape of the rows sent to the
peer (``[len(send_idx[peer]), *row]``), a gradients residual (``user`` = this rank) that of the
rows fetched from it (``[block.num_src, *row]``). The ring walk and the halo exchange use the
same keys, so the state does not depend on the mode. Memory: about (rows sent + rows fetched)
x row width per compressed layer and direction, what halo mode keeps of a layer's input
(WordNet, random partition over 4 ranks, 32 channels: about 5 MB per layer and direction).

Exactness rules:

* Residuals written during a step are *pending*; :meth:`Feedback.commit` (called by
  :meth:`Compressor.step`) makes them the residuals the next step reads and drops every other
  (a message sent raw this step, or not sent at all, leaves no residual).
* A message encoded twice in one step (mode ``"sar"`` re-fetches its rows in backward) reads
  the same committed residual, so its payload is the same bytes, and writes nothing new.
* Raw messages (ratio 1, rows too small to compress) never reach this class, so ratio 1 stays
  bit-identical to no compression and the residual is freed once the schedule is lossless.
* The residual is the codec's error only: a wire dtype's rounding
  (``SARConfig(wire_dtype=...)``), applied after the codec, is not fed back.

:class:`~pyg_sar.compression.Truncate` is refused (by the compressor): the channels past
``int(C / r)`` are never sent, so their residual would grow without bound and flood in when
the ratio falls.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import Tensor

from pyg_sar.compression.codecs import Codec
from pyg_sar.compression.keys import DIRECTIONS, MessageKey, StateKey


def format_state_key(key: StateKey) -> str:
    """``"L.C.T.O.U.D"``: a state key as a checkpoint's string key."""
    return ".".join(str(c) for c in key)


def parse_state_key(text: Any) -> StateKey:
    """The state key of :func:`format_state_key`'s string (a ``ValueError`` naming it if
    malformed)."""
    parts = text.split(".") if isinstance(text, str) else []
    if len(parts) != 6 or parts[5] not in DIRECTIONS or \
            not all(p.isdigit() for p in parts[:5]):
        raise ValueError(f"Feedback: malformed state key {text!r} (expected "
                         f"'layer.call.tensor.owner.user.direction', direction one of "
                         f"{DIRECTIONS})")
    return (*(int(p) for p in parts[:5]), parts[5])


class Feedback:
    """The error-feedback residuals of one compressor on one rank (see the module docstring).

    Args:
        directions: the message directions fed back (``"rows"`` and/or ``"grads"``).

    Attributes:
        committed: the residuals the current step's messages read, by state key.
        pending: the residuals written in the current step (committed by :meth:`commit`).
    """

    def __init__(self, directions: Iterable[str]) -> None:
        self.directions = frozenset(directions)
        unknown = sorted(self.directions - set(DIRECTIONS))
        if unknown or not self.directions:
            raise ValueError(f"Feedback: directions must be a non-empty subset of {DIRECTIONS} "
                             f"(got {sorted(self.directions)})")
        self.committed: dict[StateKey, Tensor] = {}
        self.pending: dict[StateKey, Tensor] = {}

    def feeds(self, key: MessageKey) -> bool:
        """Whether the message of ``key`` is fed back (its direction is)."""
        return key.direction in self.directions

    def encode(self, codec: Codec, ratio: float, rows: Tensor, key: MessageKey) -> Tensor:
        """The payload of ``rows + residual`` under ``key`` (a non-raw message); the new
        residual is kept pending unless this step already wrote one for ``key``."""
        k = key.state_key()
        with torch.no_grad():
            residual = self.committed.get(k)
            if residual is None:
                v = rows
            else:
                if residual.shape != rows.shape or residual.dtype != rows.dtype:
                    raise RuntimeError(
                        f"Feedback: the residual of message {format_state_key(k)!r} is "
                        f"{tuple(residual.shape)} {residual.dtype} but the message is "
                        f"{tuple(rows.shape)} {rows.dtype} (a checkpoint of another graph, "
                        f"model or dtype?)")
                v = rows + residual.to(rows.device)
            payload = codec.encode(v, ratio, key)
            if k not in self.pending and rows.shape[0] > 0:
                self.pending[k] = v - codec.decode(payload, tuple(v.shape[1:]), v.dtype,
                                                   ratio, key)
        return payload

    def commit(self) -> None:
        """End of a step: the pending residuals become the committed ones; the rest go."""
        self.committed, self.pending = self.pending, {}

    def nbytes(self) -> int:
        """Bytes held by the residuals (committed and pending)."""
        return sum(t.numel() * t.element_size()
                   for d in (self.committed, self.pending) for t in d.values())

    def state_dict(self) -> dict[str, dict[str, Tensor]]:
        """``{"feedback": committed, "pending": pending}``, string keys ``"L.C.T.O.U.D"``,
        tensors on the CPU (``torch.load(weights_only=True)`` reads them)."""
        return {name: {format_state_key(k): t.detach().cpu() for k, t in sorted(d.items())}
                for name, d in (("feedback", self.committed), ("pending", self.pending))}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` (every entry checked before anything changes)."""
        loaded = {}
        for name in ("feedback", "pending"):
            got = state.get(name, {})
            if not isinstance(got, Mapping):
                raise ValueError(f"Feedback.load_state_dict: '{name}' must map state keys to "
                                 f"tensors (got {type(got).__name__})")
            out = {}
            for text, t in got.items():
                k = parse_state_key(text)
                if k[5] not in self.directions:
                    raise ValueError(f"Feedback.load_state_dict: residual {text!r} is of a "
                                     f"direction this compressor does not feed back "
                                     f"({sorted(self.directions)})")
                if not isinstance(t, Tensor) or not t.is_floating_point() or t.dim() < 1:
                    raise ValueError(f"Feedback.load_state_dict: residual {text!r} must be a "
                                     f"floating-point tensor of rows (got {t!r:.80})")
                out[k] = t
            loaded[name] = out
        for k in set(loaded["feedback"]) & set(loaded["pending"]):
            a, b = loaded["feedback"][k], loaded["pending"][k]
            if a.shape != b.shape:
                raise ValueError(f"Feedback.load_state_dict: residual "
                                 f"{format_state_key(k)!r} is {tuple(a.shape)} committed but "
                                 f"{tuple(b.shape)} pending")
        self.committed, self.pending = loaded["feedback"], loaded["pending"]

    def __repr__(self) -> str:
        return (f"Feedback({sorted(self.directions)}, committed={len(self.committed)}, "
                f"pending={len(self.pending)})")
