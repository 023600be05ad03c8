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

``directions`` says which messages are compressed at all (``"rows"``: the features sent
forward, ``"grads"``: their gradients sent back, ``"both"``); the others go raw.
``logit_dtype`` (``torch.bfloat16`` or ``None``) casts the tensors a layer sends ``exact``
(GAT's attention logits) to that dtype in the steps where the codec is lossy for their
direction (:meth:`BoundCodec.logit_dtype_of`); where the codec sends raw (ratio 1) they go
raw, so a ratio-1 schedule stays bit-identical to no compression
(:mod:`pyg_sar.core.exchange`).
``error_feedback`` adds each message's previous error to it before encoding
(:mod:`pyg_sar.compression.feedback`); the residuals are kept per rank in the compressor,
committed by :meth:`Compressor.step` and saved with its :meth:`~Compressor.state_dict`.
Evaluation-mode calls (``in_eval=True``) bind without feedback and with their own call
counter, so an evaluation between training steps changes neither the residuals nor the
training keys.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import torch
from torch import Tensor

from pyg_sar.compression.codecs import Codec, RowShape, Truncate
from pyg_sar.compression.feedback import Feedback
from pyg_sar.compression.keys import DIRECTIONS, MessageKey
from pyg_sar.compression.schedules import Fixed, Schedule

ERROR_FEEDBACK = {"none": frozenset(), "rows": frozenset({"rows"}),
                  "grads": frozenset({"grads"}), "both": frozenset(DIRECTIONS)}
"""``Compressor(error_feedback=...)`` values and the directions each feeds back."""
COMPRESS_DIRECTIONS = {"both": frozenset(DIRECTIONS), "rows": frozenset({"rows"}),
                       "grads": frozenset({"grads"})}
"""``Compressor(directions=...)`` values and the directions each compresses."""
LOGIT_DTYPES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
                "torch.bfloat16": torch.bfloat16, "raw": None, "none": None}
"""``Compressor(logit_dtype=...)`` names (besides ``None`` and ``torch.bfloat16``)."""


def check_logit_dtype(value: Any) -> Optional[torch.dtype]:
    """``value`` as a logit dtype: ``None`` (raw; also ``"raw"``/``"none"``) or
    ``torch.bfloat16`` (also ``"bfloat16"``, ``"bf16"``); anything else is a ``ValueError``
    naming it. float16 is refused: a logit beyond its range (65504) would cross as an
    infinity and turn its node's attention into NaN, silently; bfloat16 keeps float32's
    range. Wider or integer dtypes would save nothing or corrupt the logits."""
    if value is None or value is torch.bfloat16:
        return value
    if isinstance(value, str) and value.strip().lower() in LOGIT_DTYPES:
        return LOGIT_DTYPES[value.strip().lower()]
    hint = (" (float16 is not offered: a logit beyond its range, 65504, would cross as an "
            "infinity; bfloat16 keeps float32's range)"
            if value in (torch.float16, "float16", "fp16", "half") else "")
    raise ValueError(f"Compressor: logit_dtype must be None or torch.bfloat16 (or one of "
                     f"{sorted(LOGIT_DTYPES)}); got {value!r}{hint}")


class Compressor:
    """A codec with a ratio schedule over training steps.

    Args:
        codec: how rows are encoded (:class:`~pyg_sar.compression.Truncate`,
            :class:`~pyg_sar.compression.RandomSubset`, :class:`~pyg_sar.compression.Quantize`).
        schedule: ratio per step (a :class:`~pyg_sar.compression.Schedule`, or a number for
            a fixed ratio; 1 = lossless).
        seed: seed of the random choices (integer >= 0; the same on every rank).
        in_eval: also compress when the layer is in eval mode.
        error_feedback: which directions' messages carry their previous error forward
            (``"none"``, ``"rows"``, ``"grads"``, ``"both"``; see
            :mod:`pyg_sar.compression.feedback`). Refused with
            :class:`~pyg_sar.compression.Truncate`, whose dropped channels' error would only
            grow, and for a direction ``directions`` leaves raw.
        directions: which messages are compressed (``"both"``, ``"rows"``: the features
            sent forward, ``"grads"``: their gradients sent back); the others go raw.
        logit_dtype: the dtype of the ``exact`` tensors (attention logits) in the steps and
            directions where the codec is lossy (``None``: always raw; ``torch.bfloat16``;
            see :func:`check_logit_dtype`).

    Attributes:
        t: the current step (advanced by :meth:`step`).
        feedback: the error-feedback residuals of this rank (``None`` without feedback).
    """

    def __init__(self, codec: Codec, schedule: Union[Schedule, float] = 1.0, *, seed: int = 0,
                 in_eval: bool = False, error_feedback: str = "none",
                 directions: str = "both", logit_dtype: Any = None) -> None:
        if not isinstance(codec, Codec):
            raise TypeError(f"Compressor: codec must be a Codec (got {type(codec).__name__})")
        if not isinstance(schedule, Schedule):
            schedule = Fixed(schedule)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"Compressor: seed must be an integer >= 0 (got {seed!r})")
        if not isinstance(error_feedback, str) or error_feedback not in ERROR_FEEDBACK:
            raise ValueError(f"Compressor: error_feedback must be one of "
                             f"{sorted(ERROR_FEEDBACK)} (got {error_feedback!r})")
        if not isinstance(directions, str) or directions not in COMPRESS_DIRECTIONS:
            raise ValueError(f"Compressor: directions must be one of "
                             f"{sorted(COMPRESS_DIRECTIONS)} (got {directions!r})")
        logit_dtype = check_logit_dtype(logit_dtype)
        fed, compressed = ERROR_FEEDBACK[error_feedback], COMPRESS_DIRECTIONS[directions]
        if fed and isinstance(codec, Truncate):
            raise ValueError(f"Compressor: error_feedback={error_feedback!r} with Truncate: "
                             f"the channels it drops are never sent, so their error would "
                             f"grow without bound (use RandomSubset or Quantize)")
        if not fed <= compressed:
            raise ValueError(f"Compressor: error_feedback={error_feedback!r} feeds back "
                             f"{sorted(fed - compressed)}, which directions={directions!r} "
                             f"sends raw")
        self.codec, self.schedule, self.seed = codec, schedule, seed
        self.in_eval = bool(in_eval)
        self.error_feedback, self.directions = error_feedback, directions
        self.logit_dtype: Optional[torch.dtype] = logit_dtype
        self._compressed = compressed
        self.feedback: Optional[Feedback] = Feedback(fed) if fed else None
        self.t = 0
        self._calls: dict[int, int] = {}  # layer index -> training calls bound in this step
        self._eval_calls: dict[int, int] = {}  # the same for evaluation-mode calls

    def ratio(self, t: Optional[int] = None) -> float:
        """The ratio at step ``t`` (default: the current step)."""
        return self.schedule(self.t if t is None else t)

    def step(self, t: Optional[int] = None) -> None:
        """Advance to the next step, or to step ``t`` if given (call after the optimizer
        step, on every rank); commits the error-feedback residuals written in this step."""
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 0):
            raise ValueError(f"Compressor.step: t must be an integer >= 0 (got {t!r})")
        self.t = self.t + 1 if t is None else t
        self._calls.clear()
        self._eval_calls.clear()
        if self.feedback is not None:
            self.feedback.commit()

    def applies(self, training: bool) -> bool:
        """Whether a layer in this training mode compresses."""
        return training or self.in_eval

    def bind(self, layer: int, training: bool = True) -> BoundCodec:
        """Fix the ratio and key of one propagate call of layer ``layer`` (see the module
        docstring); every rank must bind in the same order. ``training``: the layer's mode;
        an evaluation-mode call gets no error feedback and counts its calls apart."""
        calls = self._calls if training else self._eval_calls
        call = calls.get(layer, 0)
        calls[layer] = call + 1
        return BoundCodec(self.codec, self.ratio(), self.seed, self.t, layer, call,
                          self._compressed, self.feedback if training else None,
                          self.logit_dtype)

    def describe(self) -> dict:
        """Codec, schedule and seed, plus ``error_feedback``, ``directions`` and
        ``logit_dtype`` where not the defaults (what a resumed run must match; a compressor
        made without them describes itself as before they existed)."""
        out = {"codec": self.codec.describe(), "schedule": self.schedule.describe(),
               "seed": self.seed}
        if self.error_feedback != "none":
            out["error_feedback"] = self.error_feedback
        if self.directions != "both":
            out["directions"] = self.directions
        if self.logit_dtype is not None:
            out["logit_dtype"] = str(self.logit_dtype).replace("torch.", "")
        return out

    def state_dict(self) -> dict:
        """The step state (ints and strings) and, with error feedback, this rank's residuals
        (``"feedback"``: committed, ``"pending"``: written in the current step; string keys
        ``"layer.call.tensor.owner.user.direction"``, CPU tensors). Saved in checkpoints; all
        of it loads with ``torch.load(weights_only=True)``."""
        out: dict[str, Any] = {"t": self.t,
                               "calls": {str(k): v for k, v in sorted(self._calls.items())},
                               "describe": repr(self.describe())}
        if self._eval_calls:
            out["eval_calls"] = {str(k): v for k, v in sorted(self._eval_calls.items())}
        if self.feedback is not None:
            out.update(self.feedback.state_dict())
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; refused if it was saved by another compressor (another
        codec, schedule, seed, feedback or directions) or is malformed; everything is checked
        before anything changes. A residual whose shape does not match its message is refused
        when the message is next sent."""
        if not isinstance(state, Mapping) or not isinstance(state.get("t"), int):
            raise ValueError(f"Compressor.load_state_dict: malformed state {state!r:.200}")
        if state.get("describe") != repr(self.describe()):
            raise ValueError(f"Compressor.load_state_dict: the state was saved by "
                             f"{state.get('describe')}, not by this compressor "
                             f"{self.describe()!r}")
        calls = {int(k): int(v) for k, v in dict(state.get("calls", {})).items()}
        eval_calls = {int(k): int(v) for k, v in dict(state.get("eval_calls", {})).items()}
        if self.feedback is not None:
            self.feedback.load_state_dict(state)
        elif state.get("feedback") or state.get("pending"):
            raise ValueError("Compressor.load_state_dict: the state holds error-feedback "
                             "residuals but this compressor has no error feedback")
        self.t, self._calls, self._eval_calls = state["t"], calls, eval_calls

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.describe().items()
                        if k in ("error_feedback", "directions", "logit_dtype"))
        return (f"Compressor({self.codec!r}, {self.schedule!r}, seed={self.seed}{extra}, "
                f"t={self.t})")


@dataclass(frozen=True)
class BoundCodec:
    """A compressor fixed for one propagate call: the codec, the ratio and the key prefix,
    the directions it compresses (the engine asks :meth:`compresses`), in training the
    compressor's error feedback (encodes of a fed-back direction go through it), and the
    dtype of the call's ``exact`` tensors where lossy (:meth:`logit_dtype_of`)."""

    codec: Codec
    ratio: float
    seed: int
    step: int
    layer: int
    call: int
    directions: frozenset = frozenset(DIRECTIONS)
    feedback: Optional[Feedback] = field(default=None, compare=False, repr=False)
    logit_dtype: Optional[torch.dtype] = None

    def compresses(self, direction: str) -> bool:
        """Whether messages of ``direction`` (``"rows"`` or ``"grads"``) go through the codec."""
        return direction in self.directions

    def lossy(self, direction: str) -> bool:
        """Whether this call's ``direction`` messages are lossy: the codec compresses that
        direction and the ratio is above 1 (every codec here sends raw at ratio <= 1 and
        encodes a wide float row at any ratio above it)."""
        return self.compresses(direction) and self.ratio > 1.0

    def logit_dtype_of(self, direction: str) -> Optional[torch.dtype]:
        """The dtype the ``exact`` tensors' ``direction`` messages cross in: ``logit_dtype``
        where :meth:`lossy`, else ``None`` (raw)."""
        return self.logit_dtype if self.logit_dtype is not None and self.lossy(direction) \
            else None

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

    def _feeds(self, key: MessageKey) -> bool:
        return self.feedback is not None and self.feedback.feeds(key)

    def encode(self, rows: Tensor, key: MessageKey) -> Tensor:
        """The payload of ``rows`` (raw rows go as they are, without feedback)."""
        if self.is_raw(rows):
            return rows
        if self._feeds(key):
            return self.feedback.encode(self.codec, self.ratio, rows, key)
        return self.codec.encode(rows, self.ratio, key)

    def encode_rows(self, source: Tensor, index: Tensor, key: MessageKey) -> Tensor:
        """``encode(source[index], key)`` without a full-size copy where the codec can."""
        if self.is_raw(source):
            return source.index_select(0, index)
        if self._feeds(key):  # the residual is added to the gathered rows
            return self.feedback.encode(self.codec, self.ratio, source.index_select(0, index),
                                        key)
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
