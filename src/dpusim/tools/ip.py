"""Twin ``ip``: the card's view of ``ip xfrm state`` and ``ip xfrm policy``; every other ``ip`` call goes to the
real iproute2 unchanged (like the twin's ethtool wraps the real ethtool).

On a BlueField with IPsec full offload the SAs strongSwan installs live in the kernel and ``ip xfrm state`` shows
them with ``crypto offload parameters: dev p0 dir out mode packet`` (corpus ip-xfrm/). In the lab strongSwan's
kernel-libipsec keeps the SAs in userspace, so the kernel's list is empty. The twin lists what strongSwan itself
reports (``swanctl --list-sas --raw``: the vici message of each CHILD_SA) and adds the offload line when

- the card runs with IPsec full offload (``dpusim.driver``: ``IPSEC_FULL_OFFLOAD`` loaded by the mlx5 driver),
- the uplink's eswitch is in switchdev mode, and
- the CHILD_SA's configuration asks for ``hw_offload = packet`` (read from the swanctl configuration,
  ``/etc/swanctl/swanctl.conf`` and its ``conf.d/*.conf``; ``DPUSIM_SWANCTL_DIR`` points elsewhere in tests).

strongSwan's version: the lab runs the real swanctl and charon (the image's), so the twin has no swanctl front-end
of its own; it claims the version of the card's OS instead (``dpu_os.strongswan`` of the profile or card, 5.9.10 for
the BlueField images; ``DPUSIM_STRONGSWAN_VERSION`` overrides). A charon older than 5.9.10 discards a connection whose
CHILD_SA asks for ``hw_offload = packet`` or ``crypto`` (real 5.9.8: "invalid value for: hw_offload, config
discarded", ``swanctl --load-all`` exits 22; tests/realtools), so no SA of that connection is listed then.

Without strongSwan (a simulated node on the local connection), no SA is listed. Forms answered: ``ip [-4]
xfrm|x state|s|policy|p [list|show]``; anything else (other options, ``add``, ``flush`` ...) is passed through.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dpusim import driver, state
from dpusim import linux_state as ls
from dpusim.render import xfrm as render
from dpusim.tools._common import emit, passthrough, run_tool

NAMES = ("ip",)

_TOKEN = re.compile(r"\{|\}|\[[^\]]*\]|[^\s{}=]+=(?:\[[^\]]*\]|[^\s{}]*)|[^\s{}]+")


def _matches(word: str, full: str) -> bool:
    """iproute2's ``matches()``: ``word`` is a non-empty prefix of ``full``."""
    return bool(word) and full.startswith(word)


def _xfrm_request(argv: list[str]) -> str | None:
    """``state`` or ``policy`` for a plain listing, else None (passed through)."""
    args = [a for a in argv if a != "-4"]
    if len(args) < 2 or not _matches(args[0], "xfrm") or args[0].startswith("-"):
        return None
    obj = "state" if _matches(args[1], "state") else "policy" if _matches(args[1], "policy") else None
    if obj is None:
        return None
    rest = args[2:]
    if not rest or (len(rest) == 1 and any(_matches(rest[0], w) for w in ("list", "show", "lst"))):
        return obj
    return None


def parse_vici_raw(text: str) -> dict:
    """``swanctl --raw`` output (``name event {k=v k=[a b] sect {...}}`` per message) as nested dicts;
    the messages of one name are merged (their sections are IKE_SA names)."""
    root: dict = {}
    stack = [root]
    pending: str | None = None
    for token in _TOKEN.findall(text):
        if token == "{":
            section: dict = {}
            stack[-1][pending or ""] = section
            stack.append(section)
            pending = None
        elif token == "}":
            if len(stack) > 1:
                stack.pop()
        elif "=" in token:
            key, value = token.split("=", 1)
            if value.startswith("["):
                stack[-1][key] = value[1:-1].split()
            else:
                stack[-1][key] = value
        else:
            pending = token if pending is None else pending + " " + token
    return root


def _settings(text: str) -> dict:
    """strongSwan settings syntax (swanctl.conf): ``name { ... }``, ``key = value``, ``#`` comments."""
    root: dict = {}
    stack = [root]
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        while line:
            if line.startswith("}"):
                if len(stack) > 1:
                    stack.pop()
                line = line[1:].strip()
                continue
            m = re.match(r"^([^\s{}=]+)\s*\{(.*)$", line)
            if m:
                section: dict = {}
                stack[-1][m.group(1)] = section
                stack.append(section)
                line = m.group(2).strip()
                continue
            m = re.match(r"^([^\s{}=]+)\s*=\s*([^{}]*?)\s*(\}.*)?$", line)
            if m:
                stack[-1][m.group(1)] = m.group(2)
                line = (m.group(3) or "").strip()
                continue
            break
    return root


def child_offload_modes(conf_dir: Path) -> dict[str, str]:
    """CHILD_SA name -> its ``hw_offload`` value from the swanctl configuration (``no`` when unset)."""
    files = [conf_dir / "swanctl.conf", *sorted((conf_dir / "conf.d").glob("*.conf"))]
    modes: dict[str, str] = {}
    for path in files:
        try:
            conf = _settings(path.read_text())
        except OSError:
            continue
        for conn in (conf.get("connections") or {}).values():
            if not isinstance(conn, dict):
                continue
            for name, child in (conn.get("children") or {}).items():
                if isinstance(child, dict):
                    modes[name] = str(child.get("hw_offload", "no")).strip('"').lower()
    return modes


PACKET_OFFLOAD_SINCE = (5, 9, 10)  # the first strongSwan that accepts hw_offload = packet / crypto


def strongswan_version(node: state.Node) -> tuple[int, ...] | None:
    """The strongSwan version the node's OS claims (``(5, 9, 10)``), or None when it claims none."""
    text = os.environ.get("DPUSIM_STRONGSWAN_VERSION")
    if not text and node.cards:
        card = node.card()
        text = card.data.get("dpu_os", {}).get("strongswan") or card.profile.get("dpu_os", {}).get("strongswan")
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(x) for x in m.groups()) if m else None


def discarded_children(conf_dir: Path, version: tuple[int, ...] | None) -> set[str]:
    """CHILD_SA names of the connections a charon of ``version`` discards: older than 5.9.10 it refuses
    ``hw_offload = packet`` / ``crypto`` and drops the whole connection, its other children with it."""
    if version is None or version >= PACKET_OFFLOAD_SINCE:
        return set()
    files = [conf_dir / "swanctl.conf", *sorted((conf_dir / "conf.d").glob("*.conf"))]
    out: set[str] = set()
    for path in files:
        try:
            conf = _settings(path.read_text())
        except OSError:
            continue
        for conn in (conf.get("connections") or {}).values():
            children = (conn.get("children") or {}) if isinstance(conn, dict) else {}
            modes = [str(c.get("hw_offload", "no")).strip('"').lower()
                     for c in children.values() if isinstance(c, dict)]
            if any(mode in ("packet", "crypto") for mode in modes):
                out.update(children)
    return out


def installed_children() -> list[dict]:
    """The INSTALLED CHILD_SAs strongSwan reports, with the IKE_SA's addresses (none without swanctl)."""
    import shutil  # only here: its import (bz2, lzma) would be paid by every ip call

    swanctl = shutil.which("swanctl")
    if swanctl is None:
        return []
    import subprocess  # only where strongSwan is installed (the lab), see dpusim.tools._common.passthrough

    try:
        proc = subprocess.run([swanctl, "--list-sas", "--raw"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    out = []
    for key, ikes in parse_vici_raw(proc.stdout).items():
        if not key.startswith("list-sa event") or not isinstance(ikes, dict):
            continue
        for ike in ikes.values():
            if not isinstance(ike, dict):
                continue
            for child in (ike.get("child-sas") or {}).values():
                if isinstance(child, dict) and child.get("state") == "INSTALLED" and child.get("protocol") == "ESP":
                    out.append({**child, "local": ike.get("local-host"), "remote": ike.get("remote-host")})
    return out


def _offload_dev(node: state.Node) -> str | None:
    """The uplink whose SAs the card would offload, or None when full offload is not in effect."""
    if node.role != "dpu" or driver.loaded(node).get("ipsec_mode") != "full":
        return None
    for nd in ls.card_netdevs(node):
        if nd["kind"] == "uplink" and ls.eswitch(node, nd["pci"])["mode"] == "switchdev":
            return nd["name"]
    return None


def netdev_change(argv: list[str]) -> tuple[str, dict] | None:
    """The card-netdev change an ``ip link set`` / ``ip addr add|del|flush`` makes, as ``(netdev, changes)`` for
    ``linux_state.set_netdev``; None for anything else (listings, other objects, another namespace)."""
    args = list(argv)
    while args and args[0].startswith("-"):
        if args[0] in ("-n", "-netns", "--netns", "-b", "-batch"):
            return None  # another namespace / a batch file: not this node's netdevs
        args.pop(0)
    if len(args) < 3:
        return None
    obj, verb, rest = args[0], args[1], args[2:]
    if _matches(obj, "link") and verb == "set":
        named = rest[0] == "dev" and len(rest) > 1
        name = rest[1] if named else rest[0]
        words = rest[2:] if named else rest[1:]
        change: dict = {}
        for i, word in enumerate(words):
            if word in ("up", "down"):
                change["link"] = word
            elif word == "mtu" and i + 1 < len(words) and words[i + 1].isdigit():
                change["mtu"] = int(words[i + 1])
            elif word in ("address", "addr") and i + 1 < len(words):
                change["mac"] = words[i + 1]
        return (name, change) if change else None
    if obj in ("a", "ad", "addr", "addre", "addres", "address") and verb in ("add", "replace", "del", "delete",
                                                                               "flush"):
        if "dev" not in rest or rest.index("dev") + 1 >= len(rest):
            return None
        name = rest[rest.index("dev") + 1]
        if verb == "flush":
            return name, {"ipv4_flush": True}
        addr = rest[0]
        if ":" in addr or not addr[:1].isdigit():
            return None  # IPv6 or a keyword: the twin records IPv4 only (the RoCE v2 GIDs it derives)
        addr = addr if "/" in addr else addr + "/32"
        return name, {"ipv4_add" if verb in ("add", "replace") else "ipv4_del": [addr]}
    return None


def _passthrough_recorded(argv: list[str]) -> int:
    """Pass ``ip`` to the real iproute2; when it changed a card netdev and succeeded, the twin records it."""
    rc = passthrough("ip", argv)
    change = netdev_change(argv) if rc == 0 else None
    if change is not None:
        try:
            with state.open_node() as node:
                if ls.find_netdev(node, change[0]) is not None:
                    ls.set_netdev(node, change[0], **change[1])
        except state.StateError:
            pass  # no twin here: the real ip did its work, nothing to record
    return rc


def body(argv: list[str], prog: str) -> int:
    what = _xfrm_request(argv)
    if what is None:
        return _passthrough_recorded(argv)
    try:
        with state.open_node() as node:
            dev = _offload_dev(node)
            version = strongswan_version(node)
    except state.StateError:
        return passthrough("ip", argv)
    conf_dir = Path(os.environ.get("DPUSIM_SWANCTL_DIR", "/etc/swanctl"))
    modes = child_offload_modes(conf_dir)
    discarded = discarded_children(conf_dir, version)
    children = [c for c in installed_children() if c.get("name", "") not in discarded]
    for child in children:
        child["offload"] = modes.get(child.get("name", ""), "no") == "packet"
    emit((render.state_records if what == "state" else render.policy_records)(children, dev))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
