"""Names a package exports and imports only on first use (PEP 562), so that importing the
package stays cheap: ``pyg_sar``, ``pyg_sar.partition`` and ``pyg_sar.link`` import no torch
until a name is used."""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, table: dict[str, str], namespace: dict[str, Any],
                 subpackages: bool = False, deprecated: dict[str, str] | None = None,
                 ) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, whose names ``table`` maps to
    the modules that define them; with ``subpackages``, an entry naming ``package.name``
    itself exports that module (``pyg_sar.nn``). A resolved name is stored in ``namespace``
    (the package's globals), so it is looked up once. ``deprecated`` maps names that still
    resolve, for one release, to the module to import them from instead: each use warns
    (``DeprecationWarning``), so they are never stored and stay out of ``dir()``."""
    deprecated = deprecated or {}

    def __getattr__(name: str) -> Any:
        if name in deprecated:
            warnings.warn(f"{package}.{name} is internal and leaves {package}'s namespace in "
                          f"the next release; import it from {deprecated[name]}",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(deprecated[name]), name)
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        mod = importlib.import_module(module)
        value = mod if subpackages and module == f"{package}.{name}" else getattr(mod, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
