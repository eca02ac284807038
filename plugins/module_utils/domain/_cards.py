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

- Which program: MFT names (``mlxconfig``, ``flint``, ``mlxfwreset``, ``mlxprivhost``) or Debian's mstflint
  names (``mstconfig``, ``mstflint``, ``mstfwreset``, ``mstprivhost``), ``pick_tool()``. mstflint's tools open a
  device through mtcr_ul, which takes a PCI address or an RDMA device and refuses an MST device file
  ("Unable to parse device name", mstflint mtcr_ul/mtcr_ul_com.c): ``check_device()`` says so before running.

Errors are ``_tooling.ToolError`` with the command that explains them. No AnsibleModule import.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._flint import parse_flint_query
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import parse_mlxconfig_query
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mst import parse_mst_status
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, parse_output, run_tool

MST_STATUS_ARGV = ("mst", "status", "-v")

# MFT program -> the same program as Debian's mstflint package names it.
MSTFLINT_NAME = {"mlxconfig": "mstconfig", "flint": "mstflint", "mlxfwreset": "mstfwreset",
                 "mlxprivhost": "mstprivhost"}
MSTFLINT_TOOLS = tuple(MSTFLINT_NAME.values())
INSTALL_HINT = ("; install NVIDIA MFT (mlxconfig, flint, mlxfwreset, mst) or Debian/Ubuntu's mstflint package "
                "(mstconfig, mstflint, mstfwreset, mstprivhost; it has no mst), or put the tool on PATH of the "
                "task's environment")
_MST_DEVICE_RE = re.compile(r"^(?:/dev/mst/)?mt\d+_pci(?:conf|cr)\d+(?:\.\d+)?$")

_FUNCTION_SUFFIX_RE = re.compile(r"\.\d+$")
_HOST_REP_RE = re.compile(r"^pf\d+hpf$")
_BDF_SHORT_RE = re.compile(r"^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


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
    check_device(tool, device)
    result = run_tool(runner, flint_query_argv(tool, device), what, allow_missing=allow_missing)
    if result is None:
        return None
    q = parse_output(parse_flint_query, result, what)
    return {"flashed": q["fw_version"], "running": q["running_fw_version"] or q["fw_version"]}
