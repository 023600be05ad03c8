"""The optional dependencies and the pip extras that install them.

``pip install pyg_sar`` installs what every run needs (torch, PyG, numpy, scipy). MPI, METIS and
KaMinPar are extras, imported only where they are used; a missing one raises an error naming the
extra that installs it (``pip install 'pyg_sar[all]'`` installs them all).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

# module -> (extra, what the extra is)
EXTRAS = {
    "mpi4py": ("mpi", "mpi4py and MPICH"),
    "pymetis": ("metis", "pymetis"),
    "kaminpar": ("large", "KaMinPar"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def install_hint(module: str) -> str:
    """``pip install 'pyg_sar[<extra>]'`` for an optional ``module``."""
    return f"pip install 'pyg_sar[{EXTRAS[module][0]}]'"


def missing_message(module: str, needed_for: str, alternative: Optional[str] = None) -> str:
    """E.g. ``method='metis' needs pymetis: pip install 'pyg_sar[metis]' (or use
    method='random')``."""
    text = f"{needed_for} needs {EXTRAS[module][1]}: {install_hint(module)}"
    return text + (f" (or {alternative})" if alternative else "")


def is_missing(err: ImportError, module: str) -> bool:
    """Whether ``err`` says that ``module`` (or a submodule) is not installed, rather than
    that it is installed but failed to load."""
    name = getattr(err, "name", None) or ""
    return isinstance(err, ModuleNotFoundError) and (name == module or
                                                     name.startswith(module + "."))


def require(module: str, needed_for: str, alternative: Optional[str] = None) -> ModuleType:
    """``import module``, or :class:`MissingExtraError` naming the extra that installs it.

    Args:
        module: a key of :data:`EXTRAS` (or a submodule of one, e.g. ``"pymetis._internal"``).
        needed_for: what needs it, the start of the message (``"method='metis'"``).
        alternative: what works without it, added as ``(or <alternative>)``.
    """
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        text = missing_message(top, needed_for, alternative)
        if not is_missing(err, top):  # installed but broken: say why as well
            text += f"; importing {module} failed: {err}"
        raise MissingExtraError(text) from err
