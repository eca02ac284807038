"""eswitch: exact ordered argv and sysfs writes against recorded devlink outputs.

Tool outputs:
* ``devlink -j dev eswitch show``: the JSON layout of iproute2 devlink.c ``pr_out_eswitch`` as
  shared/corpus/devlink/FORMAT-from-source.md gives it (``{"dev": {HANDLE: {"mode", "inline-mode",
  "encap-mode"}}}``); the values are those of corpus/devlink/cx6-eswitch-show-switchdev.txt.
* ``devlink -j port show``: the FORMAT-from-source JSON keys for the BlueField ports of
  corpus/devlink/bf-dpu-devlink-port-representors-nova-spec.txt (p0 262143, pf0hpf 196608, p1 327679).
* ``devlink dev eswitch set`` prints nothing on success; an error is ``kernel answers: ...`` on stderr, rc 1.
* The VF layout in sysfs (``virtfnN`` links, ``driver`` link, ``drivers/mlx5_core/unbind|bind``) and the order
  unbind -> set -> bind follow the DOCA "OVS-Kernel Hardware Offloads" steps (docs/hardware-facts.md section 3).
"""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import eswitch
from test_fw_reset import Script

PF0 = "pci/0000:03:00.0"
PF1 = "pci/0000:03:00.1"
SHOW = ["devlink", "-j", "dev", "eswitch", "show"]
PORTS = ["devlink", "-j", "port", "show"]
VERSION = (["devlink", "-V"], 0, "devlink utility, iproute2-6.1.0\n", "")


def esw(mode0="switchdev", mode1="switchdev", inline="none", encap="basic"):
    return json.dumps({"dev": {
        PF0: {"mode": mode0, "inline-mode": inline, "encap-mode": encap},
        PF1: {"mode": mode1, "inline-mode": "none", "encap-mode": "basic"}}})


PORT_JSON = json.dumps({"port": {
    PF0 + "/262143": {"type": "eth", "netdev": "p0", "flavour": "physical", "port": 0},
    PF0 + "/196608": {"type": "eth", "netdev": "pf0hpf", "flavour": "pcipf", "pfnum": 0},
    PF1 + "/327679": {"type": "eth", "netdev": "p1", "flavour": "physical", "port": 1}}})


class Runner:
    """Ordered fake runner that also logs into ``events`` (shared with the sysfs writes)."""

    def __init__(self, script, events):
        self.script = script
        self.events = events
        self.cmd = []

    def run(self, argv, timeout=None):
        argv = list(argv)
        self.cmd.append(argv)
        self.events.append(("run", argv))
        assert self.script.steps, "unexpected command %r" % (argv,)
        want, rc, out, err = self.script.steps.pop(0)
        assert argv == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, err, missing=rc == 127)


@pytest.fixture
def events(monkeypatch):
    log = []
    real = eswitch.write_sysfs

    def logged(fs_root, driver, action, bdf):
        log.append((action, driver, bdf))
        return real(fs_root, driver, action, bdf)

    monkeypatch.setattr(eswitch, "write_sysfs", logged)
    return log


def run(monkeypatch, capsys, events, args, steps, check_mode=False):
    script = Script(steps)
    monkeypatch.setattr(eswitch, "ToolRunner", lambda timeout, environ=None: Runner(script, events))
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            eswitch.main()
    result = json.loads(capsys.readouterr().out)
    assert not script.steps, "commands not run: %r" % (script.steps,)
    return result


def make_vfs(root, pf="0000:08:00.0", vfs=("0000:08:00.2", "0000:08:00.3"), bound=(True, True)):
    """A sysfs tree under ``root``: the PF with virtfnN links, VFs with a driver link when bound."""
    devices = root / "sys/bus/pci/devices"
    driver = root / "sys/bus/pci/drivers/mlx5_core"
    driver.mkdir(parents=True)
    (driver / "bind").write_text("")
    (driver / "unbind").write_text("")
    (devices / pf).mkdir(parents=True)
    for index, (vf, is_bound) in enumerate(zip(vfs, bound, strict=True)):
        (devices / vf).mkdir()
        os.symlink("../" + vf, devices / pf / ("virtfn%d" % index))
        if is_bound:
            os.symlink("../../drivers/mlx5_core", devices / vf / "driver")
    return driver


def test_switchdev_to_legacy_by_device(monkeypatch, capsys, events, tmp_path):
    set_argv = ["devlink", "dev", "eswitch", "set", PF0, "mode", "legacy"]
    result = run(monkeypatch, capsys, events, {"device": "03:00.0", "mode": "legacy", "fs_root": str(tmp_path)}, [
        (SHOW, 0, esw(), ""), (set_argv, 0, "", ""), (SHOW, 0, esw(mode0="legacy"), ""), VERSION])
    assert result["changed"] is True
    assert result["device"] == PF0
    assert result["previous"] == {"mode": "switchdev", "inline_mode": "none", "encap_mode": "basic"}
    assert result["eswitch"] == {"mode": "legacy", "inline_mode": "none", "encap_mode": "basic"}
    assert result["diff"]["before"]["mode"] == "switchdev" and result["diff"]["after"]["mode"] == "legacy"
    assert result["vfs"] == [] and events == [("run", SHOW), ("run", set_argv), ("run", SHOW), ("run", VERSION[0])]
    assert result["reset_required"] == "none"
    assert result["tool_version"] == "devlink utility, iproute2-6.1.0"
    assert result["cmd"] == [SHOW, set_argv, SHOW, VERSION[0]]


def test_already_switchdev_is_a_no_op(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"device": "pci/0000:03:00.1", "mode": "switchdev"},
                 [(SHOW, 0, esw(), ""), VERSION])
    assert result["changed"] is False
    assert result["eswitch"] == result["previous"] == {"mode": "switchdev", "inline_mode": "none",
                                                       "encap_mode": "basic"}
    assert result["diff"]["before"] == result["diff"]["after"]


def test_check_mode_reports_and_sets_nothing(monkeypatch, capsys, events, tmp_path):
    make_vfs(tmp_path, pf="0000:03:00.0", vfs=("0000:03:00.2",), bound=(True,))
    result = run(monkeypatch, capsys, events, {"device": "0000:03:00.0", "mode": "legacy", "fs_root": str(tmp_path)},
                 [(SHOW, 0, esw(), ""), VERSION], check_mode=True)
    assert result["changed"] is True
    assert result["eswitch"]["mode"] == "legacy" and result["before"]["mode"] == "switchdev", "check mode predicts"
    assert result["check_mode_prediction"] is True
    assert result["diff"]["after"]["mode"] == "legacy"
    assert result["vfs"] == ["0000:03:00.2"], "check mode names the VFs it would unbind"
    assert [e for e in events if e[0] != "run"] == [], "no sysfs write in check mode"


def test_netdev_is_resolved_to_its_device(monkeypatch, capsys, events):
    set_argv = ["devlink", "dev", "eswitch", "set", PF1, "mode", "legacy"]
    result = run(monkeypatch, capsys, events, {"netdev": "p1", "mode": "legacy"}, [
        (SHOW, 0, esw(), ""), (PORTS, 0, PORT_JSON, ""), (set_argv, 0, "", ""), (SHOW, 0, esw(mode1="legacy"), ""),
        VERSION])
    assert result["changed"] is True and result["device"] == PF1


def test_vfs_are_unbound_before_and_bound_after_the_mode_change(monkeypatch, capsys, events, tmp_path):
    make_vfs(tmp_path, vfs=("0000:08:00.2", "0000:08:00.3", "0000:08:00.4"), bound=(True, False, True))
    pf = "pci/0000:08:00.0"
    show = json.dumps({"dev": {pf: {"mode": "legacy", "inline-mode": "none", "encap-mode": "basic"}}})
    after = show.replace("legacy", "switchdev")
    set_argv = ["devlink", "dev", "eswitch", "set", pf, "mode", "switchdev"]
    result = run(monkeypatch, capsys, events, {"device": "08:00.0", "mode": "switchdev", "fs_root": str(tmp_path)},
                 [(SHOW, 0, show, ""), (set_argv, 0, "", ""), (SHOW, 0, after, ""), VERSION])
    assert result["changed"] is True
    assert result["vfs"] == ["0000:08:00.2", "0000:08:00.4"], "only the bound VFs (08:00.3 has no driver)"
    assert events == [
        ("run", SHOW),
        ("unbind", "mlx5_core", "0000:08:00.2"), ("unbind", "mlx5_core", "0000:08:00.4"),
        ("run", set_argv),
        ("bind", "mlx5_core", "0000:08:00.2"), ("bind", "mlx5_core", "0000:08:00.4"),
        ("run", SHOW), ("run", VERSION[0])]
    assert (tmp_path / "sys/bus/pci/drivers/mlx5_core/bind").read_text() == "0000:08:00.4"


def test_failed_set_rebinds_the_vfs_and_fails(monkeypatch, capsys, events, tmp_path):
    make_vfs(tmp_path, vfs=("0000:08:00.2",), bound=(True,))
    pf = "pci/0000:08:00.0"
    show = json.dumps({"dev": {pf: {"mode": "legacy", "inline-mode": "none", "encap-mode": "basic"}}})
    set_argv = ["devlink", "dev", "eswitch", "set", pf, "mode", "switchdev"]
    result = run(monkeypatch, capsys, events, {"device": "08:00.0", "mode": "switchdev", "fs_root": str(tmp_path)},
                 [(SHOW, 0, show, ""), (set_argv, 1, "", "kernel answers: Operation not supported\n")])
    assert result["failed"] is True
    assert result["msg"].startswith("set eswitch of pci/0000:08:00.0 to switchdev with devlink failed")
    assert "Operation not supported" in result["msg"]
    assert [e for e in events if e[0] != "run"] == [("unbind", "mlx5_core", "0000:08:00.2"),
                                                    ("bind", "mlx5_core", "0000:08:00.2")]


def test_inline_mode_only_keeps_vfs_bound(monkeypatch, capsys, events, tmp_path):
    make_vfs(tmp_path, pf="0000:03:00.0", vfs=("0000:03:00.2",), bound=(True,))
    set_argv = ["devlink", "dev", "eswitch", "set", PF0, "inline-mode", "transport"]
    result = run(monkeypatch, capsys, events, {"device": "03:00.0", "mode": "switchdev", "inline_mode": "transport",
                                               "fs_root": str(tmp_path)},
                 [(SHOW, 0, esw(), ""), (set_argv, 0, "", ""), (SHOW, 0, esw(inline="transport"), ""), VERSION])
    assert result["changed"] is True and result["vfs"] == []
    assert result["eswitch"]["inline_mode"] == "transport"
    assert [e for e in events if e[0] != "run"] == []


def test_read_back_mismatch_fails(monkeypatch, capsys, events):
    set_argv = ["devlink", "dev", "eswitch", "set", PF0, "mode", "legacy"]
    result = run(monkeypatch, capsys, events, {"device": "03:00.0", "mode": "legacy"},
                 [(SHOW, 0, esw(), ""), (set_argv, 0, "", ""), (SHOW, 0, esw(), "")])
    assert result["failed"] is True and "read back" in result["msg"] and "switchdev" in result["msg"]


@pytest.mark.parametrize("device, fragment", [
    ("0000:81:00.0", "no devlink device pci/0000:81:00.0 on this machine (devlink lists: pci/0000:03:00.0, "
                     "pci/0000:03:00.1); check the device option"),
    ("mlx5_0", "device 'mlx5_0' is not a PCI address; give one like 0000:03:00.0"),
])
def test_unknown_device_fails_before_any_change(monkeypatch, capsys, events, device, fragment):
    result = run(monkeypatch, capsys, events, {"device": device, "mode": "legacy"}, [(SHOW, 0, esw(), "")])
    assert result["failed"] is True and fragment in result["msg"]
    assert result["cmd"] == [SHOW]


def test_unknown_netdev_fails_naming_the_ports(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"netdev": "ens9", "mode": "legacy"},
                 [(SHOW, 0, esw(), ""), (PORTS, 0, PORT_JSON, "")])
    assert result["failed"] is True
    assert "netdev 'ens9' is not a port of any devlink device (devlink ports: p0, p1, pf0hpf)" in result["msg"]
    assert result["cmd"] == [SHOW, PORTS]


def test_device_and_netdev_are_exclusive(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"device": "03:00.0", "netdev": "p0", "mode": "legacy"}, [])
    assert result["failed"] is True and "mutually exclusive" in result["msg"]


def test_garbage_output_is_a_clear_error(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"device": "03:00.0", "mode": "legacy"},
                 [(SHOW, 0, "\x00\x01garbage", "")])
    assert result["failed"] is True and result["msg"].startswith("read eswitch modes with devlink failed")


# netdevs: every uplink's device in one run (one read, one port list, the sets, one read back).

def both(mode0, mode1):
    return {"mode": mode0, "inline_mode": "none", "encap_mode": "basic"}, {"mode": mode1, "inline_mode": "none",
                                                                           "encap_mode": "basic"}


def test_netdevs_already_right_is_one_read_and_no_set(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "switchdev"},
                 [(SHOW, 0, esw(), ""), (PORTS, 0, PORT_JSON, ""), VERSION])
    assert result["changed"] is False
    assert result["cmd"] == [SHOW, PORTS, VERSION[0]]
    sw0, sw1 = both("switchdev", "switchdev")
    assert result["eswitches"] == [
        {"device": PF0, "netdevs": ["p0"], "changed": False, "eswitch": sw0, "before": sw0, "vfs": []},
        {"device": PF1, "netdevs": ["p1"], "changed": False, "eswitch": sw1, "before": sw1, "vfs": []}]
    assert result["diff"]["before"] == result["diff"]["after"] == {PF0: sw0, PF1: sw1}


def test_netdevs_sets_each_device_that_differs_then_reads_back_once(monkeypatch, capsys, events, tmp_path):
    make_vfs(tmp_path, pf="0000:03:00.1", vfs=("0000:03:00.3",), bound=(True,))
    set0 = ["devlink", "dev", "eswitch", "set", PF0, "mode", "switchdev"]
    set1 = ["devlink", "dev", "eswitch", "set", PF1, "mode", "switchdev"]
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "switchdev",
                                               "fs_root": str(tmp_path)},
                 [(SHOW, 0, esw(mode0="legacy", mode1="legacy"), ""), (PORTS, 0, PORT_JSON, ""),
                  (set0, 0, "", ""), (set1, 0, "", ""), (SHOW, 0, esw(), ""), VERSION])
    assert result["changed"] is True
    assert events == [("run", SHOW), ("run", PORTS), ("run", set0),
                      ("unbind", "mlx5_core", "0000:03:00.3"), ("run", set1), ("bind", "mlx5_core", "0000:03:00.3"),
                      ("run", SHOW), ("run", VERSION[0])]
    leg0, leg1 = both("legacy", "legacy")
    sw0, sw1 = both("switchdev", "switchdev")
    assert [(e["device"], e["changed"], e["eswitch"], e["before"], e["vfs"]) for e in result["eswitches"]] == [
        (PF0, True, sw0, leg0, []), (PF1, True, sw1, leg1, ["0000:03:00.3"])]
    assert result["before"] == {PF0: leg0, PF1: leg1}
    assert result["vfs"] == ["0000:03:00.3"]
    assert result["diff"] == {"before": {PF0: leg0, PF1: leg1}, "after": {PF0: sw0, PF1: sw1}}


def test_netdevs_only_the_device_that_differs_is_set(monkeypatch, capsys, events):
    set1 = ["devlink", "dev", "eswitch", "set", PF1, "mode", "switchdev"]
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "switchdev"},
                 [(SHOW, 0, esw(mode1="legacy"), ""), (PORTS, 0, PORT_JSON, ""), (set1, 0, "", ""),
                  (SHOW, 0, esw(), ""), VERSION])
    assert result["changed"] is True
    assert [e["changed"] for e in result["eswitches"]] == [False, True]


def test_netdevs_of_one_device_set_it_once(monkeypatch, capsys, events):
    set0 = ["devlink", "dev", "eswitch", "set", PF0, "mode", "switchdev"]
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "pf0hpf"], "mode": "switchdev"},
                 [(SHOW, 0, esw(mode0="legacy"), ""), (PORTS, 0, PORT_JSON, ""), (set0, 0, "", ""),
                  (SHOW, 0, esw(), ""), VERSION])
    assert [(e["device"], e["netdevs"]) for e in result["eswitches"]] == [(PF0, ["p0", "pf0hpf"])]


def test_netdevs_check_mode_predicts_and_sets_nothing(monkeypatch, capsys, events, tmp_path):
    make_vfs(tmp_path, pf="0000:03:00.0", vfs=("0000:03:00.2",), bound=(True,))
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "legacy", "fs_root": str(tmp_path)},
                 [(SHOW, 0, esw(), ""), (PORTS, 0, PORT_JSON, ""), VERSION], check_mode=True)
    assert result["changed"] is True and result["check_mode_prediction"] is True
    assert [(e["changed"], e["eswitch"]["mode"], e["before"]["mode"]) for e in result["eswitches"]] == [
        (True, "legacy", "switchdev"), (True, "legacy", "switchdev")]
    assert result["vfs"] == ["0000:03:00.2"], "check mode names the VFs it would unbind"
    assert result["diff"]["after"][PF0]["mode"] == result["diff"]["after"][PF1]["mode"] == "legacy"
    assert [e for e in events if e[0] != "run"] == [], "no sysfs write in check mode"


def test_netdevs_unknown_ones_fail_all_named_before_any_set(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "ens9", "p1", "ens10"], "mode": "legacy"},
                 [(SHOW, 0, esw(), ""), (PORTS, 0, PORT_JSON, "")])
    assert result["failed"] is True
    assert result["msg"] == ("set eswitch failed: netdev 'ens9' is not a port of any devlink device; netdev 'ens10' "
                             "is not a port of any devlink device (devlink ports: p0, p1, pf0hpf); check the netdevs "
                             "option; nothing was changed")
    assert result["cmd"] == [SHOW, PORTS], "p0 and p1 differ too, yet nothing was set"


def test_netdevs_device_without_an_eswitch_fails_before_any_set(monkeypatch, capsys, events):
    show = json.dumps({"dev": {PF0: {"mode": "legacy", "inline-mode": "none", "encap-mode": "basic"}}})
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "switchdev"},
                 [(SHOW, 0, show, ""), (PORTS, 0, PORT_JSON, "")])
    assert result["failed"] is True
    assert "devlink shows no eswitch for pci/0000:03:00.1 (the device of netdev p1)" in result["msg"]
    assert result["cmd"] == [SHOW, PORTS]


def test_netdevs_failed_second_set_names_the_device_already_set(monkeypatch, capsys, events):
    set0 = ["devlink", "dev", "eswitch", "set", PF0, "mode", "legacy"]
    set1 = ["devlink", "dev", "eswitch", "set", PF1, "mode", "legacy"]
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "legacy"},
                 [(SHOW, 0, esw(), ""), (PORTS, 0, PORT_JSON, ""), (set0, 0, "", ""),
                  (set1, 1, "", "kernel answers: Device or resource busy\n")])
    assert result["failed"] is True
    assert result["msg"].startswith("set eswitch of pci/0000:03:00.1 to legacy with devlink failed")
    assert "Device or resource busy" in result["msg"]
    assert result["msg"].endswith("(already set before it: pci/0000:03:00.0)")


def test_netdevs_read_back_mismatch_fails_naming_the_device(monkeypatch, capsys, events):
    set1 = ["devlink", "dev", "eswitch", "set", PF1, "mode", "switchdev"]
    result = run(monkeypatch, capsys, events, {"netdevs": ["p0", "p1"], "mode": "switchdev"},
                 [(SHOW, 0, esw(mode1="legacy"), ""), (PORTS, 0, PORT_JSON, ""), (set1, 0, "", ""),
                  (SHOW, 0, esw(mode1="legacy"), "")])
    assert result["failed"] is True
    assert result["msg"].startswith("set eswitch of pci/0000:03:00.1 to switchdev with devlink failed: read back")


@pytest.mark.parametrize("args, fragment", [
    ({"netdevs": ["p0"], "netdev": "p1"}, "mutually exclusive"),
    ({"netdevs": ["p0"], "device": "03:00.0"}, "mutually exclusive"),
])
def test_netdevs_excludes_the_single_options(monkeypatch, capsys, events, args, fragment):
    result = run(monkeypatch, capsys, events, dict(args, mode="legacy"), [])
    assert result["failed"] is True and fragment in result["msg"]


def test_empty_netdevs_fails_naming_the_option(monkeypatch, capsys, events):
    result = run(monkeypatch, capsys, events, {"netdevs": [], "mode": "legacy"}, [])
    assert result["failed"] is True and "netdevs is empty" in result["msg"] and result["cmd"] == []
