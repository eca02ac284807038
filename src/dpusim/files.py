"""Plain files the twin keeps rendered for tools that are read with ``cat``.

* ``CARD_DIR/files/mlnx-release``: the DPU's ``/etc/mlnx-release`` (one line, the bundle release,
  as corpus/bf-release/bf3-mlnx-release-bf-bundle-2.9.2.txt);
* ``CARD_DIR/files/rshim<N>-misc``: a snapshot of ``/dev/rshimN/misc`` (no log consumption);
* node links: ``$DPUSIM_ROOT/etc/mlnx-release`` (DPU role) and ``$DPUSIM_ROOT/dev/rshimN/misc``
  (host role) point at them. A lab image links ``/etc/mlnx-release`` to the first.

Files are refreshed whenever ``state.open_node`` saves a changed card. Writing to the snapshot
does nothing; use ``dpusim rshim write "SW_RESET 1"``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from dpusim import rshim


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if link.is_symlink() and Path(os.readlink(link)) == target:
            return
        link.unlink()
    link.symlink_to(target)


def render_card(node: Any, card: Any) -> None:
    if not card.is_bluefield:
        return
    files = card.dir / "files"
    _write(files / "mlnx-release", card.data["dpu_os"]["release"] + "\n")
    if node.role == "host":
        entry = node.card_entry(card)
        name = Path(entry["rshim"]).name
        _write(files / (name + "-misc"), rshim.render_misc(node, card, consume=False))


def link_node(node: Any) -> None:
    for card in node.cards:
        if not card.is_bluefield:
            continue
        files = card.dir / "files"
        if node.role == "dpu":
            _link(node.root / "etc" / "mlnx-release", files / "mlnx-release")
        else:
            name = Path(node.card_entry(card)["rshim"]).name
            _link(node.root / "dev" / name / "misc", files / (name + "-misc"))
