# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Finding and reading the cards on a machine, shared by the modules.

- Discovery from ``mst status -v`` (parsed by ``_mst``): ``read_mst()`` runs and parses it,
  ``only_card()`` picks the one card (mst device without its ``.N`` function suffix, else the PCI
  address) or fails with the list, ``group_by_card()`` groups PCI functions into cards by PCI device.
- Side detection: the Arm side of a BlueField sees the host PF representors ``pfNhpf``
  (``side_of()``); everything else is a host.
- Reading one card: ``query_nvconfig()`` (``mlxconfig -d DEV -e q``, its device block) and
  ``flint_versions()`` (``flint -d DEV q``: flashed and running firmware).
- ``Card``: the one device handle of the collection (fw_reset and nic_firmware use it).

- Which program: MFT names (``mlxconfig``, ``flint``, ``mlxfwreset``, ``mlxprivhost``) or Debian's mstflint
  names (``mstconfig``, ``mstflint``, ``mstfwreset``, ``mstprivhost``), ``pick_tool()``. mstflint's tools open a
  device through mtcr_ul, which takes a PCI address or an RDMA device and refuses an MST device file
  ("Unable to parse device name", mstflint mtcr_ul/mtcr_ul_com.c): ``check_device()`` says so before running.

Errors are ``_tooling.ToolError`` with the command that explains them. No AnsibleModule import.

Each function imports the parser it runs when it runs it: every module imports this file, few run every tool (dpu_info
uses only the helpers), and a module run imports and compiles every file it imports, afresh each run.
"""

from __future__ import annotations

import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, parse_output, run_tool

MST_STATUS_ARGV = ("mst", "status", "-v")

# MFT program -> the same program as Debian's mstflint package names it.
MSTFLINT_NAME = {"mlxconfig": "mstconfig", "flint": "mstflint", "mlxfwreset": "mstfwreset",
                 "mlxprivhost": "mstprivhost"}
MSTFLINT_TOOLS = tuple(MSTFLINT_NAME.values())
INSTALL_HINT = ("; install NVIDIA MFT (mlxconfig, flint, mlxfwreset, mst) or Debian/Ubuntu's mstflint package "
                "(mstconfig, mstflint, mstfwreset, mstprivhost; it has no mst), or put the tool on PATH of the "
                "task's environment")
_MST_DEVICE_RE = LazyPattern(r"^(?:/dev/mst/)?mt\d+_pci(?:conf|cr)\d+(?:\.\d+)?$")

_FUNCTION_SUFFIX_RE = LazyPattern(r"\.\d+$")
_HOST_REP_RE = LazyPattern(r"^pf\d+hpf$")
_BDF_SHORT_RE = LazyPattern(r"^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def side_of(netdevs):
    """``dpu`` when one of ``netdevs`` is a host PF representor (``pf0hpf``), else ``host``."""
    return "dpu" if any(_HOST_REP_RE.match(name) for name in netdevs) else "host"


def known(value):
    """mst prints ``NA`` in the DEVICE_TYPE and MST columns when the mst driver is not loaded."""
    return bool(value) and value != "NA"


def full_bdf(pci):
    """``03:00.0`` -> ``0000:03:00.0`` (devlink handles carry the domain)."""
    if pci and _BDF_SHORT_RE.match(pci):
        return "0000:" + pci.lower()
    return pci.lower() if pci else pci


def pci_device(pci):
    """``0000:37:00.4`` / ``37:00.4`` -> ``0000:37:00`` (the card the function belongs to)."""
    return full_bdf(pci).rsplit(".", 1)[0]


def read_mst(runner, missing_hint=""):
    """Run and parse ``mst status -v`` to find a card; returns ``(functions, result)``."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mst import parse_mst_status

    result = run_tool(runner, list(MST_STATUS_ARGV), "find the card with mst status -v", missing_hint=missing_hint)
    return parse_output(parse_mst_status, result, "find the card")["devices"], result


def is_mst_device(device):
    """True for an MST device file (``/dev/mst/mt41692_pciconf0``, ``mt4129_pciconf0.1``) as MFT's mst makes."""
    return bool(device) and (device.startswith("/dev/mst/") or bool(_MST_DEVICE_RE.match(device)))


def check_device(tool, device):
    """ToolError when ``tool`` is one of mstflint's programs and ``device`` an MST device file it cannot open."""
    if tool in MSTFLINT_TOOLS and is_mst_device(device):
        mft = next(k for k, v in MSTFLINT_NAME.items() if v == tool)
        raise ToolError("%s cannot open the MST device file %s (mstflint's tools say 'Unable to parse device name'): "
                        "set device to the card's PCI address (0000:03:00.0, as lspci -D -d 15b3: or mst status -v "
                        "prints it), or install MFT and use %s" % (tool, device, mft))


def pick_tool(runner, mft_name):
    """``mft_name`` when it is on PATH, else mstflint's name of it when that is, else ``mft_name`` (whose run
    then fails with the install hint)."""
    if runner.which(mft_name):
        return mft_name
    other = MSTFLINT_NAME.get(mft_name)
    if other and runner.which(other):
        return other
    return mft_name


def card_handles(functions, pci=False):
    """The cards of ``functions`` (rows of ``mst status -v``) as the tools' ``-d`` argument, sorted:
    the mst device without its ``.N`` function suffix, or the PCI address when mst prints ``NA``.
    ``pci``: always the PCI address of the card's first function (for mstflint's tools)."""
    if pci:
        first = {}
        for f in functions:
            if f["pci"]:
                bdf = full_bdf(f["pci"])
                card = pci_device(bdf)
                first[card] = min(first.get(card, bdf), bdf)
        return sorted(first.values())
    return sorted({_FUNCTION_SUFFIX_RE.sub("", f["mst"]) if known(f["mst"]) else f["pci"] for f in functions})


def only_card(functions, result=None, pci=False):
    """The one card of ``functions``; ToolError naming them all when there is not exactly one."""
    cards = card_handles(functions, pci)
    if len(cards) != 1:
        raise ToolError("find the card failed: mst status -v lists %d cards (%s); set the device option"
                        % (len(cards), ", ".join(cards) or "none"), result)
    return cards[0]


def group_by_card(functions):
    """Cards from ``mst status -v`` rows: one card = the PCI functions of one PCI device (domain:bus:device).

    SR-IOV VFs of a ConnectX sit on the same device number (corpus/mst/cx7-mst-status-v-container-ocp.txt).
    Each card: ``mst`` (its first function's mst device, or PCI address when mst prints ``NA``),
    ``device_type``, ``bluefield``, ``pci``, ``numa``, ``functions``, ``netdevs``, ``rdma_devices`` and
    ``psid`` / ``part_number`` / ``description`` (null, filled by later queries); sorted by PCI address.
    """
    cards = {}
    for fn in functions:
        cards.setdefault(pci_device(fn["pci"] or fn["mst"] or ""), []).append(fn)
    devices = []
    for unsorted in cards.values():
        fns = sorted(unsorted, key=lambda f: (full_bdf(f["pci"] or ""), f["mst"] or ""))
        first = next((f for f in fns if known(f["device_type"])), fns[0])
        device_type = first["device_type"] if known(first["device_type"]) else None
        handle = first["mst"] if known(first["mst"]) else first["pci"]
        devices.append({
            "mst": handle,
            "device_type": device_type,
            "bluefield": bool(device_type and device_type.lower().startswith("bluefield")),
            "pci": first["pci"],
            "numa": first["numa"],
            "functions": [{"mst": f["mst"] if known(f["mst"]) else None, "pci": f["pci"], "rdma": f["rdma"],
                           "netdevs": list(f["net"]), "numa": f["numa"]} for f in fns],
            "netdevs": [n for f in fns for n in f["net"]],
            "rdma_devices": [f["rdma"] for f in fns if f["rdma"]],
            "psid": None,
            "part_number": None,
            "description": None,
        })
    devices.sort(key=lambda d: full_bdf(d["pci"] or "") or d["mst"])
    return devices


def nvconfig_query_argv(tool, device):
    """``mlxconfig`` / ``mstconfig``: every parameter with default, current and next-boot values."""
    return [tool, "-d", device, "-e", "q"]


def flint_query_argv(tool, device):
    """``flint`` / ``mstflint``: the flashed (and running) firmware of a card."""
    return [tool, "-d", device, "q"]


def query_nvconfig(runner, device, tool="mlxconfig", missing_hint=""):
    """The device block of ``TOOL -d DEVICE -e q`` (``_mlxconfig.parse_mlxconfig_query``) and the result.

    Error lines in the output, or no device block, raise ToolError.
    """
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import parse_mlxconfig_query

    what = "query NV configuration of %s" % device
    check_device(tool, device)
    result = run_tool(runner, nvconfig_query_argv(tool, device), what, missing_hint=missing_hint)
    data = parse_output(parse_mlxconfig_query, result, what)
    if data["errors"] or not data["devices"]:
        raise ToolError("%s failed: %s" % (what, "; ".join(data["errors"]) or "no device block"), result)
    return data["devices"][0], result


def flint_versions(runner, device, what, allow_missing=False, tool="flint"):
    """``{"flashed", "running"}`` from ``TOOL -d DEVICE q`` (``flint`` or ``mstflint``; running = flashed when
    it prints no running line); None when the tool is missing and ``allow_missing``."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._flint import parse_flint_query

    check_device(tool, device)
    result = run_tool(runner, flint_query_argv(tool, device), what, allow_missing=allow_missing)
    if result is None:
        return None
    q = parse_output(parse_flint_query, result, what)
    return {"flashed": q["fw_version"], "running": q["running_fw_version"] or q["fw_version"]}


def image_query_argv(tool, image):
    """``flint -i IMAGE q``: the image's version and PSID."""
    return [tool, "-i", image, "q"]


def burn_argv(tool, device, image, cross_psid=False, downgrade=False):
    """The burn: ``flint``/``mstflint ... -y [--allow_psid_change] burn`` or ``mlxfwmanager``/``mstfwmanager ... -u -y
    [-f]`` (``-f`` lets the firmware manager go down a version)."""
    if tool in ("flint", "mstflint"):
        return [tool, "-d", device, "-i", image, "-y"] + (["--allow_psid_change"] if cross_psid else []) + ["burn"]
    return [tool, "-d", device, "-i", image, "-u", "-y"] + (["-f"] if downgrade else [])


def reset_query_argv(tool, device):
    """The reset-level query command line of mlxfwreset / mstfwreset."""
    return [tool, "-d", device, "q"]


def supported_resets(query):
    """``(level 3 supported, sync 1 supported)`` from a parsed ``mlxfwreset q`` (``parse_mlxfwreset_query``): what
    fw_reset plans with, and dpu_info's ``reset_levels`` reports."""
    level3 = any(e["level"] == 3 and e["supported"] for e in query["levels"])
    sync1 = any(e["id"] == 1 and e["supported"] for e in query["sync"])
    return level3, sync1


def local_netdevs(root="/sys/class/net"):
    """The netdev names of this machine (the side when MFT's mst is not there to say it)."""
    try:
        return sorted(os.listdir(root))
    except OSError:
        return []


class Card:
    """The one handle on a card the modules use: discovery, pending state and reset levels (fw_reset), and the
    firmware query, image check and burn (nic_firmware), all through one shared runner.

    ``device``: the card (PCI address or MST device); ``discover()`` finds it when the user gave none.
    ``query_tool``: ``flint`` or ``mstflint`` for the firmware queries.
    """

    def __init__(self, runner, device=None, query_tool="flint"):
        self.runner = runner
        self.device = device
        self.query_tool = query_tool

    # MFT's programs when installed, else mstflint's (which take a PCI address, never an MST device file)
    @property
    def config_tool(self):
        return pick_tool(self.runner, "mlxconfig")

    @property
    def flint_tool(self):
        return pick_tool(self.runner, "flint")

    @property
    def reset_tool(self):
        return pick_tool(self.runner, "mlxfwreset")

    def discover(self, device, side):
        """``mst status -v`` only when it is needed (no device, or the side to find) and installed."""
        if device and side != "auto":
            return device, side
        if device and not self.runner.which("mst"):
            return device, side_of(local_netdevs())
        hint = "; mst is part of NVIDIA MFT: with mstflint only, set device to the card's PCI address"
        functions, result = read_mst(self.runner, missing_hint=hint)
        if side == "auto":
            side = side_of(n for d in functions for n in d["net"])
        if not device:
            device = only_card(functions, result, pci=self.config_tool != "mlxconfig")
        return device, side

    def pending(self, device):
        """``{"device_type", "bluefield", "mode", "nvconfig": {NAME: (current, next)}, "firmware": {...}}``."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import card_state

        for tool in (self.config_tool, self.flint_tool, self.reset_tool):
            check_device(tool, device)
        dev = query_nvconfig(self.runner, device, self.config_tool, missing_hint=INSTALL_HINT)[0]
        firmware = flint_versions(self.runner, device, "query firmware of %s" % device, allow_missing=True,
                                  tool=self.flint_tool)
        return card_state(dev["device_type"], dev["params"], firmware or {"flashed": None, "running": None})

    def levels(self, device):
        """``(level 3 supported, sync 1 supported)``; both false when mlxfwreset is missing."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxfwreset import parse_mlxfwreset_query

        what = "query reset levels of %s" % device
        result = run_tool(self.runner, reset_query_argv(self.reset_tool, device), what, allow_missing=True)
        if result is None:
            return False, False
        return supported_resets(parse_output(parse_mlxfwreset_query, result, what))

    def run(self, argv, what):
        return run_tool(self.runner, argv, what)

    def parse_query(self, result, what):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._flint import parse_flint_query

        data = parse_output(parse_flint_query, result, what)
        if data["errors"]:
            raise ToolError("%s failed: %s" % (what, data["errors"][0]), result)
        return data

    def image(self, path):
        what = "read firmware image %s with %s" % (path, self.query_tool)
        data = self.parse_query(self.run(image_query_argv(self.query_tool, path), what), what)
        if not data["fw_version"] or not data["psid"]:
            raise ToolError("%s failed: the image query printed no FW Version or PSID" % what)
        return {"version": data["fw_version"], "psid": data["psid"]}

    def state(self):
        what = "query firmware of %s with %s" % (self.device, self.query_tool)
        data = self.parse_query(self.run(flint_query_argv(self.query_tool, self.device), what), what)
        if not data["fw_version"]:
            raise ToolError("%s failed: no FW Version line" % what)
        flashed = data["fw_version"]
        running = data["running_fw_version"] or flashed
        return {"flashed": flashed, "running": running, "psid": data["psid"], "pending": flashed != running}

    def burn(self, tool, image, cross_psid, downgrade):
        """One burn; returns the result. Raises ToolError for any failure the tool reports."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._flint import parse_flint_burn
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxfwmanager import (
            parse_mlxfwmanager_query,
        )

        argv = burn_argv(tool, self.device, image, cross_psid, downgrade)
        what = "burn %s to %s with %s" % (image, self.device, tool)
        result = self.runner.run(argv)
        if result.rc in (130, 137, 143) or (result.rc < 0):
            raise ToolError("%s failed: the burn was interrupted (exit status %d)" % (what, result.rc), result,
                            interrupted=True)
        reason = error_reason(result)
        if reason:
            raise ToolError("%s failed: %s" % (what, reason), result)
        if tool in ("flint", "mstflint"):
            data = parse_output(parse_flint_burn, result, what)
            if not data["ok"]:
                raise ToolError("%s failed: flint did not report every step OK (%s)"
                                % (what, "; ".join(data["errors"] + data["messages"]) or "no steps"), result)
        else:
            data = parse_output(parse_mlxfwmanager_query, result, what)
            if data["errors"]:
                raise ToolError("%s failed: %s" % (what, data["errors"][0]), result)
        return result
