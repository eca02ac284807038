# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.nccl_env``: the NCCL settings of a GPU host, derived from the RoCE fact and the
GPU-NIC affinity so that NCCL uses the same NICs, GID and traffic class that the fabric stage configured.

Sources for the derivations (facts, not copied text):
- ``NCCL_IB_TC`` is the traffic class NCCL puts in the GRH of its RoCE QPs (NVIDIA/nccl
  src/transport/net_ib: ``NCCL_PARAM(IbTc, "IB_TC", ...)`` sets ``grh.traffic_class``). In RoCE v2 the
  traffic class is the IP header's ToS byte: DSCP in bits 7..2, ECN in bits 1..0 (RFC 2474, RFC 3168).
  So TC = DSCP << 2 | ECN bits; the ECN bits default to 0 (the NIC marks ECT itself when ECN is on).
- ``NCCL_IB_HCA``: a leading ``=`` makes NCCL match the names exactly instead of as prefixes (``mlx5_1``
  would otherwise also match ``mlx5_10``); ``name:port`` selects one port (NCCL environment variable docs).
- ``NCCL_NET_GDR_LEVEL`` takes NCCL's path types (NVIDIA/nccl src/graph/topo.cc ``topoPathTypeStr``:
  LOC NVL NVB C2C PIX PXB PXN PHB SYS). nvidia-smi's ``NODE`` (several host bridges within one NUMA
  node) has no NCCL word of its own; NCCL classes such a path as ``PHB``. The level is the farthest
  link between a GPU and its affine NIC, so GPUDirect RDMA is allowed for every affine pair and no further.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# nvidia-smi topo link word -> NCCL path type (see the module docstring); nearest first.
SMI_TO_NCCL = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}
GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
KEYS = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_NET_GDR_LEVEL", "NCCL_SOCKET_IFNAME")


def _fail(msg):
    raise AnsibleFilterError("nccl_env: %s" % msg)


def _int(value, name, low, high):
    if isinstance(value, bool) or value is None:
        _fail("%s must be an integer %d..%d, got %r" % (name, low, high, value))
    try:
        number = int(str(value), 10)
    except ValueError:
        _fail("%s must be an integer %d..%d, got %r" % (name, low, high, value))
    if not low <= number <= high:
        _fail("%s must be %d..%d, got %d" % (name, low, high, number))
    return number


def _names(value, name):
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        _fail("%s must be a list of names, got %r" % (name, value))
    return [v.strip() for v in value]


def _affine(affinity):
    """[(gpu, device, link)] in GPU order from ``{GPU0: {nic, device, link}}`` (null entries skipped)."""
    if affinity is None:
        return []
    if not isinstance(affinity, dict):
        _fail("the affinity must be a dict GPU -> {nic, device, link} (bluefleet_gpu_nic_affinity), got %r"
              % (affinity,))
    out = []
    for gpu in sorted(affinity, key=lambda g: (len(str(g)), str(g))):
        entry = affinity[gpu]
        if entry is None:
            continue
        if not isinstance(entry, dict) or not entry.get("device"):
            _fail("affinity of %s names no NIC device (%r); gather it with bluefleet.dpu.gpu_info" % (gpu, entry))
        link = entry.get("link")
        if link not in SMI_TO_NCCL:
            _fail("affinity of %s: link %r is not one of %s" % (gpu, link, ", ".join(SMI_TO_NCCL)))
        out.append((str(gpu), entry["device"], link))
    return out


def _extra(extra):
    """The role's nccl_extra: NCCL_* names to values, checked here with the rest of the settings."""
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        _fail("nccl_extra must map NCCL_* names to values, got %r" % (extra,))
    bad = [key for key in extra if not (isinstance(key, str) and re.fullmatch(r"NCCL_[A-Z0-9_]+", key))]
    if bad:
        _fail("nccl_extra must map NCCL_* names to values, got %s among %r"
              % (", ".join(repr(key) for key in bad), sorted(map(str, extra))))
    return dict(extra)


def nccl_env(roce, affinity=None, hca=None, port=1, socket_ifname=None, gdr_level=None, ecn_bits=0, extra=None):
    """NCCL_* settings (strings) from the RoCE fact, the GPU-NIC affinity and overrides."""
    extras = _extra(extra)
    if not isinstance(roce, dict):
        _fail("the input must be the RoCE fact bluefleet_roce (a dict), got %r" % (roce,))
    for key in ("dscp", "gid_index"):
        if roce.get(key) is None:
            _fail("bluefleet_roce has no %s: run the RoCE QoS play (playbooks/fabric.yml) first" % key)
    dscp = _int(roce["dscp"], "bluefleet_roce.dscp", 0, 63)
    gid_index = _int(roce["gid_index"], "bluefleet_roce.gid_index", 0, 255)
    ecn = _int(ecn_bits, "ecn_bits", 0, 3)
    port = _int(port, "port", 1, 255)
    tc = dscp << 2 | ecn
    for key in ("tos", "traffic_class"):
        if roce.get(key) is not None:
            other = _int(roce[key], "bluefleet_roce.%s" % key, 0, 255)
            if other >> 2 != dscp:
                _fail("bluefleet_roce.%s %d carries DSCP %d but bluefleet_roce.dscp is %d: make them agree "
                      "(ToS = DSCP << 2)" % (key, other, other >> 2, dscp))
    ibdevs = _names(roce.get("ibdevs"), "bluefleet_roce.ibdevs")
    netdevs = _names(roce.get("netdevs"), "bluefleet_roce.netdevs")
    if netdevs and len(netdevs) != len(ibdevs):
        _fail("bluefleet_roce.ibdevs (%d) and netdevs (%d) must be parallel lists" % (len(ibdevs), len(netdevs)))
    netdev_of = dict(zip(ibdevs, netdevs, strict=False))
    affine = _affine(affinity)
    known = set(ibdevs) | {dev for _g, dev, _l in affine}

    chosen = _names(hca, "hca")
    if chosen:
        unknown = [d for d in chosen if d not in known]
        if unknown:
            _fail("hca names %s, not a RoCE NIC of this host (known: %s)"
                  % (", ".join(unknown), ", ".join(sorted(known)) or "none"))
    else:
        for _g, dev, _l in affine:
            if dev not in chosen:
                chosen.append(dev)
        if not chosen:
            chosen = list(ibdevs)
    if not chosen:
        _fail("no NIC for NCCL: bluefleet_roce.ibdevs is empty and no GPU has an affine NIC")
    if ibdevs:
        outside = [d for d in chosen if d not in ibdevs]
        if outside:
            _fail("NIC %s is used by the GPUs but not configured for RoCE (bluefleet_roce.ibdevs: %s): "
                  "add it to the RoCE QoS play's devices" % (", ".join(outside), ", ".join(ibdevs)))

    if gdr_level is None:
        links = [SMI_TO_NCCL[link] for _g, dev, link in affine if dev in chosen]
        level = max(links, key=GDR_LEVELS.index) if links else "PHB"
    else:
        level = str(gdr_level).upper()
        if level not in GDR_LEVELS:
            _fail("gdr_level must be one of %s, got %r" % (", ".join(GDR_LEVELS), gdr_level))

    if not socket_ifname:
        ifnames = [netdev_of[d] for d in chosen if d in netdev_of]
        if not ifnames:
            _fail("socket_ifname is not given and bluefleet_roce.netdevs names no interface of %s"
                  % ", ".join(chosen))
        socket = "=" + ",".join(ifnames)
    else:
        socket = ",".join(_names(socket_ifname, "socket_ifname"))

    return {
        "NCCL_IB_HCA": "=" + ",".join("%s:%d" % (d, port) for d in chosen),
        "NCCL_IB_GID_INDEX": str(gid_index),
        "NCCL_IB_TC": str(tc),
        "NCCL_NET_GDR_LEVEL": level,
        "NCCL_SOCKET_IFNAME": socket,
    } | extras


class FilterModule:
    def filters(self):
        return {"nccl_env": nccl_env}
