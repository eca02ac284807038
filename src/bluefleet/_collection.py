"""Make the collection importable as ``ansible_collections.bluefleet.dpu`` from the command line.

The repository root is the collection. ``make venv`` links it at
``.collections/ansible_collections/bluefleet/dpu``; when that link is missing (a copy
of the source without the venv step) one is made under the user's cache folder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def collection_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "galaxy.yml").is_file() and (parent / "plugins").is_dir():
            return parent
    raise RuntimeError("cannot find the bluefleet.dpu collection (galaxy.yml) above %s" % here)


def ensure_importable() -> None:
    try:
        import ansible_collections.bluefleet.dpu.plugins.module_utils  # noqa: F401
        return
    except ImportError:
        pass
    root = collection_root()
    base = root / ".collections"
    link = base / "ansible_collections" / "bluefleet" / "dpu"
    if not link.exists():
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bluefleet" / "collections"
        link = base / "ansible_collections" / "bluefleet" / "dpu"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and link.resolve() != root.resolve():
            link.unlink()  # a link another checkout made: this process must import this checkout's code
        if not link.exists():
            link.symlink_to(root)
    sys.path.insert(0, str(base))
    for name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.")]:
        del sys.modules[name]
