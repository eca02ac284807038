"""pci_acs: ordered argv against a real lspci -vvv excerpt, unit file under fs_root, check/diff, bad input.

Tool outputs: the parser fixture lspci/lkml-lspci-vvv-acs-root-ports (a real, author-edited ``lspci -vvvs``: a host
bridge without ACS and two root ports with ACS Control 0x1d); after ``setpci ... =0000`` the same text with the
ACSCtl flags all ``-`` (the value pciutils prints for a zero register). setpci prints nothing when it writes.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._pci_acs import unit_text
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import pci_acs
from fake_tools import fixture_text

ON = fixture_text("lspci", "lkml-lspci-vvv-acs-root-ports")
OFF_LINE = "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
OFF = "\n".join(("\t\t" + OFF_LINE) if line.strip().startswith("ACSCtl:") else line for line in ON.split("\n"))
ONE_OFF = OFF[:OFF.index("00:01.2")] + ON[ON.index("00:01.2"):]  # 00:01.1 off, 00:01.2 on
TWO_OFF = ON[:ON.index("00:01.2")] + OFF[OFF.index("00:01.2"):]  # 00:01.1 on, 00:01.2 off
LSPCI = ["lspci", "-D", "-vvv"]
VERSION = ["lspci", "--version"]
B1, B2 = "0000:00:01.1", "0000:00:01.2"


class Sequence:
    def __init__(self, steps):
        self.steps = list(steps)
        self.cmd = []

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        assert self.steps, "unexpected command %r" % (argv,)
        want, rc, out = self.steps.pop(0)
        assert list(argv) == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, "" if rc == 0 else "setpci: Unable to write\n")


def _set(slot):
    return ["setpci", "-s", slot, "ECAP_ACS+6.w=0000"]


def _unit(root):
    return root / "etc/systemd/system/bluefleet-pci-acs.service"


def test_disables_every_bridge_and_persists(run_module, tmp_path):
    seq = Sequence([
        (LSPCI, 0, ON), (_set(B1), 0, ""), (_set(B2), 0, ""), (LSPCI, 0, OFF), (VERSION, 0, "lspci version 3.9.0\n"),
    ])
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path)}, seq)
    assert not failed, res
    assert res["cmd"] == [LSPCI, _set(B1), _set(B2), LSPCI, VERSION]
    assert res["changed"] and res["changed_bridges"] == [B1, B2]
    assert res["bridges"] == {B1: "0000", B2: "0000"}
    unit = _unit(tmp_path).read_text()
    assert "ExecStart=/usr/bin/setpci -s 0000:00:01.1 ECAP_ACS+6.w=0000\n" in unit
    assert "ExecStart=/usr/bin/setpci -s 0000:00:01.2 ECAP_ACS+6.w=0000\n" in unit
    assert "0000:00:01.0" not in unit  # the host bridge has no ACS capability
    assert res["diff"]["before"]["acs_ctl"] == {B1: "001d", B2: "001d"}


def test_noop_when_off_and_unit_current(run_module, tmp_path):
    _unit(tmp_path).parent.mkdir(parents=True)
    _unit(tmp_path).write_text(unit_text([B1, B2], "/usr/bin/setpci"))
    seq = Sequence([(LSPCI, 0, OFF), (VERSION, 0, "lspci version 3.9.0\n")])
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path)}, seq)
    assert not failed and not res["changed"] and res["cmd"] == [LSPCI, VERSION]


def test_check_mode_changes_nothing(run_module, tmp_path):
    seq = Sequence([(LSPCI, 0, ONE_OFF), (VERSION, 0, "")])
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path)}, seq, check_mode=True)
    assert not failed and res["changed"] and res["changed_bridges"] == [B2]
    assert not _unit(tmp_path).exists() and res["cmd"] == [LSPCI, VERSION]


def test_named_bridge_only_and_no_persist(run_module, tmp_path):
    seq = Sequence([(LSPCI, 0, ON), (_set(B2), 0, ""), (LSPCI, 0, TWO_OFF), (VERSION, 0, "")])
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path), "bridges": ["00:01.2"], "persist": False}, seq)
    assert not failed, res
    assert res["changed_bridges"] == [B2] and res["bridges"] == {B2: "0000"} and res["unit_path"] is None
    assert not _unit(tmp_path).exists()


def test_unknown_or_non_bridge_fails_before_any_change(run_module, tmp_path):
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path), "bridges": ["00:09.0"]},
                             Sequence([(LSPCI, 0, ON)]))
    assert failed and "00:09.0 is not a PCI device of this host (bridges with ACS: 0000:00:01.1, 0000:00:01.2)" \
        in res["msg"]
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path), "bridges": ["00:01.0"]},
                             Sequence([(LSPCI, 0, ON)]))
    assert failed and "00:01.0 (Host bridge) is not a PCI bridge with ACS" in res["msg"]
    assert not _unit(tmp_path).exists()


def test_setpci_failure_and_read_back(run_module, tmp_path):
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path)}, Sequence([(LSPCI, 0, ON), (_set(B1), 1, "")]))
    assert failed and res["msg"].startswith("disable PCIe ACS on 0000:00:01.1 with setpci failed:")
    assert "run it as root" in res["msg"]
    seq = Sequence([(LSPCI, 0, ON), (_set(B1), 0, ""), (_set(B2), 0, ""), (LSPCI, 0, ON)])
    failed, res = run_module(pci_acs, {"fs_root": str(tmp_path)}, seq)
    assert failed and "ACS control still on after setpci on 0000:00:01.1, 0000:00:01.2" in res["msg"]
