"""Which PyG code pyg_sar verified: content fingerprints, checked by ``convert``.

pyg_sar runs a PyG class only as the zoo (``tests/zoo``) verified it. What that verification
depends on is the class's *code*, not the release number it came in, so ``convert`` compares
the code: every function a class's exactness depends on is fingerprinted (SHA-256 of its
source, normalised), and a class is accepted on any torch_geometric release, a development
build included, when its fingerprints equal a set recorded after the zoo verified it. A class
any of whose functions changed is refused, naming the function
(:func:`changed_functions`; ``SARConfig(trusted_layers=...)`` overrides), while every other
class still converts.

**The rule: what a class's fingerprint covers** (:func:`class_functions`). For a class pyg_sar
runs (the registry's ``VERIFIED`` layers, ``PASSTHROUGH_MODULES``, ``MODULE_FORWARDS`` and
``VERIFIED_SUBMODULES``, the aggregations and norms it replaces or runs):

* every function defined in the body of the class and of its torch_geometric bases (methods,
  static and class methods, property getters and setters; the first definition along the MRO),
  except ``reset_parameters``, ``_reset_parameters`` and ``__repr__``, which do not change what
  a module computes from its parameters (the zoo runs PyG and pyg_sar on the same parameters).
  This covers
  ``__init__`` (the options the adapters read), ``forward``, ``message``, ``aggregate``,
  ``message_and_aggregate``, ``edge_update``, ``update`` and the helper methods they call or
  pyg_sar copies (e.g. SuperGATConv's ``get_attention``, ChebConv's ``__norm__``). For a
  ``MessagePassing`` class, ``MessagePassing`` itself is not a base in this sense; instead
  the functions of it that the class inherits and pyg_sar's engine relies on are: the
  behaviour methods it resolves to (``message``: ``x_j`` is what the fused kernel computes,
  ``aggregate``, ``update``, ``message_and_aggregate``, ``edge_update``) and the *signature*
  of ``MessagePassing.propagate`` (which a converted layer's ``propagate`` takes over);
* the module-level torch_geometric functions those functions read by name (their globals:
  ``gcn_norm``, ``softmax``, ``add_self_loops``, RGCNConv's ``masked_edge_index``, HANConv's
  ``group``, ...), and recursively the ones those read: pyg_sar re-runs them with edited
  globals (:mod:`pyg_sar.nn.conversion.forwards`), or
  re-implements them over a DistGraph (:mod:`pyg_sar.nn.adapters.families`);
* :data:`EXTRA` names the functions pyg_sar replaces that the class does not read itself
  (``to_hetero_with_bases``'s graph functions, for ``HeteroBasisConv``).

Submodules (``Linear``, aggregations, norms) are checked as modules of their own, not as part
of a layer: a layer whose ``MeanAggregation`` changed is refused naming
``MeanAggregation.forward``. A function's fingerprint is the SHA-256 (16 hex digits) of its
source, dedented, parsed and unparsed by :mod:`ast` with docstrings removed, so comments and
formatting do not count; a function without Python source is fingerprinted by its name.

**The data** (:mod:`pyg_sar.nn.conversion.pyg_fingerprints`, a generated module so that it ships
with the code): per class, the verified sets of fingerprints, each with the torch_geometric
versions the zoo verified it on. ``python -m pyg_sar.nn.fingerprints --write --zoo-results
FILE [FILE ...]`` adds the installed torch_geometric's fingerprints, after the zoo verified that
release (the results of ``python -m pyg_sar.testing.zoo_report --out FILE``, and of the
heterogeneous zoo with ``--part hetero --hetero-out FILE``): the version is added to the set
equal to the installed code, or a new set is recorded. ``--check`` lists the classes whose
installed code no verified set matches. Fingerprints are computed lazily, once per class per
process.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

import torch_geometric

from pyg_sar.nn.conversion.fingerprint_check import (  # noqa: F401 (the names of this module before issue 37)
    _DEFS,
    DATA_MODULE,
    EXTRA,
    FINGERPRINT_REFUSAL,
    HASH_CHARS,
    HELPER_PACKAGES,
    IGNORED,
    MESSAGE_PASSING_BEHAVIOUR,
    SIGNATURE,
    SKIP_VARIABLE,
    _definition,
    _differences,
    _digest,
    _global_names,
    _has_docstring,
    _helpers,
    _is_pyg_function,
    _last_line,
    _members,
    _thb_functions,
    changed_functions,
    class_fingerprints,
    class_functions,
    class_path,
    clear_caches,
    fingerprint,
    function_path,
    normalised_source,
    refusal,
    signature_fingerprint,
    verified_sets,
)


def covered_classes() -> list[type]:
    """Every PyG class pyg_sar runs: the registry's VERIFIED layers, PASSTHROUGH_MODULES,
    MODULE_FORWARDS and VERIFIED_SUBMODULES (those the installed torch_geometric has)."""
    import importlib

    from pyg_sar.nn.conversion import registry
    classes = {class_path(c): c for c in registry.VERIFIED}
    for path in sorted(registry.PASSTHROUGH_MODULES | set(registry.MODULE_FORWARDS)
                       | registry.VERIFIED_SUBMODULES):
        module, _, name = path.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        classes[class_path(cls)] = cls
    return [classes[k] for k in sorted(classes)]


def current_data() -> dict[str, dict[str, str]]:
    """Class path -> the installed fingerprints, for every covered class."""
    return {class_path(c): class_fingerprints(c) for c in covered_classes()}


def merged(data: dict[str, Any], current: dict[str, dict[str, str]], version: str
           ) -> dict[str, Any]:
    """``data`` (the stored fingerprints) with ``current`` recorded as verified on
    ``version``: added to an equal set, or as a new set."""
    classes = {k: [dict(e, verified_on=list(e["verified_on"])) for e in v]
               for k, v in data.get("classes", {}).items()}
    for path, functions in current.items():
        entries = classes.setdefault(path, [])
        same = next((e for e in entries if e["functions"] == functions), None)
        if same is None:
            entries.append({"verified_on": [version], "functions": functions})
        elif version not in same["verified_on"]:
            same["verified_on"].append(version)
    return {"format": 1, "classes": dict(sorted(classes.items()))}


def render(data: dict[str, Any]) -> str:
    """The text of :mod:`pyg_sar.nn.conversion.pyg_fingerprints` holding ``data``."""
    versions = sorted({v for entries in data["classes"].values() for e in entries
                       for v in e["verified_on"]})
    return (
        '"""Fingerprints of the PyG code the zoo verified (generated: do not edit).\n\n'
        "Written by ``python -m pyg_sar.nn.fingerprints --write --zoo-results FILE ...`` "
        "after the\nzoo verified the installed torch_geometric; read by "
        ":mod:`pyg_sar.nn.fingerprints`. Per class,\nits verified sets of function "
        "fingerprints, each with the torch_geometric versions it was\nverified on. Versions: "
        f"{', '.join(versions)}.\n"
        '"""\n# ruff: noqa: E501\n'
        f"FINGERPRINTS = {_lists_inline(json.dumps(data, indent=1))}\n")


def _lists_inline(text: str) -> str:
    """``text`` (indented JSON) with its lists of strings on one line."""
    return re.sub(r"\[\s*((?:\"[^\"]*\",?\s*)*)\]",
                  lambda m: "[" + ", ".join(re.findall(r'"[^"]*"', m.group(1))) + "]", text)


def _check_zoo(paths: list[Path], version: str) -> list[str]:
    problems = []
    for path in paths:
        results = json.loads(path.read_text(encoding="utf-8"))
        ran_on = results.get("versions", {}).get("torch_geometric")
        if ran_on != version:
            problems.append(f"{path}: the zoo ran on torch_geometric {ran_on}, not {version}")
        failing = [r["name"] for r in results.get("recipes", []) if r["outcome"] == "FAIL"]
        if failing:
            problems.append(f"{path}: neither exact nor refused: {', '.join(failing)}")
        unverified = sorted({r["class"] for r in results.get("recipes", [])
                             if r["outcome"] == "REFUSED" and FINGERPRINT_REFUSAL in r["detail"]})
        if unverified:
            problems.append(f"{path}: refused for their fingerprints, so not verified: "
                            f"{', '.join(unverified)} (run the zoo with {SKIP_VARIABLE}=1)")
    return problems


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true",
                        help="record the installed fingerprints as verified on the installed "
                             "torch_geometric (needs --zoo-results)")
    parser.add_argument("--zoo-results", type=Path, nargs="+", default=[],
                        help="results of the zoo runs that verified the installed "
                             "torch_geometric (zoo_report --out / --hetero-out)")
    parser.add_argument("--check", action="store_true",
                        help="list the classes whose installed code no verified set matches")
    args = parser.parse_args(argv)
    version = torch_geometric.__version__
    if args.write:
        if not args.zoo_results:
            parser.error("--write records what the zoo verified: pass --zoo-results")
        problems = _check_zoo(args.zoo_results, version)
        if problems:
            print("not written:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        from pyg_sar.nn.conversion.pyg_fingerprints import FINGERPRINTS
        data = merged(FINGERPRINTS, current_data(), version)
        DATA_MODULE.write_text(render(data), encoding="utf-8")
        print(f"{DATA_MODULE}: {len(data['classes'])} classes, torch_geometric {version} "
              f"recorded")
        return 0
    bad = 0
    for cls in covered_classes():
        reason = refusal(cls)
        if reason is not None:
            bad += 1
            print(f"{class_path(cls)}: {reason}")
    print(f"torch_geometric {version}: {len(covered_classes()) - bad} classes match a verified "
          f"set, {bad} do not", file=sys.stderr)
    return 1 if (bad and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
