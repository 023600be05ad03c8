"""The :class:`Compressor`: a codec, a schedule of ratios over training steps, and the key of
every random choice, set on a model through ``SARConfig(compression=...)``.

Usage::

    from pyg_sar.compression import Compressor, Truncate, varco
    comp = Compressor(Truncate(), varco(r_max=128, total_steps=300), seed=0)
    model = pyg_sar.convert(model, pyg_sar.SARConfig(compression=comp))
    for epoch in range(300):
        ...; optimizer.step(); comp.step()        # or comp.step(epoch + 1)

Compression follows the layer's ``training`` flag, as dropout does: ``model.eval()`` sends
full rows unless the compressor was made with ``in_eval=True`` (``torch.no_grad()`` alone
changes nothing). Every propagate call of a compressed layer binds the compressor
(:meth:`Compressor.bind`): the ratio and the key ``(seed, step, layer, call)`` are fixed then
and stored with the propagation, so the backward pass (a rematerialising re-fetch, the
gradients sent back) uses exactly the choices of the forward pass.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

import torch
from torch import Tensor

from pyg_sar.compression.codecs import Codec, RowShape
from pyg_sar.compression.keys import MessageKey
from pyg_sar.compression.schedules import Fixed, Schedule


class Compressor:
    """A codec with a ratio schedule over training steps.

    Args:
        codec: how rows are encoded (:class:`~pyg_sar.compression.Truncate`,
            :class:`~pyg_sar.compression.RandomSubset`, :class:`~pyg_sar.compression.Quantize`).
        schedule: ratio per step (a :class:`~pyg_sar.compression.Schedule`, or a number for
            a fixed ratio; 1 = lossless).
        seed: seed of the random choices (integer >= 0; the same on every rank).
        in_eval: also compress when the layer is in eval mode.

    Attributes:
        t: the current step (advanced by :meth:`step`).
    """

    def __init__(self, codec: Codec, schedule: Union[Schedule, float] = 1.0, *, seed: int = 0,
                 in_eval: bool = False) -> None:
        if not isinstance(codec, Codec):
            raise TypeError(f"Compressor: codec must be a Codec (got {type(codec).__name__})")
        if not isinstance(schedule, Schedule):
            schedule = Fixed(schedule)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"Compressor: seed must be an integer >= 0 (got {seed!r})")
        self.codec, self.schedule, self.seed = codec, schedule, seed
        self.in_eval = bool(in_eval)
        self.t = 0
        self._calls: dict[int, int] = {}  # layer index -> propagate calls bound in this step

    def ratio(self, t: Optional[int] = None) -> float:
        """The ratio at step ``t`` (default: the current step)."""
        return self.schedule(self.t if t is None else t)

    def step(self, t: Optional[int] = None) -> None:
        """Advance to the next step, or to step ``t`` if given (call after the optimizer
        step, on every rank)."""
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 0):
            raise ValueError(f"Compressor.step: t must be an integer >= 0 (got {t!r})")
        self.t = self.t + 1 if t is None else t
        self._calls.clear()

    def applies(self, training: bool) -> bool:
        """Whether a layer in this training mode compresses."""
        return training or self.in_eval

    def bind(self, layer: int) -> BoundCodec:
        """Fix the ratio and key of one propagate call of layer ``layer`` (see the module
        docstring); every rank must bind in the same order."""
        call = self._calls.get(layer, 0)
        self._calls[layer] = call + 1
        return BoundCodec(self.codec, self.ratio(), self.seed, self.t, layer, call)

    def describe(self) -> dict:
        """Codec, schedule and seed (what a resumed run must match)."""
        return {"codec": self.codec.describe(), "schedule": self.schedule.describe(),
                "seed": self.seed}

    def state_dict(self) -> dict:
        """The step state (plain ints and strings; saved in checkpoints)."""
        return {"t": self.t, "calls": {str(k): v for k, v in sorted(self._calls.items())},
                "describe": repr(self.describe())}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; refused if it was saved by another compressor."""
        if not isinstance(state, Mapping) or not isinstance(state.get("t"), int):
            raise ValueError(f"Compressor.load_state_dict: malformed state {state!r}")
        if state.get("describe") != repr(self.describe()):
            raise ValueError(f"Compressor.load_state_dict: the state was saved by "
                             f"{state.get('describe')}, not by this compressor "
                             f"{self.describe()!r}")
        self.t = state["t"]
        self._calls = {int(k): int(v) for k, v in dict(state.get("calls", {})).items()}

    def __repr__(self) -> str:
        return (f"Compressor({self.codec!r}, {self.schedule!r}, seed={self.seed}, "
                f"t={self.t})")


@dataclass(frozen=True)
class BoundCodec:
    """A compressor fixed for one propagate call: the codec, the ratio and the key prefix."""

    codec: Codec
    ratio: float
    seed: int
    step: int
    layer: int
    call: int

    def key(self, tensor: int, owner: int, user: int, direction: str = "rows") -> MessageKey:
        """The key of the message of tensor ``tensor`` from ``owner`` to ``user``."""
        return MessageKey(self.seed, self.step, self.layer, self.call, tensor, owner, user,
                          direction)

    def is_raw(self, like: Tensor) -> bool:
        """Whether rows shaped like ``like``'s go as they are."""
        return self.codec.is_raw(tuple(like.shape[1:]), like.dtype, self.ratio)

    def wire_like(self, like: Tensor) -> Tensor:
        """An empty ``[0, *payload row]`` tensor: the receive buffer's row shape and dtype
        for rows of ``like``."""
        if self.is_raw(like):
            return like[:0]
        shape, dtype = self.codec.wire_row(tuple(like.shape[1:]), like.dtype, self.ratio)
        return torch.empty((0, *shape), dtype=dtype, device=like.device)

    def encode(self, rows: Tensor, key: MessageKey) -> Tensor:
        if self.is_raw(rows):
            return rows
        return self.codec.encode(rows, self.ratio, key)

    def encode_rows(self, source: Tensor, index: Tensor, key: MessageKey) -> Tensor:
        """``encode(source[index], key)`` without a full-size copy where the codec can."""
        if self.is_raw(source):
            return source.index_select(0, index)
        return self.codec.encode_rows(source, index, self.ratio, key)

    def decode(self, payload: Tensor, row_shape: RowShape, dtype: torch.dtype,
               key: MessageKey) -> Tensor:
        if self.codec.is_raw(tuple(row_shape), dtype, self.ratio):
            return payload
        return self.codec.decode(payload, tuple(row_shape), dtype, self.ratio, key)

    def decode_into(self, out: Tensor, payload: Tensor, key: MessageKey) -> None:
        """``out.copy_(decode(payload, ...))`` without the intermediate where the codec can."""
        if self.codec.is_raw(tuple(out.shape[1:]), out.dtype, self.ratio):
            out.copy_(payload)
        else:
            self.codec.decode_into(out, payload, self.ratio, key)


# ------------------------------------------------------------------------- per layer
LayerRule = Callable[[str, int, int], Optional[Compressor]]
CompressionSpec = Union[None, Compressor, Mapping[str, Optional[Compressor]], LayerRule]


def check_spec(spec: Any) -> None:
    """Refuse anything that is not a valid ``SARConfig.compression`` (named in the error)."""
    if spec is None or isinstance(spec, Compressor):
        return
    if isinstance(spec, Mapping):
        for name, value in spec.items():
            if not isinstance(name, str) or not (value is None or isinstance(value, Compressor)):
                raise ValueError(f"SARConfig: compression must map layer names to a Compressor "
                                 f"or None (got {name!r}: {value!r})")
        return
    if not callable(spec):
        raise ValueError(f"SARConfig: compression must be None, a Compressor, a dict of layer "
                         f"name -> Compressor, or a callable (got {spec!r})")


def resolve(spec: CompressionSpec, names: list[str]) -> dict[str, Optional[Compressor]]:
    """The compressor of each message-passing layer (``names`` in model order)."""
    check_spec(spec)
    if spec is None or isinstance(spec, Compressor):
        return {n: spec for n in names}
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"SARConfig: compression names layers {unknown} that are not "
                             f"message-passing layers of the model (those are {names})")
        return {n: spec.get(n) for n in names}
    out = {}
    for i, n in enumerate(names):
        got = spec(n, i, len(names))
        if got is not None and not isinstance(got, Compressor):
            raise ValueError(f"SARConfig: the compression callable returned {got!r} for layer "
                             f"{n!r}; expected a Compressor or None")
        out[n] = got
    return out


def all_but_last(compressor: Compressor) -> LayerRule:
    """A per-layer rule compressing every message-passing layer but the last one (VARCO never
    compresses the last layer's input)."""
    if not isinstance(compressor, Compressor):
        raise TypeError(f"all_but_last: expected a Compressor (got {compressor!r})")

    def rule(name: str, index: int, count: int) -> Optional[Compressor]:
        return None if index == count - 1 else compressor
    return rule


def compressors_of(model: torch.nn.Module) -> dict[str, Compressor]:
    """The distinct compressors of a converted model, each under the name of the first layer
    that uses it (model order)."""
    out: dict[str, Compressor] = {}
    seen: set[int] = set()
    for name, module in model.named_modules():
        comp = getattr(module, "_sar_compressor", None)
        if comp is not None and id(comp) not in seen:
            seen.add(id(comp))
            out[name] = comp
    return out


def step_all(model: torch.nn.Module, t: Optional[int] = None) -> None:
    """:meth:`Compressor.step` on every compressor of ``model``."""
    for comp in compressors_of(model).values():
        comp.step(t)
