"""bfb_install: exact ordered argv against recorded outputs; preflight refusals, console classification, secrets.

Tool outputs:
* successful ``bfb-install --config``: tests/unit/fixtures/parsers/bfb-install/bf3-bf-bundle-2.7.0-with-bfcfg
  (a real BlueField-3 install, ends on "Installation finished");
* ``bfver`` before: fixtures/parsers/bfver/bf3-bfver-doca291 (a real BlueField-3, bf-bundle-2.9.1-40);
  ``bfver`` after, the rshim misc file (DPU mode / NIC mode), and the failure consoles ("is not a valid rshim
  device", "INTEGRITY_FAIL", "Invalid FW Package", a boot that stops, the NIC-mode run): recorded from the
  device twin (its strings: rshim/FORMAT-from-source.md and hardware-facts.md section 4; no capture of those
  failures is in the corpus).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import stat
import sys

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import bfb_install
from fake_tools import fixture_text

DEV = "/dev/mst/mt41692_pciconf0"
RELEASE = "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"
CONSOLE_OK = fixture_text("bfb-install", "bf3-bf-bundle-2.7.0-with-bfcfg")
BFVER_BEFORE = fixture_text("bfver", "bf3-bfver-doca291")
BFVER_AFTER = BFVER_BEFORE.replace("bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod", RELEASE)
HASH = "$1$3B0RIrfX$TlHry93NFUJzg3Nya00rE1"
BMC_SECRET = "s3cr3t-bmc-pass"
MISC = """\
DISPLAY_LEVEL   0 (0:basic, 1:advanced, 2:log)
BF_MODE         DPU mode
BOOT_MODE       1 (0:rshim, 1:emmc, 2:emmc-boot-swap)
BOOT_TIMEOUT    150 (seconds)
USB_TIMEOUT     40 (seconds)
DROP_MODE       0 (0:normal, 1:drop)
SW_RESET        0 (1: reset)
DEV_NAME        pcie-0000:e2:00.2
DEV_INFO        BlueField-3(Rev 1)
OPN_STR         N/A
UP_TIME         0(s)
SECURE_NIC_MODE 0 (0:no, 1:yes)
FORCE_CMD       0 (1: send Force command)
"""
PUSH = ("Pushing bfb 1.41GiB 0:02:02 [11.7MiB/s] [           <=>            ]\n"
        "Collecting BlueField booting status. Press Ctrl+C to stop\n")
CONSOLE_BUSY = "Error: /dev/rshim0 is not a valid rshim device.\n"
CONSOLE_CORRUPT = PUSH + " INFO[PSC]: PSC BL1 START\n ERR[PSC]: INTEGRITY_FAIL\nBlueField Update Failed\n"
CONSOLE_GENERATION = PUSH + " INFO[PSC]: PSC BL1 START\n ERR[PSC]: Invalid FW Package\nBlueField Update Failed\n"
CONSOLE_STOPPED = PUSH + " INFO[PSC]: PSC BL1 START\n INFO[BL2]: start\nBlueField Update Failed\n"
CONSOLE_NIC = ("/dev/rshim0 (e2:00) is in NIC mode\n" + PUSH
               + " INFO[MISC]: NIC firmware update done\n INFO[MISC]: In Enhanced NIC mode\n")
FLINT_RUNNING = fixture_text("flint-query", "bf3-mstflint-q-nic-config-operator-pr97")
FLINT_PENDING = ("Image type:            FS4\nFW Version:            32.43.1014\n"
                 "FW Version(Running):   32.41.1000\nPSID:                  MT_0000000998\n")
DOWN = (255, "", "dpusim: the DPU's Arm OS is not running (down); nothing can run on it until it boots\n")
NOT_MODELLED = (1, "Error: Invalid argument: --version\n", "")


class FakeRunner:
    """Answers a script in order. A step whose argv ends with ``--config`` ``*`` matches any config path and
    records the file (text and mode) as it was while the tool ran."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.cmd = []
        self.configs = []
        self.timeouts = []

    def which(self, program):
        return "/usr/bin/" + program  # MFT (flint) installed

    def run(self, argv, timeout=None):
        argv = list(argv)
        self.cmd.append(argv)
        self.timeouts.append(timeout)
        assert self.steps, "unexpected command %r" % (argv,)
        want, rc, out, err = self.steps.pop(0)
        if want[-1:] == ["*"]:
            assert argv[:-1] == want[:-1], "expected %r, ran %r" % (want, argv)
            path = argv[-1]
            self.configs.append({"path": path, "text": open(path, encoding="utf-8").read(),
                                 "mode": stat.S_IMODE(os.stat(path).st_mode)})
        else:
            assert argv == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, err, missing=rc == 127)


@pytest.fixture
def lab(tmp_path):
    bfb = tmp_path / "bf-bundle.bfb"
    bfb.write_bytes(b"bfb bundle bytes")
    rshim = tmp_path / "dev" / "rshim0"
    rshim.mkdir(parents=True)
    (rshim / "misc").write_text(MISC)
    return {"bfb": str(bfb), "rshim": str(rshim), "version": RELEASE, "dpu_command": ["ssh", "ubuntu@dpu"],
            "poll_interval": 1}


LAST = {}  # the runner and the module's printed output of the latest run()


def run(monkeypatch, capsys, args, steps, check_mode=False):
    runner = FakeRunner(steps)
    monkeypatch.setattr(bfb_install, "ToolRunner", lambda timeout, environ=None: runner)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            bfb_install.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    assert not runner.steps, "commands not run: %r" % (runner.steps,)
    LAST.update(runner=runner, out=out)
    return result


BFVER = ["ssh", "ubuntu@dpu", "bfver"]
FLINT = ["flint", "-d", DEV, "q"]
VERSION = (["dpkg-query", "-W", "-f=${Version}\\n", "rshim"], 1, "", "dpkg-query: no packages found matching rshim\n")


def install(lab, config=False):
    argv = ["bfb-install", "--rshim", "rshim0", "--bfb", lab["bfb"]]
    return argv + ["--config", "*"] if config else argv


def test_installs_once_waits_for_the_dpu_and_reports_versions(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, device=DEV), [
        (BFVER, 0, BFVER_BEFORE, ""), (FLINT, 0, FLINT_RUNNING, ""),
        (install(lab), 0, CONSOLE_OK, ""),
        (BFVER, *DOWN), (BFVER, 0, BFVER_AFTER, ""), (FLINT, 0, FLINT_RUNNING, ""), VERSION])
    assert result["changed"] is True
    assert result["versions"]["before"] == {"release": "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod",
                                            "nic_firmware": {"flashed": "32.41.1000", "running": "32.41.1000"}}
    assert result["versions"]["after"]["release"] == RELEASE
    assert result["dpu"] == {"release": RELEASE, "answers": True}
    assert result["console"]["marker"] == "Installation finished"
    assert result["console"]["log"][0] == "INFO[PSC]: PSC BL1 START"
    assert result["rshim"] == {"path": lab["rshim"], "dev_name": "pcie-0000:e2:00.2", "dev_info": "BlueField-3(Rev 1)",
                               "generation": 3, "mode": "dpu"}
    assert result["reset_required"] == "none"
    assert result["bf_cfg"] == {}
    assert LAST["runner"].timeouts[2] == 1800
    assert [argv[0] for argv in result["cmd"]] == ["ssh", "flint", "bfb-install", "ssh", "ssh", "flint", "dpkg-query"]
    assert result["tool_version"] is None  # bfb-install has no --version (issue 18 (5)); dpkg has no rshim here


def test_a_bfb_path_with_spaces_reaches_bfb_install_as_a_link_without_them(monkeypatch, capsys, lab, tmp_path):
    """Issue 18 (5): bfb-install breaks on a path with spaces; it gets a private link to the file instead."""
    spaced = tmp_path / "my bundles" / "bf bundle 2.9.2.bfb"
    spaced.parent.mkdir()
    spaced.write_bytes(pathlib.Path(lab["bfb"]).read_bytes())
    seen = {}

    class Recording(FakeRunner):
        def run(self, argv, timeout=None):
            if argv[0] == "bfb-install":
                bfb = argv[argv.index("--bfb") + 1]
                seen.update(bfb=bfb, target=os.path.realpath(bfb))
                argv = argv[:argv.index("--bfb") + 1] + [lab["bfb"]] + argv[argv.index("--bfb") + 2:]
            return super().run(argv, timeout)

    monkeypatch.setattr(sys.modules[__name__], "FakeRunner", Recording)
    args = dict(lab, bfb=str(spaced))
    result = run(monkeypatch, capsys, args, [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab), 0, CONSOLE_OK, ""), (BFVER, 0, BFVER_AFTER, ""), VERSION])
    assert result["changed"] is True, result
    assert " " not in seen["bfb"] and seen["target"] == str(spaced)
    assert not os.path.exists(seen["bfb"]), "the link is removed after the run"


def test_release_already_running_is_no_change(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_AFTER, ""), VERSION])
    assert result["changed"] is False
    assert result["console"] == {}
    assert result["reset_required"] == "none"
    assert result["diff"]["before"] == result["diff"]["after"]


def test_check_mode_pushes_nothing_and_reports_the_worst_reset(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_BEFORE, ""), VERSION], check_mode=True)
    assert result["changed"] is True
    assert result["versions"]["after"]["release"] == RELEASE
    assert result["reset_required"] == "power_cycle"
    assert result["reset_reason"].startswith("worst case, known after the install: ")
    assert not any(argv[0] == "bfb-install" and "--bfb" in argv for argv in result["cmd"])


def test_check_mode_without_nic_firmware_update_needs_no_reset(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, nic_firmware_update=False),
                 [(BFVER, 0, BFVER_BEFORE, ""), VERSION], check_mode=True)
    assert result["reset_required"] == "none"
    assert result["bf_cfg"] == {"WITH_NIC_FW_UPDATE": "no"}


def test_diff_has_release_and_firmware(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab), 0, CONSOLE_OK, ""), (BFVER, 0, BFVER_AFTER, ""), VERSION])
    assert result["diff"]["before"] == {"release": "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod", "nic_firmware": None}
    assert result["diff"]["after"] == {"release": RELEASE, "nic_firmware": None}


def test_bundled_firmware_waiting_for_activation_needs_a_power_cycle(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, device=DEV), [
        (BFVER, 0, BFVER_BEFORE, ""), (FLINT, 0, FLINT_RUNNING, ""), (install(lab), 0, CONSOLE_OK, ""),
        (BFVER, 0, BFVER_AFTER, ""), (FLINT, 0, FLINT_PENDING, ""), VERSION])
    assert result["reset_required"] == "power_cycle"
    assert "power cycle" in result["reset_reason"]


def test_bf_cfg_is_private_complete_deleted_and_secrets_never_returned(monkeypatch, capsys, lab):
    args = dict(lab, ubuntu_password_hash=HASH, bf_cfg_secrets={"BMC_PASSWORD": BMC_SECRET},
                bf_cfg={"UPDATE_ATF_UEFI": True, "NET_RSHIM_MAC": "00:1a:ca:ff:ff:11"}, hostname="dpu-01",
                nic_firmware_update=True)
    result = run(monkeypatch, capsys, args, [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab, config=True), 0, CONSOLE_OK, ""), (BFVER, 0, BFVER_AFTER, ""),
        VERSION])
    [config] = LAST["runner"].configs
    assert config["mode"] == 0o600
    assert config["text"] == ("UPDATE_ATF_UEFI='yes'\nNET_RSHIM_MAC='00:1a:ca:ff:ff:11'\nWITH_NIC_FW_UPDATE='yes'\n"
                              "BMC_PASSWORD='%s'\nubuntu_PASSWORD='%s'\n\nbfb_modify_os()\n{\n"
                              "    echo 'dpu-01' > /mnt/etc/hostname\n}\n" % (BMC_SECRET, HASH))
    assert not os.path.exists(config["path"])
    assert not os.path.exists(os.path.dirname(config["path"]))
    assert HASH not in LAST["out"] and BMC_SECRET not in LAST["out"]
    assert result["bf_cfg"] == {"UPDATE_ATF_UEFI": "yes", "NET_RSHIM_MAC": "00:1a:ca:ff:ff:11",
                                "WITH_NIC_FW_UPDATE": "yes", "BMC_PASSWORD": "********",
                                "ubuntu_PASSWORD": "********", "bfb_modify_os": "hostname dpu-01"}


def test_secrets_absent_from_a_failure_that_echoes_them(monkeypatch, capsys, lab):
    echo = CONSOLE_CORRUPT + "Error: bad line ubuntu_PASSWORD='%s'\n" % HASH
    result = run(monkeypatch, capsys, dict(lab, ubuntu_password_hash=HASH), [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab, config=True), 1, echo, "")])
    assert result["failed"] is True
    assert HASH not in LAST["out"]
    assert "********" in result["stdout"]
    assert not os.path.exists(LAST["runner"].configs[0]["path"])


def test_clear_text_password_is_refused_before_anything(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, ubuntu_password_hash="hunter2hunter2"), [])
    assert result["failed"] is True
    assert "never pass a clear-text password" in result["msg"]
    assert "hunter2hunter2" not in LAST["out"]
    assert result["cmd"] == []


def test_credential_in_plain_bf_cfg_is_refused(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, bf_cfg={"BMC_PASSWORD": "x"}), [])
    assert result["msg"] == ("install BFB failed: bf.cfg key BMC_PASSWORD looks like a credential; pass it in "
                             "bf_cfg_secrets (no_log) instead of bf_cfg")


def test_tool_failure_reports_the_error_line(monkeypatch, capsys, lab):
    err = "Error: Need to provide either bfb or pldm file.\n"
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_BEFORE, ""), (install(lab), 1, err, "")])
    assert result["failed"] is True
    assert result["msg"] == "install BFB failed: Error: Need to provide either bfb or pldm file."
    assert result["failure"] == "usage"
    assert result["rc"] == 1


def test_wrong_generation_is_refused_before_the_push(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, generation=2), [])
    assert result["failed"] is True
    assert result["msg"] == ("install BFB failed: the bundle is for BlueField-2 and the card on %s is "
                             "BlueField-3(Rev 1); use the bundle for BlueField-3" % lab["rshim"])
    assert result["cmd"] == []


def test_wrong_generation_seen_on_the_console(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_BEFORE, ""),
                                            (install(lab), 1, CONSOLE_GENERATION, "")])
    assert result["failure"] == "wrong_generation"
    assert "'Invalid FW Package'" in result["msg"]
    assert result["console"]["log"] == ["INFO[PSC]: PSC BL1 START", "ERR[PSC]: Invalid FW Package"]


def test_corrupt_bundle_refused_by_sha256(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, dict(lab, sha256="ab" * 32), [])
    digest = hashlib.sha256(b"bfb bundle bytes").hexdigest()
    assert result["msg"] == ("install BFB failed: the bundle %s has sha256 %s, expected %s; the file is damaged or "
                             "not the one meant, download it again" % (lab["bfb"], digest, "ab" * 32))
    assert result["cmd"] == []


def test_corrupt_bundle_seen_on_the_console(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_BEFORE, ""),
                                            (install(lab), 1, CONSOLE_CORRUPT, "")])
    assert result["failure"] == "corrupt"
    assert "INTEGRITY_FAIL" in result["msg"]


def test_missing_rshim_is_refused(monkeypatch, capsys, lab, tmp_path):
    path = str(tmp_path / "dev" / "rshim1")
    result = run(monkeypatch, capsys, dict(lab, rshim=path), [])
    assert result["msg"].startswith("install BFB failed: the rshim device %s is not present on this host" % path)
    assert "if the BMC owns the rshim, release it there first" in result["msg"]


def test_rshim_in_drop_mode_is_refused(monkeypatch, capsys, lab):
    with open(os.path.join(lab["rshim"], "misc"), "w") as handle:
        handle.write(MISC.replace("DROP_MODE       0", "DROP_MODE       1"))
    result = run(monkeypatch, capsys, lab, [])
    assert result["msg"].startswith("install BFB failed: %s is in drop mode (DROP_MODE 1): another rshim backend, "
                                    "usually the BMC, holds the device" % lab["rshim"])


def test_rshim_busy_seen_by_bfb_install(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_BEFORE, ""), (install(lab), 1, CONSOLE_BUSY, "")])
    assert result["failure"] == "rshim_unavailable"
    assert "another backend (the BMC) owns it" in result["msg"]


def test_dpu_that_never_comes_back(monkeypatch, capsys, lab):
    now = [0.0]
    monkeypatch.setattr(bfb_install.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(bfb_install.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    result = run(monkeypatch, capsys, dict(lab, ready_timeout=2), [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab), 0, CONSOLE_OK, ""),
        (BFVER, *DOWN), (BFVER, *DOWN), (BFVER, *DOWN)])
    assert result["failed"] is True
    assert result["failure"] == "dpu_down"
    assert result["msg"].startswith("install BFB failed: the bundle was installed (Installation finished) but the "
                                    "DPU did not answer ssh ubuntu@dpu bfver within 2 s (last try: exit status 255: ")
    assert result["msg"].endswith("read %s/misc for its console, then write 'SW_RESET 1' there or power-cycle the "
                                  "server" % lab["rshim"])


def test_boot_that_stops_on_the_console(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, 0, BFVER_BEFORE, ""),
                                            (install(lab), 1, CONSOLE_STOPPED, "")])
    assert result["failure"] == "stopped"
    assert result["msg"].startswith("install BFB failed: the DPU stopped booting the BFB after 'start'")


def test_nic_mode_ends_on_its_own_marker(monkeypatch, capsys, lab):
    with open(os.path.join(lab["rshim"], "misc"), "w") as handle:
        handle.write(MISC.replace("DPU mode", "NIC mode"))
    result = run(monkeypatch, capsys, lab, [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab), 0, CONSOLE_NIC, ""), (BFVER, 0, BFVER_AFTER, ""), VERSION])
    assert result["rshim"]["mode"] == "nic"
    assert result["console"]["marker"] == "In Enhanced NIC mode"


def test_dpu_reporting_another_release_after_install_fails(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [
        (BFVER, 0, BFVER_BEFORE, ""), (install(lab), 0, CONSOLE_OK, ""), (BFVER, 0, BFVER_BEFORE, "")])
    assert result["msg"] == ("install BFB failed: bfb-install finished (Installation finished) but the DPU reports "
                             "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod, not %s; check that version names the "
                             "release this bundle installs" % RELEASE)


def test_unreachable_dpu_before_is_installed(monkeypatch, capsys, lab):
    result = run(monkeypatch, capsys, lab, [(BFVER, *DOWN), VERSION], check_mode=True)
    assert result["changed"] is True
    assert result["versions"]["before"]["release"] is None
    assert result["dpu"]["answers"] is False
