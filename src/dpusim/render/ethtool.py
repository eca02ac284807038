"""ethtool ``-k`` / ``-K`` / ``-i`` renderers and the feature-change rules.

Where the layout comes from:
- ``-k``: the corpus has only ``| grep esp`` lines on mlx5 (corpus/ethtool/*-k-grep-esp-*: ``name: on``,
  ``on [fixed]``, ``off [requested on]``). The full listing (legacy group lines first, their members indented by
  one TAB, then the remaining features in kernel bit order) was checked against a real capture of
  ``ethtool -k lo`` (ethtool 6.1, kernel 6.18, Debian 12 container on the development machine, 2026-12-02).
  A full mlx5 listing is a known corpus gap: the twin's per-netdev feature VALUES are a model, not a capture.
- ``-K`` errors and the ``Actual changes:`` report: same real ethtool 6.1 on that machine
  (``Could not change any device features`` on stderr, rc 1; ``Actual changes:`` on stdout;
  ``netlink error: bit name not found (offset N)`` / ``netlink error: Operation not supported`` rc 92).
- ``-i``: corpus/ethtool/bf3-host-ethtool-i-rhel94-aarch64 (verbatim, trailing blank after
  ``expansion-rom-version:``).
"""

from __future__ import annotations

# Legacy groups as ethtool prints them (name, members in kernel order). A group with one member is printed as one
# line under the group name with that member's suffix; a group with several prints "name: on|off" then the members.
LEGACY_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rx-checksumming", ("rx-checksum",)),
    ("tx-checksumming", ("tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6", "tx-checksum-fcoe-crc",
                         "tx-checksum-sctp")),
    ("scatter-gather", ("tx-scatter-gather", "tx-scatter-gather-fraglist")),
    ("tcp-segmentation-offload", ("tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation",
                                  "tx-tcp6-segmentation", "tx-tcp-accecn-segmentation")),
    ("generic-segmentation-offload", ("tx-generic-segmentation",)),
    ("generic-receive-offload", ("rx-gro",)),
    ("large-receive-offload", ("rx-lro",)),
    ("rx-vlan-offload", ("rx-vlan-hw-parse",)),
    ("tx-vlan-offload", ("tx-vlan-hw-insert",)),
    ("ntuple-filters", ("rx-ntuple-filter",)),
    ("receive-hashing", ("rx-hashing",)),
)

# Short option names ethtool -K accepts for the legacy groups.
LEGACY_SHORT = {"rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
                "tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
                "gro": "generic-receive-offload", "lro": "large-receive-offload", "rxvlan": "rx-vlan-offload",
                "txvlan": "tx-vlan-offload", "ntuple": "ntuple-filters", "rxhash": "receive-hashing"}

# Kernel feature bit order (netdev_features_strings) of the features ethtool shows, as printed by the capture above.
KERNEL_ORDER: tuple[str, ...] = (
    "tx-scatter-gather", "tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6", "highdma",
    "tx-scatter-gather-fraglist", "tx-vlan-hw-insert", "rx-vlan-hw-parse", "rx-vlan-filter", "vlan-challenged",
    "tx-generic-segmentation", "rx-gro", "rx-lro", "tx-tcp-segmentation", "tx-gso-robust", "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation", "tx-fcoe-segmentation", "tx-gre-segmentation",
    "tx-gre-csum-segmentation", "tx-ipxip4-segmentation", "tx-ipxip6-segmentation", "tx-udp_tnl-segmentation",
    "tx-udp_tnl-csum-segmentation", "tx-gso-partial", "tx-tunnel-remcsum-segmentation", "tx-sctp-segmentation",
    "tx-esp-segmentation", "tx-udp-segmentation", "tx-gso-list", "tx-tcp-accecn-segmentation",
    "tx-checksum-fcoe-crc", "tx-checksum-sctp", "rx-ntuple-filter", "rx-hashing", "rx-checksum", "tx-nocache-copy",
    "loopback", "rx-fcs", "rx-all", "tx-vlan-stag-hw-insert", "rx-vlan-stag-hw-parse", "rx-vlan-stag-filter",
    "l2-fwd-offload", "hw-tc-offload", "esp-hw-offload", "esp-tx-csum-hw-offload", "rx-udp_tunnel-port-offload",
    "tls-hw-tx-offload", "tls-hw-rx-offload", "rx-gro-hw", "tls-hw-record", "rx-gro-list", "macsec-hw-offload",
    "rx-udp-gro-forwarding", "hsr-tag-ins-offload", "hsr-tag-rm-offload", "hsr-fwd-offload", "hsr-dup-offload",
)

_GROUPED = {m for _, members in LEGACY_GROUPS for m in members}


class FeatureError(Exception):
    """A -K request ethtool itself rejects; ``stderr`` and ``rc`` are what the real tool gives."""

    def __init__(self, stderr: str, rc: int, stdout: str = ""):
        super().__init__(stderr)
        self.stderr = stderr
        self.rc = rc
        self.stdout = stdout


def _suffix(feat: dict) -> str:
    if feat.get("fixed"):
        return " [fixed]"
    wanted = feat.get("requested")
    if wanted is not None and bool(wanted) != bool(feat["active"]):
        return f" [requested {'on' if wanted else 'off'}]"
    return ""


def _onoff(value: bool) -> str:
    return "on" if value else "off"


def features(ifname: str, feats: dict[str, dict]) -> str:
    """``ethtool -k IF``. feats: name -> ``{"active": bool, "fixed": bool, "requested"?: bool}``; names absent
    from ``feats`` are features this kernel/netdev does not have and are not printed."""
    out = [f"Features for {ifname}:"]
    for group, members in LEGACY_GROUPS:
        present = [m for m in members if m in feats]
        if not present:
            continue
        if len(members) == 1:
            f = feats[present[0]]
            out.append(f"{group}: {_onoff(f['active'])}{_suffix(f)}")
            continue
        out.append(f"{group}: {_onoff(any(feats[m]['active'] for m in present))}")
        for m in present:
            out.append(f"\t{m}: {_onoff(feats[m]['active'])}{_suffix(feats[m])}")
    for name in KERNEL_ORDER:
        if name in feats and name not in _GROUPED:
            out.append(f"{name}: {_onoff(feats[name]['active'])}{_suffix(feats[name])}")
    return "".join(line + "\n" for line in out)


def _nl_attr_len(payload: int) -> int:
    return (4 + payload + 3) & ~3


def apply_changes(ifname: str, feats: dict[str, dict], requests: list[tuple[str, bool]]) -> tuple[dict, str, str, int]:
    """Apply ``ethtool -K`` requests to a copy of ``feats``.

    Returns ``(new_feats, stdout, stderr, rc)``. Unknown names fail like ethtool's netlink path (the offset is the
    position of the offending name attribute in the request message, computed the same way the kernel does).
    """
    expanded: list[tuple[str, bool, bool]] = []  # (feature, wanted, via_legacy)
    offset = 20 + 4 + _nl_attr_len(len(ifname) + 1) + 8 + 4 + 4  # nlmsghdr+genl, header nest, dev name, flags, nests
    for name, wanted in requests:
        group = LEGACY_SHORT.get(name, name)
        members = dict(LEGACY_GROUPS).get(group)
        if members is not None:
            expanded += [(m, wanted, True) for m in members if m in feats]
        elif name in feats:
            expanded.append((name, wanted, False))
        else:
            return feats, "", (f"netlink error: bit name not found (offset {offset + 4})\n"
                               "netlink error: Operation not supported\n"), 92
        offset += 4 + _nl_attr_len(len(name) + 1) + (4 if wanted else 0)
    new = {k: dict(v) for k, v in feats.items()}
    for name, wanted, _ in expanded:
        new[name]["requested"] = wanted
        if not new[name].get("fixed"):
            new[name]["active"] = wanted
    unsatisfied = [n for n, w, _ in expanded if bool(new[n]["active"]) != w]
    changed = [n for n in KERNEL_ORDER if n in feats and bool(feats[n]["active"]) != bool(new[n]["active"])]
    for v in new.values():  # ethtool -k shows [requested ..] only for what the driver keeps refusing
        if v.get("requested") is not None and bool(v["requested"]) == bool(v["active"]):
            v.pop("requested")
    if not unsatisfied:
        return new, "", "", 0
    report = ["Actual changes:"]
    for n in KERNEL_ORDER:
        if n in changed or n in unsatisfied:
            f = new[n]
            line = f"{n}: {_onoff(f['active'])}"
            if n in unsatisfied:
                line += f" [requested {_onoff(not f['active'])}]"
            report.append(line)
    stdout = "".join(line + "\n" for line in report)
    if not changed and not any(legacy for _, _, legacy in expanded):
        return new, stdout, "Could not change any device features\n", 1
    return new, stdout, "", 0


def driver_info(info: dict) -> str:
    """``ethtool -i IF``. info: driver, version, firmware_version, expansion_rom_version, bus_info and the
    supports_* yes/no flags."""
    rows = (("driver", info["driver"]), ("version", info["version"]),
            ("firmware-version", info.get("firmware_version", "")),
            ("expansion-rom-version", info.get("expansion_rom_version", "")),
            ("bus-info", info.get("bus_info", "")),
            ("supports-statistics", info.get("supports_statistics", "yes")),
            ("supports-test", info.get("supports_test", "yes")),
            ("supports-eeprom-access", info.get("supports_eeprom_access", "no")),
            ("supports-register-dump", info.get("supports_register_dump", "no")),
            ("supports-priv-flags", info.get("supports_priv_flags", "yes")))
    return "".join(f"{k}: {v}\n" for k, v in rows)


NO_SUCH_DEVICE_K = "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"
NO_SUCH_DEVICE_I = "Cannot get driver information: No such device\n"
