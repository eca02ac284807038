"""Linux-side state of a twin node: what devlink, ethtool, mlnx_qos, the RDMA tools, nvidia-smi and
lspci/lsmod see. Built on ``dpusim.state`` (twin-core's API) without changing it:

- runtime (lost on ``dpusim reboot`` / ``power-cycle``, because twin-core clears ``node.runtime``):
  ``node.runtime["linux"]`` = ``{"eswitch": {pci: {...}}, "params": {pci: {name: {cmode: value}}},
  "modules": {name: {...}}, "cma": {"mlx5_0/1": {"mode": 2, "tos": 0}}}`` and per netdev
  ``node.runtime_for(netdev)`` = ``{"ethtool": {feature: {...}}, "qos": {...}}``.
- persistent: ``node.data["linux"]`` = ``{"gpus": {...}}`` (GPU inventory of a host; ``configure_gpus``) and
  ``{"params_permanent": {pci: {name: value}}}``.
- card-level (shared by the host and the DPU views of one card): ``card.data["linux"]["host_vfs"]`` = VFs enabled
  per PF on the host (the DPU shows their representors ``pfNvfM``).

Defaults (marked where they are a model rather than a capture):
- eswitch after boot: ``switchdev`` on a DPU's Arm (mlnx-bf-ctl sets it at boot), ``legacy`` on a host.
- devlink port indexes follow corpus/devlink/bf-dpu-devlink-port-representors-nova-spec (p0 262143, pf0hpf
  196608, pf0vfN 196609+N; p1 327679, pf1hpf 262144); attributes follow the recent-kernel sample
  ecpf-host-pf-rep-port-function-state (controller 1 / external true for host-facing ports, splittable false).
  SF ports are not listed (their index is not in the corpus).
- GPUs of a host: 8x NVIDIA H100 80GB HBM3, driver 550.127.08 / CUDA 12.4, 700 W cap, 81559 MiB
  (corpus/nvidia-smi/h100-1gpu-550-no-processes); bus ids and CPU affinity are model values.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from dpusim.jsondata import clone

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:  # linux_state is a view over the node model; state imports it (no cycle at run time)
    from typing import Any

    from dpusim.state import Card, Node

MELLANOX = "15b3"

# Features of an mlx5 netdev as the twin models them: (name, active, fixed). NOT from a capture (corpus gap:
# no full `ethtool -k` of mlx5 exists): the set of names follows the kernel list ethtool prints; the values
# follow the mlx5 driver's defaults as far as the corpus shows (esp-* on a crypto-enabled PF, hw-tc-offload off
# until switchdev/TC is used).
MLX5_FEATURES: tuple[tuple[str, bool, bool], ...] = (
    ("rx-checksum", True, False), ("tx-checksum-ipv4", False, True), ("tx-checksum-ip-generic", True, False),
    ("tx-checksum-ipv6", False, True), ("tx-checksum-fcoe-crc", False, True), ("tx-checksum-sctp", False, True),
    ("tx-scatter-gather", True, False), ("tx-scatter-gather-fraglist", False, True),
    ("tx-tcp-segmentation", True, False), ("tx-tcp-ecn-segmentation", False, True),
    ("tx-tcp-mangleid-segmentation", False, False), ("tx-tcp6-segmentation", True, False),
    ("tx-generic-segmentation", True, False), ("rx-gro", True, False), ("rx-lro", False, False),
    ("rx-vlan-hw-parse", True, False), ("tx-vlan-hw-insert", True, False), ("rx-ntuple-filter", False, False),
    ("rx-hashing", True, False), ("highdma", True, True), ("rx-vlan-filter", True, False),
    ("vlan-challenged", False, True), ("tx-gso-robust", False, True), ("tx-fcoe-segmentation", False, True),
    ("tx-gre-segmentation", True, False), ("tx-gre-csum-segmentation", True, False),
    ("tx-ipxip4-segmentation", True, False), ("tx-ipxip6-segmentation", True, False),
    ("tx-udp_tnl-segmentation", True, False), ("tx-udp_tnl-csum-segmentation", True, False),
    ("tx-gso-partial", True, False), ("tx-tunnel-remcsum-segmentation", False, True),
    ("tx-sctp-segmentation", False, True), ("tx-esp-segmentation", True, False), ("tx-udp-segmentation", True, False),
    ("tx-gso-list", False, True), ("tx-nocache-copy", False, False), ("loopback", False, False),
    ("rx-fcs", False, False), ("rx-all", False, False), ("tx-vlan-stag-hw-insert", False, True),
    ("rx-vlan-stag-hw-parse", False, True), ("rx-vlan-stag-filter", False, True), ("l2-fwd-offload", False, True),
    ("hw-tc-offload", False, False), ("esp-hw-offload", True, True), ("esp-tx-csum-hw-offload", True, True),
    ("rx-udp_tunnel-port-offload", True, True), ("tls-hw-tx-offload", False, False),
    ("tls-hw-rx-offload", False, False), ("rx-gro-hw", False, True), ("tls-hw-record", False, True),
    ("rx-gro-list", False, False), ("macsec-hw-offload", False, True), ("rx-udp-gro-forwarding", False, False),
    ("hsr-tag-ins-offload", False, True), ("hsr-tag-rm-offload", False, True), ("hsr-fwd-offload", False, True),
    ("hsr-dup-offload", False, True),
)

# devlink params of an mlx5 PF (name, type, [(cmode, default)]): names/types/cmodes as the corpus shows them
# (mlx5-devlink-monitor-param-new-partial: flow_steering_mode runtime dmfs, enable_roce driverinit true,
# fdb_large_groups driverinit 15, esw_port_metadata, enable_remote_dev_reset generic).
MLX5_PARAMS: tuple[tuple[str, str, list[tuple[str, Any]]], ...] = (
    ("flow_steering_mode", "driver-specific", [("runtime", "dmfs")]),
    ("esw_port_metadata", "driver-specific", [("runtime", True)]),
    ("enable_remote_dev_reset", "generic", [("runtime", True)]),
    ("enable_roce", "generic", [("driverinit", True)]),
    ("fdb_large_groups", "driver-specific", [("driverinit", 15)]),
)
PARAM_CHOICES = {"flow_steering_mode": ("dmfs", "smfs")}

# GPU host defaults (see module doc).
H100 = {"name": "NVIDIA H100 80GB HBM3", "brand": "NVIDIA", "architecture": "Hopper", "mem_total_mib": 81559,
        "mem_reserved_mib": 552, "power_cap_w": 700, "power_w": 75, "temp_c": 26, "pci_device_id": "0x233010DE",
        "vbios": "96.00.99.00.01", "bar1_total_mib": 131072}
DGX_BUSES = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
DEFAULT_GPUS = {"model": "H100", "count": 8, "driver_version": "550.127.08", "cuda_version": "12.4"}

# Kernel modules the twin answers for in lsmod (name, size, holders) in /proc/modules order; sizes from
# corpus/lsmod/nvidia-580-mlx5-fwctl-lsmod-grep (mlx5 stack) and gpu-operator-doc-lsmod-grep-nvidia (nvidia).
MLX5_MODULES = (("mlx5_ib", 561152, []), ("ib_uverbs", 212992, ["mlx5_ib"]),
                ("ib_core", 528384, ["ib_uverbs", "mlx5_ib"]), ("mlx5_core", 3153920, ["mlx5_ib"]),
                ("mlxfw", 36864, ["mlx5_core"]), ("psample", 16384, ["mlx5_core"]), ("tls", 155648, ["mlx5_core"]))
NVIDIA_MODULES = (("nvidia_uvm", 1048576, []), ("nvidia_modeset", 1159168, []),
                  ("nvidia", 39059456, ["nvidia_uvm", "nvidia_modeset"]))
PEERMEM = ("nvidia_peermem", 16384)
HOST_KERNEL = "5.15.0-1063-nvidia"  # model value (no capture); see kernel_release()
PEERMEM_VERSION = "1.1"  # model value for /sys/kernel/mm/memory_peers/nv_mem/version (no capture)


class LinuxStateError(Exception):
    """A request the twin cannot answer; the message names the input and what to do."""


# ----------------------------------------------------------------------------------------------- helpers

def kernel_release(node: Node) -> str:
    if node.role == "dpu":
        return node.data.get("kernel_release", "5.15.0-1060-bluefield")
    # a GPU host's kernel is a model value (the twin never reads the machine it runs on); set it per node with
    # ``node.data["kernel_release"]``. Ubuntu 22.04's HWE kernel, as DGX OS 6 ships it.
    return node.data.get("kernel_release", HOST_KERNEL)


def linux_runtime(node: Node) -> dict[str, Any]:
    return node.runtime.setdefault("linux", {})


def linux_persistent(node: Node) -> dict[str, Any]:
    return node.data.setdefault("linux", {})


def host_vfs(card: Card) -> list[int]:
    return list(card.data.get("linux", {}).get("host_vfs", [0] * card.profile["ports"]))


def colon_guid(hex16: str) -> str:
    return ":".join(hex16[i:i + 4] for i in range(0, 16, 4))


def function_guid(card: Card, fn_index: int) -> str:
    return "%016x" % (int(card.profile["base_guid"], 16) + fn_index)


# ----------------------------------------------------------------------------------------------- netdevs

def card_netdevs(node: Node) -> list[dict[str, Any]]:
    """Every card netdev this node sees: ``{"name", "card", "fn", "kind" (uplink|hostrep|sf|vfrep|pf),
    "pci", "mac", "rdma"}``."""
    out = []
    for card in node.cards:
        entry = node.card_entry(card)
        prof_side = card.profile.get("dpu", {})
        for i, fn in enumerate(entry["functions"]):
            for name in fn["netdevs"]:
                if node.role != "dpu":
                    kind = "pf"
                elif name == fn["uplink"]:
                    kind = "uplink"
                elif name in prof_side.get("host_reps", []):
                    kind = "hostrep"
                else:
                    kind = "sf"
                out.append({"name": name, "card": card, "fn": i, "kind": kind, "pci": fn["pci"], "mac": fn["mac"],
                            "rdma": fn["rdma"]})
            if node.role == "dpu" and eswitch(node, fn["pci"])["mode"] == "switchdev":
                for vf in range(host_vfs(card)[i] if i < len(host_vfs(card)) else 0):
                    out.append({"name": f"pf{i}vf{vf}", "card": card, "fn": i, "kind": "vfrep", "pci": fn["pci"],
                                "mac": fn["mac"], "rdma": fn["rdma"]})
    return out


def find_netdev(node: Node, name: str) -> dict[str, Any] | None:
    for nd in card_netdevs(node):
        if nd["name"] == name:
            return nd
    return None


# What the twin knows of a netdev beyond the card's catalogue lives in its own root, never in the machine it runs
# on: ``runtime_for(netdev)`` holds ``link`` ("up"/"down"), ``mtu``, ``mac`` and ``ipv4`` (["a.b.c.d/len", ...]).
# They are written by the twin's own ``ip`` when a change it passes to the real iproute2 succeeds (tools/ip.py),
# and by ``dpusim netdev set`` (the lab tells the twin what Docker gave its veths). Like every runtime setting
# they are lost on a reboot.

def link_up(node: Node, name: str) -> bool:
    return _netdev_runtime(node, name).get("link") != "down"


def netdev_mtu(node: Node, name: str) -> int:
    twin = _twin_sysfs_mtu(node, name)
    if twin is not None:
        return twin
    return int(_netdev_runtime(node, name).get("mtu", BOOT_MTU))


def netdev_mac(node: Node, nd: dict[str, Any]) -> str:
    return _netdev_runtime(node, nd["name"]).get("mac") or nd["mac"]


def netdev_ipv4(node: Node, name: str) -> list[str]:
    """IPv4 addresses (without prefix length) the twin holds for that netdev."""
    return [a.split("/", 1)[0] for a in _netdev_runtime(node, name).get("ipv4", [])]


def set_netdev(node: Node, name: str, *, link: str | None = None, mtu: int | None = None,
               mac: str | None = None, ipv4_add: list[str] | None = None, ipv4_del: list[str] | None = None,
               ipv4_flush: bool = False) -> dict[str, Any]:
    """Record a netdev change in the twin's root (only for netdevs of this node's cards); returns the record."""
    if find_netdev(node, name) is None:
        raise LinuxStateError("%s is not a netdev of this node's card(s): the twin keeps no state for it" % name)
    rt = node.runtime_for(name)
    if link is not None:
        rt["link"] = link
    if mtu is not None:
        rt["mtu"] = int(mtu)
        sysfs = net_sysfs_dir(node, name) / "mtu"
        if sysfs.exists():  # one value, as on Linux: /sys/class/net/<if>/mtu is what `ip link set mtu` set
            sysfs.write_text("%d\n" % int(mtu))
    if mac is not None:
        rt["mac"] = mac.lower()
    addrs = [] if ipv4_flush else list(rt.get("ipv4", []))
    for a in ipv4_add or []:
        if a not in addrs:
            addrs.append(a)
    for a in ipv4_del or []:
        addrs = [x for x in addrs if x != a and x.split("/", 1)[0] != a.split("/", 1)[0]]
    if addrs or "ipv4" in rt:
        rt["ipv4"] = addrs
    return dict(rt)


# ----------------------------------------------------------------------------------------------- ethtool

def ethtool_features(node: Node, name: str) -> dict[str, dict[str, Any]]:
    saved = node.runtime_for(name).get("ethtool")
    if saved is not None:
        return clone(saved)
    feats = {n: {"active": a, "fixed": f} for n, a, f in MLX5_FEATURES}
    nd = find_netdev(node, name)
    if nd is not None and nd["kind"] in ("hostrep", "vfrep", "sf"):
        for n in ("esp-hw-offload", "esp-tx-csum-hw-offload", "tx-esp-segmentation"):
            feats[n] = {"active": False, "fixed": True}
    if nd is not None and node.role == "dpu" and eswitch(node, nd["pci"])["mode"] == "switchdev":
        feats["hw-tc-offload"] = {"active": True, "fixed": False}  # mlx5 switchdev netdevs start with TC offload on
    return feats


def set_ethtool_features(node: Node, name: str, feats: dict[str, dict[str, Any]]) -> None:
    node.runtime_for(name)["ethtool"] = feats


# ----------------------------------------------------------------------------------------------- devlink

def eswitch(node: Node, pci: str) -> dict[str, str]:
    saved = linux_runtime(node).get("eswitch", {}).get(pci)
    if saved is not None:
        return dict(saved)
    mode = "switchdev" if node.role == "dpu" else "legacy"
    return {"mode": mode, "inline_mode": "none", "encap_mode": "basic"}


def set_eswitch(node: Node, pci: str, values: dict[str, str]) -> None:
    cur = eswitch(node, pci)
    cur.update(values)
    linux_runtime(node).setdefault("eswitch", {})[pci] = cur


def devlink_params(node: Node, pci: str) -> list[dict[str, Any]]:
    rt = linux_runtime(node).get("params", {}).get(pci, {})
    perm = linux_persistent(node).get("params_permanent", {}).get(pci, {})
    out = []
    for name, ptype, values in MLX5_PARAMS:
        vals = []
        for cmode, default in values:
            value = rt.get(name, {}).get(cmode, default) if cmode != "permanent" else perm.get(name, default)
            vals.append({"cmode": cmode, "value": value})
        out.append({"name": name, "type": ptype, "values": vals})
    return out


def set_devlink_param(node: Node, pci: str, name: str, cmode: str, value: Any) -> None:
    if cmode == "permanent":
        linux_persistent(node).setdefault("params_permanent", {}).setdefault(pci, {})[name] = value
    else:
        linux_runtime(node).setdefault("params", {}).setdefault(pci, {}).setdefault(name, {})[cmode] = value


def devlink_ports(node: Node) -> list[dict[str, Any]]:
    """``devlink port show`` data for every function of every card on this node."""
    ports = []
    for card in node.cards:
        entry = node.card_entry(card)
        side = card.profile.get("dpu", {})
        for i, fn in enumerate(entry["functions"]):
            handle = "pci/" + fn["pci"]
            base = (3 + i) << 16
            mode = eswitch(node, fn["pci"])["mode"]
            if node.role != "dpu":
                # a host PF: only its uplink port (vhca 0 -> index 65535); VF representors are not modelled
                ports.append({"handle": f"{handle}/65535", "type": "eth", "netdev": fn["uplink"],
                              "flavour": "physical", "port": i, "splittable": False})
                continue
            ports.append({"handle": f"{handle}/{base + 65535}", "type": "eth", "netdev": fn["uplink"],
                          "flavour": "physical", "port": i, "splittable": False})
            if mode != "switchdev":
                continue
            hostrep = side.get("host_reps", [])[i] if i < len(side.get("host_reps", [])) else None
            if hostrep:
                fstate = linux_runtime(node).get("port_fn_state", {}).get(f"{handle}/{base}", "active")
                ports.append({"handle": f"{handle}/{base}", "type": "eth", "netdev": hostrep, "flavour": "pcipf",
                              "controller": 1, "pfnum": i, "external": True, "splittable": False,
                              "function": {"hw_addr": fn["mac"], "state": fstate,
                                           "opstate": "attached" if fstate == "active" else "detached",
                                           "roce": "enable", "max_io_eqs": 120}})
            vfs = host_vfs(card)
            for vf in range(vfs[i] if i < len(vfs) else 0):
                ports.append({"handle": f"{handle}/{base + 1 + vf}", "type": "eth", "netdev": f"pf{i}vf{vf}",
                              "flavour": "pcivf", "controller": 1, "pfnum": i, "vfnum": vf, "external": True,
                              "splittable": False, "function": {"hw_addr": "00:00:00:00:00:00", "roce": "enable"}})
    return ports


def devlink_info(node: Node) -> list[dict[str, Any]]:
    out = []
    for card in node.cards:
        entry = node.card_entry(card)
        fw = card.data["firmware"]
        stored = fw["banks"][fw["active_bank"]]["version"]
        for fn in entry["functions"]:
            out.append({"handle": "pci/" + fn["pci"], "driver": "mlx5_core",
                        "serial_number": card.profile.get("serial_number"),
                        "board.serial_number": card.profile.get("board_serial_number"),
                        "versions": {"fixed": {"fw.psid": fw["running"]["psid"]},
                                     "running": {"fw.version": fw["running"]["version"],
                                                 "fw": fw["running"]["version"]},
                                     "stored": {"fw.version": stored, "fw": stored}}})
    return out


# ----------------------------------------------------------------------------------------------- QoS / RDMA CM

def qos(node: Node, name: str) -> dict[str, Any]:
    """mlnx_qos state of a netdev. Boot defaults: ETS as the mlx5 driver initialises it (every TC vendor TSA with
    100 %, priority 0 on TC 1 and priority 1 on TC 0, mlx5e_ets_init); DCBX OS controlled; trust pcp; buffer
    sizes, cable length 7 (fixture-tabs-pcp) are model values."""
    saved = _netdev_runtime(node, name).get("qos")
    if saved is not None:
        return clone(saved)
    return {"dcbx": "os", "trust": "pcp", "app_table": [], "buffer_size": [262016, 0, 0, 0, 0, 0, 0, 0],
            "max_buffer_size": 2097152, "buffer_error": False, "cable_len": 7, "pfc": [0] * 8,
            "prio2buffer": [0] * 8, "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7], "tsa": ["vendor"] * 8,
            "tc_bw": [100] * 8, "ratelimit": [0] * 8}


def _netdev_runtime(node: Node, name: str) -> dict[str, Any]:
    """The runtime dict of a netdev for reading (``node.runtime_for`` would create it: a read must not write)."""
    return node.runtime.get("netdevs", {}).get(name, {})


def set_qos(node: Node, name: str, q: dict[str, Any]) -> None:
    node.runtime_for(name)["qos"] = q


def cma(node: Node, ibdev: str, port: int) -> dict[str, int]:
    return dict(linux_runtime(node).get("cma", {}).get(f"{ibdev}/{port}", {"mode": 2, "tos": 0}))


def set_cma(node: Node, ibdev: str, port: int, values: dict[str, int]) -> None:
    cur = cma(node, ibdev, port)
    cur.update(values)
    linux_runtime(node).setdefault("cma", {})[f"{ibdev}/{port}"] = cur


# ----------------------------------------------------------------------------------------------- netdev sysfs

# The per-netdev sysfs files a RoCE setup writes, kept under the twin root (``$DPUSIM_ROOT/sys/class/net/<if>/``):
# ``mtu`` and, on the mlx5 PF/uplink netdevs, the DCQCN switches ``ecn/roce_np/enable/<prio>`` and
# ``ecn/roce_rp/enable/<prio>`` plus ``ecn/roce_np/cnp_dscp`` (mlx5 ``en/ecn`` sysfs; files hold one number).
# Boot values are a model (no capture of them in the corpus): MTU 1500, ECN off on every priority (conservative:
# a role must set it to pass), CNP DSCP 48. Like every runtime setting they are lost on a reboot: the marker
# ``runtime["linux"]["net_sysfs"]`` goes with the runtime, and the next write-open of the node (any twin tool)
# writes the boot values again. The maximum MTU of a port is ``max_mtu`` of the card's profile (default 9978,
# the mlx5 ``maxmtu`` of corpus ip/cx6-ip-d-link-vf-rep-ovs-slave); a file holding more reads as the old value.
NET_SYSFS_MARK = "net_sysfs"
ECN_PROTOS = ("roce_np", "roce_rp")
BOOT_MTU = 1500
BOOT_CNP_DSCP = 48
DEFAULT_MAX_MTU = 9978


def net_sysfs_dir(node: Node, name: str) -> Path:
    return node.root / "sys" / "class" / "net" / name


def max_mtu(card: Card) -> int:
    return int(card.profile.get("max_mtu", DEFAULT_MAX_MTU))


def _write_boot_sysfs(node: Node, nd: dict[str, Any]) -> None:
    d = net_sysfs_dir(node, nd["name"])
    d.mkdir(parents=True, exist_ok=True)
    (d / "mtu").write_text("%d\n" % BOOT_MTU)
    if nd["kind"] in ("pf", "uplink"):
        for proto in ECN_PROTOS:
            en = d / "ecn" / proto / "enable"
            en.mkdir(parents=True, exist_ok=True)
            for prio in range(8):
                (en / str(prio)).write_text("0\n")
        (d / "ecn" / "roce_np" / "cnp_dscp").write_text("%d\n" % BOOT_CNP_DSCP)


def sync_net_sysfs(node: Node) -> bool:
    """Boot values for the netdev sysfs files after a boot (runtime without the marker), and for netdevs that
    appeared since (VF representors). True when something was written."""
    if not node.cards:
        return False
    rt = linux_runtime(node)
    fresh = not rt.get(NET_SYSFS_MARK)
    wrote = False  # only the files named above are rewritten: other sysfs files of a netdev are not ours
    for nd in card_netdevs(node):
        if fresh or not (net_sysfs_dir(node, nd["name"]) / "mtu").exists():
            _write_boot_sysfs(node, nd)
            wrote = True
    rt[NET_SYSFS_MARK] = True
    return wrote or fresh


def _twin_sysfs_mtu(node: Node, name: str) -> int | None:
    path = net_sysfs_dir(node, name) / "mtu"
    if not linux_runtime(node).get(NET_SYSFS_MARK) or not path.exists():
        return None
    try:
        value = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    nd = find_netdev(node, name)
    if nd is not None and not 68 <= value <= max_mtu(nd["card"]):
        return None  # the kernel refuses such a write (EINVAL); the twin reads it as not written
    return value


# ----------------------------------------------------------------------------------------------- RDMA devices

def rdma_ports(node: Node) -> list[dict[str, Any]]:
    """One entry per RDMA device port: ``{"ibdev", "port", "netdev", "card", "fn", "pci", "mac"}``."""
    out = []
    for card in node.cards:
        entry = node.card_entry(card)
        for i, fn in enumerate(entry["functions"]):
            out.append({"ibdev": fn["rdma"], "port": 1, "netdev": fn["uplink"], "card": card, "fn": i,
                        "pci": fn["pci"], "mac": fn["mac"]})
    return out


def gid_from_ipv6(addr: ipaddress.IPv6Address) -> str:
    h = addr.packed.hex()  # not .exploded: Python 3.13 writes an IPv4-mapped address with its dotted quad
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


def link_local_gid(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = bytes([0xfe, 0x80, 0, 0, 0, 0, 0, 0, b[0], b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]])
    return gid_from_ipv6(ipaddress.IPv6Address(eui))


def gids(node: Node, port: dict[str, Any]) -> list[tuple[int, str, str]]:
    """The RoCE GID table of a port: ``[(index, gid, "v1"|"v2")]``: link-local from the MAC, then each IPv4
    address (``::ffff:a.b.c.d``), each as a RoCE v1 and a v2 entry, like mlx5 fills it."""
    nd = {"name": port["netdev"], "mac": port["mac"]}
    addrs = [link_local_gid(netdev_mac(node, nd))]
    v4 = netdev_ipv4(node, port["netdev"])
    addrs += [gid_from_ipv6(ipaddress.IPv6Address("::ffff:" + a)) for a in v4]
    out = []
    for gid in addrs:
        out.append((len(out), gid, "v1"))
        out.append((len(out), gid, "v2"))
    return out


# ----------------------------------------------------------------------------------------------- modules / sysfs

def modules(node: Node) -> dict[str, Any]:
    return linux_runtime(node).setdefault("modules", {})


def peermem_sysfs(node: Node) -> Path:
    return node.root / "sys/kernel/mm/memory_peers/nv_mem/version"


def load_peermem(node: Node) -> None:
    modules(node)["nvidia_peermem"] = {"loaded": True}
    path = peermem_sysfs(node)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PEERMEM_VERSION + "\n")


def unload_peermem(node: Node) -> None:
    modules(node).pop("nvidia_peermem", None)
    path = peermem_sysfs(node)
    if path.exists():
        path.unlink()


def sync_sysfs(node: Node) -> None:
    """Remove the twin's sysfs files of modules that a reboot unloaded."""
    if "nvidia_peermem" not in modules(node) and peermem_sysfs(node).exists():
        peermem_sysfs(node).unlink()


# ----------------------------------------------------------------------------------------------- PCIe ACS

# A GPU host's PCIe switch downstream ports, one above each GPU and each card (bus of the endpoint - 1, device 0);
# model values. ACS capability and the boot value of ACS Control as the root ports of the fixture
# lspci/lkml-lspci-vvv-acs-root-ports show them (ACSCap SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+
# EgressCtrl- DirectTrans+; ACSCtl SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+, firmware enabled). ACS Control is
# runtime state: a reboot restores the firmware value (node.runtime).
ACS_CAP_WORD = 0x5F
ACS_CTL_BOOT = 0x1D
ACS_OFFSET = "2a0"
BRIDGE_LSPCI = ("PCI bridge", "0604", "Broadcom / LSI", "1000", "PEX890xx PCIe Gen 5 Switch", "c030", "b0")


def pcie_bridges(node: Node) -> list[dict[str, Any]]:
    """The bridges above the host's GPUs and cards: ``{"address", "below"}`` (below: the endpoint's address)."""
    if node.role != "host":
        return []
    endpoints = ["0000:" + g["bus_id"][9:].lower() for g in gpus(node)]
    for card in node.cards:
        endpoints.append(node.card_entry(card)["functions"][0]["pci"])
    out = []
    for ep in endpoints:
        domain, bus = ep.split(":")[0], int(ep.split(":")[1], 16)
        out.append({"address": "%s:%02x:00.0" % (domain, bus - 1), "below": ep})
    return out


def acs_ctl(node: Node, address: str) -> int:
    return int(linux_runtime(node).get("acs", {}).get(address, ACS_CTL_BOOT))


def set_acs_ctl(node: Node, address: str, word: int) -> None:
    linux_runtime(node).setdefault("acs", {})[address] = word & 0xFFFF


# ----------------------------------------------------------------------------------------------- GPUs

def configure_gpus(node: Node, count: int, driver_version: str | None = None,
                   cuda_version: str | None = None) -> None:
    """Set the GPU inventory of a host node (persistent). ``count`` 0 means no NVIDIA GPU."""
    if node.role != "host":
        raise LinuxStateError(f"dpusim: node {node.root} is a {node.role}; GPUs belong to a host node")
    if not 0 <= count <= len(DGX_BUSES):
        raise LinuxStateError(f"dpusim: GPU count {count} out of range 0..{len(DGX_BUSES)}")
    cfg = dict(DEFAULT_GPUS, count=count)
    if driver_version:
        cfg["driver_version"] = driver_version
    if cuda_version:
        cfg["cuda_version"] = cuda_version
    linux_persistent(node)["gpus"] = cfg


def gpu_config(node: Node) -> dict[str, Any]:
    if node.role != "host":
        return dict(DEFAULT_GPUS, count=0)
    return dict(linux_persistent(node).get("gpus", DEFAULT_GPUS))


def gpus(node: Node) -> list[dict[str, Any]]:
    cfg = gpu_config(node)
    out = []
    for i in range(cfg["count"]):
        g = dict(H100)
        g.update({"index": i, "persistence": "On", "bus_id": f"00000000:{DGX_BUSES[i]}:00.0", "disp_a": "Off",
                  "ecc": "0", "fan": "N/A", "perf": "P0", "mem_used_mib": 1, "util_pct": 0,
                  "compute_mode": "Default", "mig": "Disabled", "numa": 0 if i < cfg["count"] / 2 else 1,
                  "serial": "%013d" % (1654922000000 + i),
                  "uuid": "GPU-%08x-0000-4000-8000-%012x" % (0x5a100000 + i, i)})
        out.append(g)
    return out
