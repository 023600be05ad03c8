"""Loading of the native library ``pyg_sar._C`` (registers ``torch.ops.pyg_sar.*``).

Importing ``pyg_sar.ops`` never fails when the library is absent (a source checkout that was not
built): the wrappers fall back to pure-torch references and warn once. Set the environment variable
``PYG_SAR_REQUIRE_NATIVE=1`` (CI does) to turn that fallback into an error.
"""
from __future__ import annotations

import functools
import importlib
import os
import warnings

import torch

REQUIRE_NATIVE_ENV = "PYG_SAR_REQUIRE_NATIVE"


@functools.lru_cache(maxsize=1)
def _load() -> str | None:
    """Imports ``pyg_sar._C`` once; returns None on success, else why it failed."""
    try:
        importlib.import_module("pyg_sar._C")
    except (ImportError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if not hasattr(torch.ops.pyg_sar, "gather_aggregate"):
        return "pyg_sar._C imported but registered no pyg_sar::gather_aggregate operator"
    from pyg_sar.ops import _fake
    _fake.register()
    return None


def native_available() -> bool:
    """Whether the native library ``pyg_sar._C`` is built and its operators are registered."""
    return _load() is None


def native_required() -> bool:
    """Whether ``PYG_SAR_REQUIRE_NATIVE`` forbids the pure-torch fallback."""
    return os.getenv(REQUIRE_NATIVE_ENV, "0").lower() in ("1", "true", "yes", "on")


def has_kernel(op: str, device: torch.device) -> bool:
    """Whether ``torch.ops.pyg_sar.<op>`` has a kernel for ``device``'s backend."""
    if not native_available():
        return False
    key = {"cpu": torch.DispatchKey.CPU, "cuda": torch.DispatchKey.CUDA}.get(device.type)
    return key is not None and getattr(torch.ops.pyg_sar, op).default.has_kernel_for_dispatch_key(
        key)


@functools.cache
def warn_fallback(op: str, device_type: str) -> None:
    """Warns once per (op, device type) that the pure-torch reference runs instead."""
    reason = _load() or f"no {device_type} kernel was built"
    message = (f"pyg_sar: torch.ops.pyg_sar.{op} is not available for {device_type} tensors "
               f"({reason}); using the pure-torch reference, which materialises the E x F "
               f"tensor of gathered rows. Build the extension with `pip install .`.")
    if native_required():
        raise RuntimeError(message + f" ({REQUIRE_NATIVE_ENV} is set, so this is an error.)")
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def has_op_kernel(op: str, device: torch.device) -> bool:
    """Whether ``torch.ops.pyg_sar.<op>`` exists (an older build lacks it) with a kernel for
    ``device``."""
    try:
        return has_kernel(op, device) if hasattr(torch.ops.pyg_sar, op) else False
    except (AttributeError, RuntimeError):  # the dispatcher does not know the op
        return False


@functools.cache
def warn_reference_fallback(op: str, device_type: str, same: str) -> None:
    """Warns once per (op, device type) that an op's pure-torch reference runs instead of its
    kernel (``same``: what the two agree on, e.g. "same bytes"); an error under
    ``PYG_SAR_REQUIRE_NATIVE``."""
    reason = _load() or f"pyg_sar._C has no {device_type} kernel for it (rebuild the extension)"
    message = (f"pyg_sar: torch.ops.pyg_sar.{op} is not available for {device_type} tensors "
               f"({reason}); using the pure-torch reference ({same}, slower).")
    if native_required():
        raise RuntimeError(message + f" ({REQUIRE_NATIVE_ENV} is set, so this is an error.)")
    warnings.warn(message, RuntimeWarning, stacklevel=5)
