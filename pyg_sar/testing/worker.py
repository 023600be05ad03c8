"""One rank of :func:`pyg_sar.testing.run_on_ranks` (``python -m pyg_sar.testing.worker``).

Sends its own stdout/stderr to ``<out-dir>/rank<r>.log``, calls :func:`pyg_sar.init`, runs the
target and writes ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": traceback}`` to
``<out-dir>/result<r>.json`` (atomically). A failing rank exits at once with code 1.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK", "RANK")


def _launch_rank() -> int:
    """This process's rank as the launcher announced it (before any communication)."""
    for var in _RANK_VARS:
        if var in os.environ:
            return int(os.environ[var])
    return 0


def load_target(target: str) -> Callable:
    """Resolve ``"module:function"`` or ``"path/to/file.py:function"``."""
    module_name, _, fn_name = target.rpartition(":")
    if module_name.endswith(".py") or os.sep in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"run_on_ranks target file '{path}' does not exist")
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(f"_pyg_sar_target_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise AttributeError(f"run_on_ranks target '{target}': no function {fn_name!r}")
    return fn


def _write(path: Path, payload: dict) -> None:
    from pyg_sar.files import atomic_write
    atomic_write(path, json.dumps(payload))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", required=True)
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--timeout", default=None, type=float)
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)

    rank = _launch_rank()
    log = os.open(args.out_dir / f"rank{rank}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    result_path = args.out_dir / f"result{rank}.json"
    try:
        kwargs = json.loads((args.out_dir / "kwargs.json").read_text())
        fn = load_target(args.target)
        import pyg_sar
        ctx = pyg_sar.init(backend=args.backend, timeout=args.timeout, device=args.device)
        if ctx.rank != rank:
            raise RuntimeError(f"launcher announced rank {rank}, pyg_sar.init found {ctx.rank}")
        result = fn(ctx, **kwargs)
        try:
            payload = {"ok": True, "result": result, "rank": rank, "time": time.time()}
            _write(result_path, payload)
        except TypeError as e:
            raise TypeError(f"the target's return value must be JSON-serialisable: {e}") from e
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the launcher
        error = traceback.format_exc()
        sys.stderr.write(error)
        _write(result_path, {"ok": False, "error": error, "rank": rank, "time": time.time()})
        from pyg_sar.distributed.context import report_failure
        report_failure(exc)  # supervised peers stop at once with this error (else a no-op)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # at once: peers blocked on this rank are killed by the launcher


if __name__ == "__main__":
    main()
