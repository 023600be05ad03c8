"""The fingerprints of PyG's code and the check ``convert`` makes with them (:func:`refusal`);
:mod:`pyg_sar.nn.fingerprints` documents the rule and records new verified sets (its command
line), and re-exports every name here."""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import linecache
import os
import textwrap
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Optional

import torch_geometric

# Functions of a class body that do not change what a module computes from its parameters.
IGNORED = frozenset({"reset_parameters", "_reset_parameters", "__repr__"})
# MessagePassing methods a class inherits whose code the engine relies on.
MESSAGE_PASSING_BEHAVIOUR = ("message", "aggregate", "update", "message_and_aggregate",
                             "edge_update")
SIGNATURE = ":signature"  # suffix of a key that fingerprints a signature, not a body
HASH_CHARS = 16
DATA_MODULE = Path(__file__).with_name("pyg_fingerprints.py")
# Set to "1" for the zoo run that verifies a torch_geometric whose code changed: convert then
# runs the verified classes without comparing fingerprints (never for training: the zoo's
# results, not this variable, decide what --write records).
SKIP_VARIABLE = "PYG_SAR_VERIFY_PYG"
FINGERPRINT_REFUSAL = "its code is not the code the zoo verified"


def _thb_functions() -> tuple[Callable, ...]:
    from torch_geometric.nn import to_hetero_with_bases_transformer as thb
    return (thb.get_edge_offset_dict, thb.get_edge_type, thb.group_edge_placeholder,
            thb.get_node_offset_dict, thb.group_node_placeholder, thb.hook)


# Class path -> the functions pyg_sar replaces or relies on that the class does not read.
EXTRA: dict[str, Callable[[], tuple[Callable, ...]]] = {
    "torch_geometric.nn.to_hetero_with_bases_transformer.HeteroBasisConv": _thb_functions,
}


def class_path(cls: type) -> str:
    """``module.qualname`` of a class (the key of its fingerprints)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def function_path(func: Callable) -> str:
    """``module.qualname`` of a function (the key of its fingerprint)."""
    return f"{func.__module__}.{func.__qualname__}"


# ----------------------------------------------------------------------------- fingerprints
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _has_docstring(node: ast.AST) -> bool:
    body = getattr(node, "body", None)
    return bool(body) and isinstance(body[0], ast.Expr) and isinstance(
        body[0].value, ast.Constant) and isinstance(body[0].value.value, str)


def _last_line(code: types.CodeType) -> int:
    """The last source line holding code of ``code`` or of the functions it defines."""
    last = max((pos[1] for pos in code.co_positions() if pos[1] is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def _definition(func: Callable) -> Optional[ast.AST]:
    """``func``'s definition, parsed: the lines of its file from its first (decorator) line to
    its last line holding code (no tokenizing of the file: fast), else from
    ``inspect.getsource``."""
    code = getattr(func, "__code__", None)
    if code is not None:
        lines = linecache.getlines(code.co_filename)
        snippet = "".join(lines[code.co_firstlineno - 1:_last_line(code)])
        try:
            body = ast.parse(textwrap.dedent(snippet)).body
        except (SyntaxError, ValueError):
            body = []
        if (len(body) == 1 and isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef))
                and body[0].name == code.co_name):
            return body[0]
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    return ast.parse(textwrap.dedent(source)).body[0]


def normalised_source(func: Callable) -> Optional[str]:
    """``func``'s source without comments, docstrings and formatting (its definition parsed
    and unparsed by :mod:`ast`, docstrings of it and of what it defines left out), or ``None``
    when it has no Python source."""
    node = _definition(func)
    if node is None:
        return None
    kept = [(n, n.body) for n in ast.walk(node) if isinstance(n, _DEFS) and _has_docstring(n)]
    try:
        for n, body in kept:
            n.body = body[1:] or [ast.Pass()]
        return ast.unparse(node)
    finally:  # the file's parse is cached: leave it as it was
        for n, body in kept:
            n.body = body


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]


@functools.cache
def fingerprint(func: Callable) -> str:
    """The fingerprint of ``func``'s normalised source (of its name without source)."""
    source = normalised_source(func)
    return _digest(source if source is not None else f"<no source> {function_path(func)}")


def signature_fingerprint(func: Callable) -> str:
    """The fingerprint of ``func``'s signature (parameter names, kinds, defaults)."""
    return _digest(str(inspect.signature(func)))


# Where the helpers a class's code reads are followed: PyG's layers and graph utilities (not
# its compile / export switches or tensor subclasses, which do not change a layer's numbers).
HELPER_PACKAGES = ("torch_geometric.nn.", "torch_geometric.utils.")


def _is_pyg_function(obj: Any) -> bool:
    return (isinstance(obj, types.FunctionType)
            and getattr(obj, "__module__", "").startswith(HELPER_PACKAGES))


def _global_names(code: types.CodeType) -> set[str]:
    # The names the code reads as globals or attributes (a superset of its globals, without
    # disassembling it: convert must stay fast); resolved in the function's globals.
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _helpers(funcs: Iterable[Callable]) -> list[Callable]:
    """The module-level torch_geometric functions ``funcs`` read by name, recursively."""
    seen: dict[int, Callable] = {}
    todo = [inspect.unwrap(f) for f in funcs]
    start = {id(f) for f in todo}
    while todo:
        func = todo.pop()
        code = getattr(func, "__code__", None)
        if code is None:
            continue
        scope = func.__globals__
        for name in sorted(_global_names(code)):
            obj = scope.get(name)
            if obj is None or not _is_pyg_function(obj):
                continue
            obj = inspect.unwrap(obj)
            if id(obj) not in seen and id(obj) not in start:
                seen[id(obj)] = obj
                todo.append(obj)
    return list(seen.values())


def _members(klass: type) -> Iterable[tuple[str, Callable]]:
    for name, member in vars(klass).items():
        if isinstance(member, (staticmethod, classmethod)):
            yield name, member.__func__
        elif isinstance(member, property):
            for part in (member.fget, member.fset, member.fdel):
                if part is not None:
                    yield name, part
        elif isinstance(member, types.FunctionType):
            yield name, member


def class_functions(cls: type) -> dict[str, Callable]:
    """The functions ``cls``'s exactness depends on, by qualified name (see the module
    docstring for the rule); a signature's key ends in :data:`SIGNATURE`."""
    from torch_geometric.nn.conv import MessagePassing
    own: dict[str, Callable] = {}
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is MessagePassing or not klass.__module__.startswith("torch_geometric"):
            continue
        defined = set()
        for name, func in _members(klass):
            # PyG compiles propagate / edge_updater per class into a module of its own.
            if (name in IGNORED or name in names or name.startswith("_jinja")
                    or getattr(func, "__module__", None) != klass.__module__):
                continue
            defined.add(name)
            func = inspect.unwrap(func)
            key = function_path(func)
            if isinstance(vars(klass)[name], property):
                key += ".fget" if func is vars(klass)[name].fget else ".fset"
            own.setdefault(key, func)
        names |= defined  # overridden further down the MRO: the first definition runs
    signatures: dict[str, Callable] = {}
    if issubclass(cls, MessagePassing):
        for name in MESSAGE_PASSING_BEHAVIOUR:
            func = getattr(cls, name, None)
            if isinstance(func, types.FunctionType) and name not in names:
                own.setdefault(function_path(func), func)
        propagate = MessagePassing.propagate
        signatures[function_path(propagate) + SIGNATURE] = propagate
    extra = EXTRA.get(class_path(cls))
    for func in (extra() if extra is not None else ()):
        own.setdefault(function_path(func), func)
    for func in _helpers(own.values()):
        own.setdefault(function_path(func), func)
    return {**dict(sorted(own.items())), **signatures}


@functools.cache
def class_fingerprints(cls: type) -> dict[str, str]:
    """The installed fingerprints of ``cls``: qualified function name -> fingerprint."""
    return {key: (signature_fingerprint(func) if key.endswith(SIGNATURE) else fingerprint(func))
            for key, func in class_functions(cls).items()}


# ------------------------------------------------------------------------- verified sets
@functools.cache
def verified_sets() -> dict[str, list[dict[str, Any]]]:
    """Class path -> its verified sets, each ``{"verified_on": [versions], "functions":
    {qualified name: fingerprint}}`` (:mod:`pyg_sar.nn.conversion.pyg_fingerprints`)."""
    from pyg_sar.nn.conversion.pyg_fingerprints import FINGERPRINTS
    return FINGERPRINTS["classes"]


def _differences(current: dict[str, str], recorded: dict[str, str]) -> list[str]:
    return sorted(k for k in set(current) | set(recorded) if current.get(k) != recorded.get(k))


@functools.cache
def changed_functions(cls: type) -> Optional[tuple[tuple[str, ...], tuple[str, ...]]]:
    """``None`` when ``cls``'s installed code equals a verified set; else the functions that
    differ from the closest verified set (added, removed or edited; empty when the class was
    never verified) and the torch_geometric versions that set was verified on."""
    sets = verified_sets().get(class_path(cls))
    if not sets:
        return (), ()
    current = class_fingerprints(cls)
    best: Optional[tuple[list[str], list[str]]] = None
    for entry in sets:
        diff = _differences(current, entry["functions"])
        if not diff:
            return None
        if best is None or len(diff) < len(best[0]):
            best = (diff, entry["verified_on"])
    assert best is not None
    return tuple(best[0]), tuple(best[1])


def refusal(cls: type) -> Optional[str]:
    """Why PyG's ``cls`` is refused because its code is not the code pyg_sar verified (with
    the override), or ``None`` when it is (or when :data:`SKIP_VARIABLE` is set)."""
    if os.environ.get(SKIP_VARIABLE) == "1":
        return None
    changed = changed_functions(cls)
    if changed is None:
        return None
    functions, versions = changed
    installed = torch_geometric.__version__
    override = (f"{FINGERPRINT_REFUSAL}; list the class in SARConfig(trusted_layers=...) to "
                f"run it anyway (installed torch_geometric {installed})")
    if not functions:
        return f"pyg_sar has no verified fingerprints of {cls.__name__}: {override}"
    shown = ", ".join(f.removesuffix(SIGNATURE) + (" (signature)" if f.endswith(SIGNATURE)
                                                    else "") for f in functions[:4])
    more = f" and {len(functions) - 4} more" if len(functions) > 4 else ""
    return (f"pyg_sar verified {cls.__name__} as torch_geometric {', '.join(versions)} defines "
            f"it, and the installed code of {shown}{more} differs (changed, added or removed): "
            f"{override}")


def clear_caches() -> None:
    """Forget the fingerprints computed so far (after PyG's code was patched in place)."""
    for cached in (fingerprint, class_fingerprints, changed_functions, verified_sets):
        cached.cache_clear()


# --------------------------------------------------------------------------------- the data
