"""``pyg_sar.unconvert``: turn a converted model back into the plain PyG model."""
from __future__ import annotations

from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from pyg_sar.nn.conversion.forwards import AttentionNotKept
from pyg_sar.nn.norm import DistributedBatchNorm, DistributedHeteroBatchNorm

# torch.nn.Module's hook tables; the ``*_with_kwargs`` / ``always_called`` tables are keyed by
# the same handle ids as the forward hook tables.
_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                "_backward_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")
_SIDE_TABLES = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called")
_TENSOR_HOOK_TABLES = ("_backward_hooks", "_post_accumulate_grad_hooks")


def unconvert(model: torch.nn.Module) -> torch.nn.Module:
    """Turn a model converted by :func:`pyg_sar.convert` back into the plain PyG model, in place.

    Every converted message-passing layer gets back its PyG class (same parameters, buffers
    and submodules), every :class:`~pyg_sar.nn.norm.DistributedBatchNorm` becomes a
    :class:`torch.nn.BatchNorm1d` again (the same module object, so its parameters and
    running statistics are the ones trained), the hooks pyg_sar registered on the model, its
    modules and its parameters (batch-norm binding, gradient synchronisation) are removed, and
    every ``_sar_*`` attribute is deleted. The model then runs as single-process PyG on a
    Tensor ``edge_index`` and ``torch.save(model)`` loads without pyg_sar installed. A model
    that was never converted is left as it is.

    Args:
        model: a model returned by :func:`pyg_sar.convert` (or a plain PyG model).

    Returns:
        the same ``model``.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"pyg_sar.unconvert: expected a torch.nn.Module (got "
                        f"{type(model).__name__})")
    for module in model.modules():
        _release_sar_state(module)
        _remove_hooks(module)
        base = getattr(type(module), "_sar_base", None)
        if base is not None and type(module) is not base:
            # Every class convert generates names the PyG class it came from: converted
            # layers (SARLayer), LightGCN (a sharded table keeps this rank's rows), replaced
            # forwards (module_forwards), the auto-encoders and DeepGraphInfomax.
            module.__class__ = base
        elif isinstance(module, DistributedBatchNorm):
            module.__class__ = torch.nn.BatchNorm1d
        elif isinstance(module, DistributedHeteroBatchNorm):
            module.__class__ = DistributedHeteroBatchNorm.__bases__[0]
        for name in [k for k in vars(module) if k.startswith("_sar_")]:
            delattr(module, name)
        for name, value in list(vars(module).items()):
            if isinstance(value, AttentionNotKept):  # attention weights never materialised
                setattr(module, name, None)
    for param in model.parameters():
        _remove_tensor_hooks(param)
        if hasattr(param, "_sar_rank_local"):  # pyg_sar.nn.embedding's mark
            del param._sar_rank_local
    return model


def _is_ours(hook: Any) -> bool:
    """Whether ``hook`` (a function, bound method, callable object or partial of one) is
    defined in pyg_sar."""
    fn = getattr(hook, "func", hook)  # functools.partial
    module = getattr(fn, "__module__", None) or type(fn).__module__ or ""
    return module == "pyg_sar" or module.startswith("pyg_sar.")


def _release_sar_state(module: torch.nn.Module) -> None:
    """Remove the hooks held by ``_sar_*`` attributes: hook handles, and pyg_sar objects with a
    ``remove()`` method (e.g. the gradient synchronisation's state)."""
    for name, value in list(vars(module).items()):
        if name.startswith("_sar_") and (isinstance(value, RemovableHandle) or (
                _is_ours(type(value)) and callable(getattr(value, "remove", None)))):
            value.remove()


def _remove_hooks(module: torch.nn.Module) -> None:
    for table_name in _HOOK_TABLES:
        table = getattr(module, table_name, None)
        if not table:
            continue
        for key in [k for k, hook in table.items() if _is_ours(hook)]:
            del table[key]
            if table_name in ("_forward_pre_hooks", "_forward_hooks"):
                for side in _SIDE_TABLES:
                    getattr(module, side, {}).pop(key, None)


def _remove_tensor_hooks(tensor: torch.Tensor) -> None:
    for table_name in _TENSOR_HOOK_TABLES:
        table = getattr(tensor, table_name, None)
        if table:
            for key in [k for k, hook in table.items() if _is_ours(hook)]:
                del table[key]
