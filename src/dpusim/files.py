"""Plain files the twin keeps rendered for tools that are read with ``cat``.

* ``CARD_DIR/files/mlnx-release``: the DPU's ``/etc/mlnx-release`` (one line, the bundle release,
  as corpus/bf-release/bf3-mlnx-release-bf-bundle-2.9.2.txt);
* ``CARD_DIR/files/rshim<N>-misc``: a snapshot of ``/dev/rshimN/misc`` (no log consumption);
* node links: ``$DPUSIM_ROOT/etc/mlnx-release`` (DPU role) and ``$DPUSIM_ROOT/dev/rshimN/misc``
  (host role) point at them. A lab image links ``/etc/mlnx-release`` to the first.

Files are refreshed whenever ``state.open_node`` saves a changed card. The misc file is also
writable like the real one: ``echo "SW_RESET 1" > $DPUSIM_ROOT/dev/rshim0/misc`` replaces the
snapshot with that line; the next twin call on that root (any tool, ``dpusim rshim cat``)
applies it (``consume_writes``) and renders the snapshot again. ``dpusim rshim write`` applies at once.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from dpusim import rshim

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any


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


def _misc_path(node: Any, card: Any) -> Path:
    return card.dir / "files" / (Path(node.card_entry(card)["rshim"]).name + "-misc")


def render_card(node: Any, card: Any) -> None:
    if not card.is_bluefield:
        return
    files = card.dir / "files"
    _write(files / "mlnx-release", card.data["dpu_os"]["release"] + "\n")
    if node.role == "host":
        path = _misc_path(node, card)
        text = rshim.render_misc(node, card, consume=False)
        _write(path, text)
        import hashlib  # a host's calls only: a DPU's tool calls start without it

        _write(path.with_name(path.name + ".sha256"), hashlib.sha256(text.encode()).hexdigest() + "\n")


def consume_writes(node: Any) -> bool:
    """Apply ``KEY VALUE`` lines written into a host's misc snapshot since it was rendered."""
    applied = False
    if node.role != "host":
        return applied
    import hashlib  # a host's calls only, as in render_card

    for card in node.cards:
        if not card.is_bluefield:
            continue
        path = _misc_path(node, card)
        stamp = path.with_name(path.name + ".sha256")
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            rendered = stamp.read_text().strip()
        except OSError:
            continue
        if hashlib.sha256(text.encode()).hexdigest() == rendered:
            continue
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                rshim.write_misc(node, card, line)
            except rshim.RshimError:
                continue  # the real driver rejects the write (EINVAL); nothing changes
            applied = True
        # mark as consumed even when nothing applied, so the next render replaces the text
        stamp.write_text("consumed\n")
        card.data.setdefault("rshim", {})["misc_writes"] = card.data["rshim"].get("misc_writes", 0) + 1
        applied = True
    return applied


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
