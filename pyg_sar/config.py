"""Configuration of the SAR engine (passed explicitly; never read from global state)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

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
            they are exact (see :mod:`pyg_sar.nn.registry`).
        compression: compression of the rows (and their gradients) that cross the network
            (:mod:`pyg_sar.compression`): ``None`` (default: none), one
            :class:`~pyg_sar.compression.Compressor` for every message-passing layer, a dict
            of layer name (as in ``model.named_modules()``) -> compressor or ``None``, or a
            callable ``(name, index, num_layers) -> compressor or None`` such as
            :func:`~pyg_sar.compression.all_but_last`. Layers compress only in training mode
            unless the compressor says ``in_eval=True``.
    """

    mode: str = "sar"
    pipeline_depth: Optional[int] = None
    use_kernels: bool = True
    project_first: bool = True
    trusted_layers: tuple[type, ...] = ()
    compression: Any = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"SARConfig: mode must be one of {MODES} (got {self.mode!r})")
        if self.pipeline_depth is not None and (not isinstance(self.pipeline_depth, int)
                                                or self.pipeline_depth < 0):
            raise ValueError(f"SARConfig: pipeline_depth must be an integer >= 0 "
                             f"(got {self.pipeline_depth!r})")
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
