# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Helpers shared by the firmware-side tool modules (not a tool: the name starts with ``_``)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from dpusim import faults, state

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any


class ToolExit(Exception):
    """Stop a tool: print ``message`` (to ``stream``) and exit with ``rc``."""

    def __init__(self, message: str, rc: int = 1, stream: str = "stdout"):
        super().__init__(message)
        self.message = message
        self.rc = rc
        self.stream = stream


def emit(text: str, stream: str = "stdout") -> None:
    out = sys.stdout if stream == "stdout" else sys.stderr
    out.write(text)
    out.flush()


def session_closed(name: str) -> int:
    """The caller's SSH session ends (the node went away under it): OpenSSH's line on stderr (clientloop.c, "Connection
    to %.64s closed by remote host."), and ssh's exit status 255, returned."""
    emit("Connection to %s closed by remote host.\n" % name, "stderr")
    return 255


# mstflint's names of the tools open devices through mtcr_ul (mtcr_ul/mtcr_ul_com.c): a PCI address
# (``bb:dd.f`` / ``dddd:bb:dd.f``), ``pciconf-...``, a sysfs ``config`` / ``resource0`` path or an ib device
# (``mlx5_N``). An MST device file (``/dev/mst/mt4129_pciconf0``, MFT's ``mst start``) is refused. The texts,
# streams and exit statuses below were printed by Debian 12's mstflint 4.21.0+1-1 (``-d /dev/mst/mt4129_pciconf0``
# and ``q`` / ``query``), recorded for issue 18; {dev} is the name given.
MSTFLINT_TOOLS = ("mstflint", "mstconfig", "mstfwreset", "mstprivhost")
MST_NAME_REFUSAL = {
    "mstflint": (1, "-E- Cannot open Device: {dev}. Invalid argument. MFE_CR_ERROR\n",
                 "Unable to parse device name {dev}\nUnable to parse device name {dev}\n"),
    "mstconfig": (3, "-E- Failed to open the device\n", "Unable to parse device name {dev}\n"),
    "mstfwreset": (1, "-E- Failed to Identify Device: {dev}, Unable to parse device name {dev}\nmopen: Invalid "
                      "argument\n.\n", ""),
    "mstprivhost": (1, "-E- Unknown device '{dev}'!\n", ""),
}
_MST_NAME_RE = re.compile(r"^(?:/dev/mst/)?mt\d+_pci(?:conf|cr)\d+(?:\.\d+)?$")


def mst_device_refused(argv: list[str], prog: str) -> str | None:
    """The ``-d`` value that an mstflint tool named ``prog`` cannot parse, or None."""
    if prog not in MSTFLINT_TOOLS:
        return None
    for index, arg in enumerate(argv[:-1]):
        if arg in ("-d", "--device", "--dev"):
            value = argv[index + 1]
            if value.startswith("/dev/mst/") or _MST_NAME_RE.match(value):
                return value
    return None


def run_tool(body, argv: list[str], prog: str) -> int:
    """Run ``body(argv, prog)``; turn ``ToolExit`` into output + exit status."""
    refused = mst_device_refused(argv, prog)
    if refused is not None:
        rc, out, err = MST_NAME_REFUSAL[prog]
        if err:
            emit(err.format(dev=refused), "stderr")
        emit(out.format(dev=refused))
        return rc
    try:
        return int(body(argv, prog) or 0)
    except ToolExit as exc:
        if exc.message:
            emit(exc.message if exc.message.endswith("\n") else exc.message + "\n", exc.stream)
        return exc.rc


def check_arm_up(node: state.Node) -> None:
    """On a DPU node whose Arm OS is down nothing runs: behave like an unreachable machine."""
    if node.role != "dpu":
        return
    for card in node.cards:
        if card.data.get("arm", {}).get("state") != "running":
            raise ToolExit("dpusim: the DPU's Arm OS is not running (%s); nothing can run on it until it boots"
                           % card.data.get("arm", {}).get("state"), rc=255, stream="stderr")


def visible_cards(node: state.Node) -> list[state.Card]:
    """Cards the OS can see (fault ``device_missing`` hides them all)."""
    if faults.active(node, "device_missing") is not None:
        return []
    return list(node.cards)


def _norm_bdf(text: str) -> str:
    text = text.strip().lower()
    if text.startswith("pci/"):
        text = text[4:]
    if re.fullmatch(r"[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", text):
        text = "0000:" + text
    return text


def find_function(node: state.Node, device: str) -> tuple[state.Card, dict[str, Any]] | None:
    """Resolve ``-d DEVICE`` (mst path, mst name, or PCI address) to (card, function view)."""
    want = device.strip()
    for card in visible_cards(node):
        entry = node.card_entry(card)
        for fn in entry["functions"]:
            mst = fn["mst"]
            if want in (mst, mst.rsplit("/", 1)[-1]):
                return card, fn
            if _norm_bdf(want) == _norm_bdf(fn["pci"]):
                return card, fn
    return None


def short_bdf(pci: str) -> str:
    """``0000:e2:00.0`` -> ``e2:00.0`` (as mst status prints it)."""
    return pci[5:] if pci.startswith("0000:") else pci


def pop_flag(argv: list[str], *names: str) -> bool:
    found = False
    for name in names:
        while name in argv:
            argv.remove(name)
            found = True
    return found


def pop_value(argv: list[str], *names: str) -> str | None:
    """Remove ``--name VALUE`` / ``--name=VALUE`` from argv and return VALUE (last one wins)."""
    value = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        matched = False
        for name in names:
            if arg == name:
                if i + 1 >= len(argv):
                    raise ToolExit("-E- Missing argument for %s" % name)
                value = argv[i + 1]
                del argv[i:i + 2]
                matched = True
                break
            if name.startswith("--") and arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
                del argv[i]
                matched = True
                break
        if not matched:
            i += 1
    return value


def privileged_for_write(node: state.Node, card: state.Card) -> bool:
    """A restricted host (mlxprivhost r) cannot write firmware or NV configuration."""
    return not (node.role == "host" and card.is_bluefield and card.data["privhost"]["level"] == "RESTRICTED")


# ------------------------------------------------------------------ the real tools a twin tool passes through to

def own_bin_dir() -> Path | None:
    root = os.environ.get(state.ENV_ROOT)
    return Path(root).resolve() / "bin" if root else None


def real_binary(name: str) -> str | None:
    """Path of the real ``name`` on PATH, skipping the twin's ``$DPUSIM_ROOT/bin`` (and any dpusim bin dir)."""
    own = own_bin_dir()
    parts = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        p = Path(entry).resolve()
        if own is not None and p == own:
            continue
        if (p / ".dpusim-bin").exists():
            continue
        parts.append(str(p))
    if not parts:
        return None
    import shutil  # a passthrough only (the lab): shutil imports bz2 and lzma, paid by every tool call otherwise

    return shutil.which(name, path=os.pathsep.join(parts))


def passthrough(name: str, argv: list[str]) -> int:
    """Run the real ``name`` with ``argv``, inheriting stdio; 127 with a clear message if absent."""
    binary = real_binary(name)
    if binary is None:
        print("%s: command not found (dpusim passes %s through to the real tool, and none is installed)"
              % (name, name), file=sys.stderr)
        return 127
    import subprocess  # only to pass through: a twin tool call starts without it

    return subprocess.call([binary, *argv])
