"""Shared pytest setup: make the repository's ``pyg_sar`` importable without installing it."""
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
