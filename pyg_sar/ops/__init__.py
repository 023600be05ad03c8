"""Python wrappers of the native operators ``torch.ops.pyg_sar.*`` (built from csrc/).

* :func:`gather_aggregate`: fused gather + sum/mean/max/min aggregation over a CSR graph, with
  autograd; :func:`gather_aggregate_reference` is its pure-torch oracle and fallback.
* :func:`native_available`: whether the native library ``pyg_sar._C`` is built.
"""
from pyg_sar.ops._gather_aggregate import GatherAggregate, gather_aggregate
from pyg_sar.ops._native import native_available
from pyg_sar.ops.reference import gather_aggregate_reference

# Register torch.ops.pyg_sar.* now when the library is built; never raises (see native_available).
native_available()

__all__ = [
    "native_available",
    "gather_aggregate",
    "gather_aggregate_reference",
    "GatherAggregate",
]
