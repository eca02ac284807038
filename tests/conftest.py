"""Make ``ansible_collections.bluefleet.dpu`` importable in every test (the repository root is the collection)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bluefleet._collection import ensure_importable  # noqa: E402

ensure_importable()
