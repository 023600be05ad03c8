"""Configuration of the SAR engine (passed explicitly; never read from global state)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

MODES = ("sar", "sa", "halo")


@dataclass(frozen=True)
class SARConfig:
    """How converted layers run their distributed propagate.

    Args:
        mode: ``"sar"`` (sequential aggregation + rematerialization: nothing remote is kept for
            backward), ``"sa"`` (sequential aggregation, fetched rows kept for backward) or
            ``"halo"`` (one all-to-all of the whole halo per layer: the vanilla baseline).
        pipeline_depth: number of block fetches kept in flight ahead of the block being
            computed (0 disables prefetching). ``None`` (default): 1 where the transport moves
            data while the rank computes (gloo, NCCL), 0 where it moves data only inside
            waits (MPICH), since there a prefetch only holds its buffers longer.
        use_kernels: use the fused native kernels where a layer's message allows it.
        project_first: let a narrowing GraphSAGE layer with sum/mean aggregation apply its
            neighbour projection before aggregating (exact up to rounding; less memory and
            traffic, as DGL's ``lin_before_mp``).
        trusted_layers: module classes the user vouches for: ``convert`` runs them (and their
            subclasses) with their own ``message`` per block although pyg_sar could not show
            they are exact (see :mod:`pyg_sar.nn.conversion.registry`).
        compression: compression of the rows (and their gradients) that cross the network
            (:mod:`pyg_sar.compression`): ``None`` (default: none), one
            :class:`~pyg_sar.compression.Compressor` for every message-passing layer, a dict
            of layer name (as in ``model.named_modules()``) -> compressor or ``None``, or a
            callable ``(name, index, num_layers) -> compressor or None`` such as
            :func:`~pyg_sar.compression.all_but_last`. Layers compress only in training mode
            unless the compressor says ``in_eval=True``.
        wire_dtype: the dtype floating-point boundary rows and their gradients cross the
            network in (forward fetch, backward re-fetch, halo all-to-all, gradient returns):
            ``None`` (default: their own dtype, exact), ``torch.bfloat16`` or
            ``torch.float32`` (strings ``"bfloat16"``/``"bf16"``/``"float32"`` are accepted and
            normalised). Rows wider than it are cast (rounded to nearest even) before sending
            and decoded to their own dtype on receipt; rows no wider (bf16 rows) cross as they
            are. A float32 row under ``torch.bfloat16`` costs half the bytes, which the traffic
            ledger counts; the result differs from the single-process one only by the rounding
            of remote rows and of their returned gradients (a cast is deterministic, so modes
            ``"sar"`` and ``"sa"`` still agree bit for bit). With a compressor the codec's
            payload values are cast (the kept channels of ``Truncate`` / ``RandomSubset``);
            ``Quantize``'s packed integer codes are left alone. Attention logits, which every
            codec sends raw, are not cast either (see :mod:`pyg_sar.core.exchange`). Applies in
            training and eval mode; one process sends nothing, so ``P = 1`` is unchanged.
            float16 is refused (values beyond 65504 would arrive as infinities).
        sync_gradients: after every backward pass that reaches the converted model's
            parameters (through ``forward`` or any other method or submodule), sum each
            parameter's new gradient over ranks (bucketed all-reduce at the end of the pass,
            as torch DDP does), so ``.grad`` holds the single-process gradient and no
            :func:`~pyg_sar.all_reduce_gradients` call is needed (an explicit one is then a
            no-op). Gradient accumulation over several backward passes stays exact. ``False``:
            gradients stay per rank (call :func:`~pyg_sar.all_reduce_gradients` yourself, or
            wrap the model in DDP).
        broadcast_parameters: copy rank 0's parameters and buffers to every rank at
            :func:`pyg_sar.convert` when the job's context exists (made by
            :func:`pyg_sar.init` or :func:`pyg_sar.distribute`, as in every script that runs on
            several ranks), else on the model's first call over a
            :class:`~pyg_sar.DistGraph` (harmless next to an explicit
            :func:`~pyg_sar.broadcast_parameters`).
        check_parameters_every: check that every rank holds bit-identical parameters at the
            end of the first 10 synchronised backward passes and then of every
            ``check_parameters_every``-th one, whichever method ran (and likewise on
            training forwards over a DistGraph); one small all-reduce of per-parameter
            fingerprints. Parameters that drifted apart raise a ``RuntimeError`` naming them.
            ``0`` turns the check off.
        check_loss: on more than one rank, raise a ``RuntimeError`` when a backward pass
            through the model's output, or one that reaches its parameters through any other
            method, does not come from a global loss of
            :mod:`pyg_sar.nn.functional` (a per-rank loss such as PyG's
            ``F.cross_entropy(out[mask], y[mask])`` trains a different model, silently). A
            custom reduction that already is this rank's share of a global loss passes
            through :func:`pyg_sar.nn.functional.global_loss`; ``False`` turns the check off.
    """

    mode: str = "sar"
    pipeline_depth: Optional[int] = None
    use_kernels: bool = True
    project_first: bool = True
    trusted_layers: tuple[type, ...] = ()
    compression: Any = field(default=None, hash=False)
    sync_gradients: bool = True
    broadcast_parameters: bool = True
    check_parameters_every: int = 100
    check_loss: bool = True
    wire_dtype: Optional[torch.dtype] = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"SARConfig: mode must be one of {MODES} (got {self.mode!r})")
        if self.pipeline_depth is not None and (not isinstance(self.pipeline_depth, int)
                                                or self.pipeline_depth < 0):
            raise ValueError(f"SARConfig: pipeline_depth must be an integer >= 0 "
                             f"(got {self.pipeline_depth!r})")
        for name in ("sync_gradients", "broadcast_parameters", "check_loss"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"SARConfig: {name} must be True or False "
                                 f"(got {getattr(self, name)!r})")
        every = self.check_parameters_every
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ValueError(f"SARConfig: check_parameters_every must be an integer >= 0 "
                             f"(0: no check; got {every!r})")
        trusted = self.trusted_layers
        if isinstance(trusted, type):
            trusted = (trusted,)
        if not isinstance(trusted, (tuple, list)) or not all(isinstance(t, type)
                                                             for t in trusted):
            raise ValueError(f"SARConfig: trusted_layers must be a tuple of classes "
                             f"(got {self.trusted_layers!r})")
        object.__setattr__(self, "trusted_layers", tuple(trusted))
        from pyg_sar.compression.interface import check_spec
        check_spec(self.compression)
        from pyg_sar.compression.transport import check_wire_dtype
        object.__setattr__(self, "wire_dtype", check_wire_dtype(self.wire_dtype))
