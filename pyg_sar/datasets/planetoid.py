"""Cora and CiteSeer with the standard Planetoid split, read by PyG's own ``Planetoid`` class
from the raw files shipped in ``pyg_sar/datasets/data/planetoid`` (nothing is downloaded).

PyG writes a ``processed/`` folder next to ``raw/``, so the shipped raw files are copied into a
writable cache first. The copy and PyG's processing happen in a private temporary folder that is
then renamed into place, so ranks starting at the same time never see a half-written folder.
The cache folder name carries a hash of the raw files and the PyG version, so a stale cache from
another PyG release is never read.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from torch_geometric.data import Data

DATA_DIR = Path(__file__).resolve().parent / "data"

# The Planetoid raw files are Python pickles that PyG's reader unpickles; they are checked against
# these digests (of the published files) before PyG reads them.
RAW_SHA256 = {
    "Cora": {
        "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
        "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
        "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
        "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
        "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
        "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
        "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
        "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    },
    "CiteSeer": {
        "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
        "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
        "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
        "ind.citeseer.test.index":
            "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
        "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
        "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
        "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
        "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    },
}

PathLike = str | os.PathLike


def default_cache_dir() -> Path:
    """``$PYG_SAR_CACHE`` if set, else ``~/.cache/pyg_sar``."""
    env = os.environ.get("PYG_SAR_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pyg_sar"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_raw(raw_dir: Path, name: str) -> None:
    for fname, expected in RAW_SHA256[name].items():
        path = raw_dir / fname
        if not path.is_file():
            raise RuntimeError(f"planetoid: raw file {path} is missing")
        actual = _sha256(path)
        if actual != expected:
            raise RuntimeError(f"planetoid: raw file {path} has SHA-256 {actual}, expected "
                               f"{expected}; refusing to let PyG unpickle it")


def _cache_key(name: str) -> str:
    import torch_geometric

    text = name + "|" + torch_geometric.__version__ + "|" + "|".join(
        sorted(RAW_SHA256[name].values()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def prepare_planetoid_root(name: str, root: PathLike | None = None) -> Path:
    """Make sure ``<root>/planetoid/<name>-<key>/<name>/{raw,processed}`` exists and is complete,
    building it atomically if needed, and return the folder to pass as PyG's ``root``.

    Args:
        name: ``"Cora"`` or ``"CiteSeer"``.
        root: cache folder (default: :func:`default_cache_dir`).
    """
    from torch_geometric.datasets import Planetoid

    if name not in RAW_SHA256:
        raise ValueError(f"planetoid: unknown dataset {name!r} (expected one of "
                         f"{sorted(RAW_SHA256)})")
    cache = Path(root).expanduser() if root is not None else default_cache_dir()
    parent = cache / "planetoid"
    final = parent / f"{name}-{_cache_key(name)}"
    if not final.exists():
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-tmp-", dir=parent))
        try:
            shutil.copytree(DATA_DIR / "planetoid" / name / "raw", tmp / name / "raw")
            _check_raw(tmp / name / "raw", name)
            Planetoid(str(tmp), name)  # PyG processes into tmp/<name>/processed
            try:
                os.rename(tmp, final)
            except OSError:
                # Another process installed the folder first: use theirs.
                if not final.exists():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    _check_raw(final / name / "raw", name)
    if not (final / name / "processed").is_dir():
        raise RuntimeError(f"planetoid: cache folder {final} is incomplete (no processed/); "
                           f"delete it and try again")
    return final


def _load(name: str, root: PathLike | None) -> Data:
    from torch_geometric.datasets import Planetoid

    return Planetoid(str(prepare_planetoid_root(name, root)), name)[0]


def cora(root: PathLike | None = None) -> Data:
    """Cora citation graph with the standard Planetoid split (140 / 500 / 1,000 nodes).

    2,708 nodes, 10,556 directed edges (both directions of each citation), 1,433 binary
    bag-of-words features, 7 classes. Data: Planetoid (Yang et al. 2016, MIT licence).

    Args:
        root: writable cache folder (default ``$PYG_SAR_CACHE`` or ``~/.cache/pyg_sar``).
    """
    return _load("Cora", root)


def citeseer(root: PathLike | None = None) -> Data:
    """CiteSeer citation graph with the standard Planetoid split (120 / 500 / 1,000 nodes).

    3,327 nodes, 9,104 directed edges, 3,703 features, 6 classes (Planetoid, MIT licence).

    Args:
        root: writable cache folder (default ``$PYG_SAR_CACHE`` or ``~/.cache/pyg_sar``).
    """
    return _load("CiteSeer", root)


def Planetoid(root: PathLike, name: str, *args, **kwargs):
    """PyG's :class:`torch_geometric.datasets.Planetoid` with PyG's signature, read from the raw
    files shipped with pyg_sar instead of downloaded (Cora and CiteSeer).

    ``from pyg_sar.datasets import Planetoid`` is the one line a PyG script changes to run
    offline. The raw files are checked against their SHA-256 digests and processed by PyG in
    ``<root>/planetoid/<name>-<key>/`` (built atomically, so ranks starting together are safe);
    every other argument (``split``, ``transform``, ...) goes to PyG's class unchanged.

    Args:
        root: writable folder for the processed dataset (PyG's ``root``).
        name: ``"Cora"`` or ``"CiteSeer"`` (any case).
    """
    from torch_geometric.datasets import Planetoid as PyGPlanetoid

    canonical = {k.lower(): k for k in RAW_SHA256}.get(str(name).lower())
    if canonical is None:
        raise ValueError(f"Planetoid: pyg_sar ships {sorted(RAW_SHA256)} (got {name!r}); for "
                         f"other Planetoid datasets use torch_geometric.datasets.Planetoid, "
                         f"which downloads them")
    ready = prepare_planetoid_root(canonical, root)
    return PyGPlanetoid(str(ready), canonical, *args, **kwargs)
