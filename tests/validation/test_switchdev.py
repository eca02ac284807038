"""Conformance: the BlueField eswitch mode and IPsec full offload in effect on every DPU (stage offload).

What the bluefleet.dpu.switchdev role sets, read back as a person would: ``devlink -j dev eswitch show`` and
``devlink -j port show`` (the eswitch mode of each uplink's device, its representors), ``/etc/mellanox/mlnx-bf.conf``
(``IPSEC_FULL_OFFLOAD``) and what the running driver uses (MLNX_OFED's compat sysfs
``/sys/class/net/<uplink>/compat/devlink/ipsec_mode``, ``full`` or ``none``). A file that says yes while the driver
still runs ``none`` is a failure: the driver restart did not happen.

Expected values: the inventory's ``switchdev_*`` variables, else the role's defaults. Files are read under
the card root (``preflight_fs_root``, else ``bluefleet_fs_root``, else ``/``: tests/fleet_roots.py), as the role does.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._devlink import parse_eswitch, parse_port
from ansible_collections.bluefleet.dpu.plugins.modules.ipsec_offload import file_value
from fleet_roots import card_root

pytestmark = pytest.mark.stage("offload")

DEFAULTS = yaml.safe_load((Path(__file__).resolve().parents[2] / "roles/switchdev/defaults/main.yml").read_text())
FIX = "fix: {var} / playbooks/offload.yml (bluefleet.dpu.switchdev)"


def want(node, var: str):
    return node.vars.get(var, DEFAULTS[var])


def fs_root(node) -> str:
    """switchdev_fs_root: the card root (tests/fleet_roots.py)."""
    return card_root(node.vars)


def _ok(node, cmd: str, what: str) -> str:
    res = node.read(cmd)
    assert res.rc == 0, (f"{node.name}: `{cmd}` failed (rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; "
                         f"cannot read {what}. Fix: install iproute2 devlink (the twin: `dpusim env`)")
    return res.stdout


def uplink_devices(node) -> dict[str, str]:
    """netdev -> devlink device handle, for the netdevs the role manages."""
    ports = parse_port(_ok(node, "devlink -j port show", "the devlink ports"))["ports"]
    by_netdev = {p["netdev"]: p["device"] for p in ports.values() if p.get("netdev")}
    out = {}
    for netdev in want(node, "switchdev_netdevs"):
        assert netdev in by_netdev, (f"{node.name}: netdev {netdev} is not a devlink port (devlink ports: "
                                     f"{', '.join(sorted(by_netdev))}); {FIX.format(var='switchdev_netdevs')}")
        out[netdev] = by_netdev[netdev]
    return out


def _require_enabled(dpu) -> None:
    if not want(dpu, "switchdev_enabled"):
        pytest.skip(f"not applicable: {dpu.name} sets switchdev_enabled false (the switchdev role leaves the eswitch "
                    "and IPsec mode as they are)")


def test_eswitch_mode(dpu):
    _require_enabled(dpu)
    expected = want(dpu, "switchdev_mode")
    eswitches = parse_eswitch(_ok(dpu, "devlink -j dev eswitch show", "the eswitch modes"))["devices"]
    for netdev, handle in uplink_devices(dpu).items():
        found = eswitches.get(handle, {}).get("mode")
        assert found == expected, (f"{dpu.name}: eswitch of {handle} ({netdev}) is {found}, expected {expected}; "
                                   f"{FIX.format(var='switchdev_mode')}")
        for key in ("inline_mode", "encap_mode"):
            value = want(dpu, "switchdev_" + key)
            if value is not None:
                got = eswitches[handle].get(key)
                assert got == value, (f"{dpu.name}: eswitch {key} of {handle} ({netdev}) is {got}, expected {value}; "
                                      f"{FIX.format(var='switchdev_' + key)}")


def test_switchdev_has_representors(dpu):
    """In switchdev mode the device of each uplink shows its host PF representor (flavour pcipf)."""
    _require_enabled(dpu)
    if want(dpu, "switchdev_mode") != "switchdev":
        pytest.skip(f"not applicable: {dpu.name} asks for eswitch mode {want(dpu, 'switchdev_mode')} "
                    "(switchdev_mode), which has no representors")
    ports = parse_port(_ok(dpu, "devlink -j port show", "the devlink ports"))["ports"]
    for netdev, handle in uplink_devices(dpu).items():
        reps = sorted(p["netdev"] for p in ports.values() if p["device"] == handle and p.get("flavour") == "pcipf")
        assert reps, (f"{dpu.name}: {handle} ({netdev}) has no host PF representor (devlink port flavour pcipf): "
                      f"the eswitch is not in switchdev mode or the host PF is gone; "
                      f"{FIX.format(var='switchdev_mode')}")


def test_ipsec_full_offload_set_and_in_effect(dpu):
    _require_enabled(dpu)
    enabled = bool(want(dpu, "switchdev_ipsec_full_offload"))
    root = fs_root(dpu)
    path = root + "/etc/mellanox/mlnx-bf.conf"
    text = _ok(dpu, "cat " + shlex.quote(path), "mlnx-bf.conf")
    in_file = file_value(text)
    word = {True: "yes", False: "no"}
    assert in_file == enabled, (f"{dpu.name}: IPSEC_FULL_OFFLOAD in {path} is {word[in_file]}, expected "
                                f"{word[enabled]}; {FIX.format(var='switchdev_ipsec_full_offload')}")
    mode = "full" if enabled else "none"
    for netdev in want(dpu, "switchdev_netdevs"):
        sysfs = f"{root}/sys/class/net/{netdev}/compat/devlink/ipsec_mode"
        res = dpu.run("cat " + shlex.quote(sysfs))
        assert res.rc == 0, (f"{dpu.name}: cannot read {sysfs} (rc={res.rc}): the driver does not show its IPsec "
                             f"mode for {netdev}; is this a BlueField Arm with the MLNX_OFED / DOCA driver?")
        running = res.stdout.strip()
        assert running == mode, (
            f"{dpu.name}: {netdev} ipsec_mode is {running}, expected {mode} (mlnx-bf.conf says "
            f"IPSEC_FULL_OFFLOAD={word[in_file]}): the driver restart is pending; fix: /etc/init.d/openibd restart, "
            f"which playbooks/offload.yml (bluefleet.dpu.switchdev) runs when the setting changes")
