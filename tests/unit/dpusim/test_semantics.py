"""Device semantics of the twin: Next Boot vs Current, resets, banks, PSID, restriction, rshim, BFB."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from dpusim import images

DEV = "/dev/mst/mt41692_pciconf0"


def mlx_e(t, dev, name):
    """(default, current, next) of one parameter from `mlxconfig -e q NAME`."""
    rc, out, err = t.run("mlxconfig", "-d", dev, "-e", "q", name)
    assert rc == 0, err + out
    line = next(x for x in out.splitlines() if x.strip().lstrip("*").strip().startswith(name))
    return tuple(line.split()[-3:])


def mlx_next(t, dev, name):
    rc, out, err = t.run("mlxconfig", "-d", dev, "q", name)
    assert rc == 0, err + out
    return next(x for x in out.splitlines() if name in x).split()[-1]


def test_set_goes_to_next_boot_and_level3_makes_it_current(twin):
    t = twin("bluefield3", role="dpu")
    rc, out, _ = t.run("mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=8", "SRIOV_EN=0")
    assert rc == 0
    assert out.rstrip().endswith("-I- Please reboot machine to load new configurations.")
    assert mlx_e(t, DEV, "NUM_OF_VFS") == ("16", "16", "8")
    assert mlx_e(t, DEV, "SRIOV_EN") == ("True(1)", "True(1)", "False(0)")
    _, out, _ = t.run("mlxconfig", "-d", DEV, "-e", "q", "NUM_OF_VFS")
    assert re.search(r"^\*\s+NUM_OF_VFS", out, re.M), "a pending parameter is marked with '*'"
    rc, out, err = t.run("mlxfwreset", "-d", DEV, "-l", "3", "-y", "r")
    # run in the BlueField's Arm OS, level 3 restarts that OS ("BlueField system reboot"): the session that ran the
    # tool ends before it prints its last line, with ssh's message and exit status; the reset did happen
    assert rc == 255 and "-I- FW was loaded successfully." not in out and "-I- Restarting MST" in out
    assert err.startswith("Connection to ") and err.endswith(" closed by remote host.\n")
    assert mlx_e(t, DEV, "NUM_OF_VFS") == ("16", "8", "8")
    assert mlx_e(t, DEV, "SRIOV_EN") == ("True(1)", "False(0)", "False(0)")


def test_level0_and_dpu_side_reboot_do_not_activate(twin):
    t = twin("bluefield3", role="dpu")
    t.run("mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=4")
    rc, out, _ = t.run("mlxfwreset", "-d", DEV, "-l", "0", "-y", "r")
    assert rc == 1 and "-E- Reset-level '0' is not supported" in out
    assert t.cli("reboot")[0] == 0
    assert mlx_e(t, DEV, "NUM_OF_VFS")[1] == "16", "an Arm reboot does not reload NIC firmware"


def test_mode_change_needs_power_cycle_not_fw_reset(twin):
    t = twin("bluefield3", role="dpu")
    t.run("mlxconfig", "-d", DEV, "-y", "set", "INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED")
    t.run("mlxfwreset", "-d", DEV, "-l", "3", "-y", "r")
    rc, out, _ = t.run("mlxconfig", "-d", DEV, "q")
    assert rc == 1 and out == "-E- Error when trying to check if NV access registers are supported\n"
    assert t.cli("power-cycle")[0] == 0
    assert mlx_e(t, DEV, "INTERNAL_CPU_OFFLOAD_ENGINE") == ("ENABLED(0)", "DISABLED(1)", "DISABLED(1)")


def test_host_reboot_activates_connectx_but_not_bluefield_in_dpu_mode(twin):
    cx = twin("connectx7")
    cx.run("mlxconfig", "-d", "37:00.0", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=8")
    cx.cli("reboot")
    assert mlx_e(cx, "37:00.0", "NUM_OF_VFS") == ("0", "8", "8")
    bf = twin("bluefield3")
    bf.run("mlxconfig", "-d", "e2:00.0", "-y", "set", "NUM_OF_VFS=2")
    bf.cli("reboot")
    assert mlx_e(bf, "e2:00.0", "NUM_OF_VFS") == ("16", "16", "2")
    bf.cli("power-cycle")
    assert mlx_e(bf, "e2:00.0", "NUM_OF_VFS") == ("16", "2", "2")


def test_power_cycle_required_fault_ignores_warm_resets(twin):
    t = twin("connectx7")
    t.cli("fault", "set", "power_cycle_required")
    t.run("mlxconfig", "-d", "37:00.0", "-y", "set", "NUM_OF_VFS=8")
    t.run("mlxfwreset", "-d", "37:00.0", "-l", "3", "-y", "r")
    t.cli("reboot")
    assert mlx_e(t, "37:00.0", "NUM_OF_VFS")[1] == "0"
    t.cli("power-cycle")
    assert mlx_e(t, "37:00.0", "NUM_OF_VFS")[1] == "8"


def test_unknown_parameter_and_wrong_device(twin):
    t = twin("connectx7")
    rc, out, _ = t.run("mlxconfig", "-d", "37:00.0", "q", "NO_SUCH_PARAM")
    assert (rc, out) == (1, "-E- Unknown Parameter: NO_SUCH_PARAM\n")
    rc, out, _ = t.run("mlxconfig", "-d", "37:00.0", "q", "INTERNAL_CPU_MODEL")
    assert (rc, out) == (1, "-E- Failed to find Param / TLV with name 'INTERNAL_CPU_MODEL'\n")
    rc, out, _ = t.run("flint", "-d", "99:00.0", "q")
    assert rc == 1 and out.startswith("-E- Cannot open Device: 99:00.0.")
    rc, out, _ = t.run("mlxconfig", "-d", "37:00.0", "-y", "set", "SRIOV_EN=maybe")
    assert rc == 1 and "SRIOV_EN" in out


def fw_lines(t, dev):
    _, out, _ = t.run("flint", "-d", dev, "q")
    return {k.strip(): v.strip() for k, v in (x.split(":", 1) for x in out.splitlines() if ":" in x)}


def test_burn_writes_inactive_bank_and_reset_activates(twin, tmp_path):
    t = twin("bluefield3")
    img = images.make_image("nic-fw", "bluefield3", "32.43.1014", tmp_path / "fw.bin")
    rc, out, err = t.run("flint", "-d", "e2:00.0", "-i", str(img), "-y", "burn")
    assert rc == 0, out + err
    assert "    Current FW version on flash:  32.41.1000\n    New FW version:               32.43.1014\n" in out
    assert out.endswith("-I- To load new FW run mlxfwreset or reboot machine.\n")
    # issue 18 (7): flint's progress as CbCommon prints it (rewritten in place with \r), then OK and the end line
    step = "Burning FW image without signatures - "
    assert "\r%s  0%%\r%s 25%%" % (step, step) in out
    assert "\r%sOK  \n\rRestoring signature                     - OK\n" % step in out
    fw = t.card().data["firmware"]
    assert fw["active_bank"] == 1 and fw["banks"][1]["version"] == "32.43.1014"
    assert fw["banks"][0]["version"] == "32.41.1000" and fw["running"]["version"] == "32.41.1000"
    q = fw_lines(t, "e2:00.0")
    assert q["FW Version"] == "32.43.1014" and q["FW Version(Running)"] == "32.41.1000"
    rc, out, _ = t.run("flint", "-d", "e2:00.0", "-i", str(img), "-y", "burn")
    assert rc == 1 and "already updated on flash, pending reset" in out
    _, out, _ = t.run("mlxfwmanager", "--query")
    assert re.search(r"^     FW \(Running\)   32\.41\.1000", out, re.M)
    t.run("mlxfwreset", "-d", "e2:00.0", "-l", "3", "-y", "r")
    q = fw_lines(t, "e2:00.0")
    assert q["FW Version"] == "32.43.1014" and "FW Version(Running)" not in q


def test_live_patch_level0_only_for_same_branch(twin, tmp_path):
    t = twin("bluefield3")
    img = images.make_image("nic-fw", "bluefield3", "32.41.1010", tmp_path / "fw.bin")
    t.run("flint", "-d", "e2:00.0", "-i", str(img), "-y", "b")
    t.run("mlxconfig", "-d", "e2:00.0", "-y", "set", "NUM_OF_VFS=2")
    _, out, _ = t.run("mlxfwreset", "-d", "e2:00.0", "q")
    assert re.search(r'^0: Driver, PCI link, network link will remain up \("live-Patch"\)\s+-Supported\s+\(default\)',
                     out, re.M)
    assert t.run("mlxfwreset", "-d", "e2:00.0", "-l", "0", "-y", "r")[0] == 0
    assert t.card().data["firmware"]["running"]["version"] == "32.41.1010"
    assert mlx_e(t, "e2:00.0", "NUM_OF_VFS")[1] == "16", "live patch does not apply NV configuration"


def test_interrupted_burn_keeps_old_firmware(twin, tmp_path):
    t = twin("connectx7")
    img = images.make_image("nic-fw", "connectx7", "28.44.1000", tmp_path / "fw.bin")
    t.cli("fault", "set", "interrupted_burn")
    rc, out, _ = t.run("flint", "-d", "37:00.0", "-i", str(img), "-y", "burn")
    assert rc == 130 and "-I- To load new FW" not in out
    fw = t.card().data["firmware"]
    assert fw["active_bank"] == 0 and fw["banks"][1]["valid"] is False
    t.cli("power-cycle")
    assert fw_lines(t, "37:00.0")["FW Version"] == "28.43.1014"
    assert t.run("flint", "-d", "37:00.0", "-i", str(img), "-y", "burn")[0] == 0, "the fault fires once"
    t.cli("power-cycle")
    assert fw_lines(t, "37:00.0")["FW Version"] == "28.44.1000"


def test_psid_mismatch_has_the_real_message(twin, tmp_path):
    t = twin("bluefield3", role="dpu")
    img = images.make_image("nic-fw", "bluefield3", "32.43.1014", tmp_path / "fw.bin", psid="MT_0000000884")
    rc, out, _ = t.run("flint", "-d", DEV, "-i", str(img), "-y", "b")
    assert rc == 1
    assert out.endswith("\n\n\n-E- PSID mismatch. The PSID on flash (MT_0000000998) differs from the PSID in the "
                        "given image (MT_0000000884).\n")
    assert t.card().data["firmware"]["active_bank"] == 0
    rc, out, _ = t.run("mlxfwmanager", "-u", "-y", "-i", str(img))
    assert rc == 0 and "Status:           No matching image found" in out and "Updating FW" not in out


def test_bluefield2_image_on_bluefield3_and_corrupt_image(twin, tmp_path):
    t = twin("bluefield3")
    bf2 = images.make_image("nic-fw", "bluefield2", "24.43.1014", tmp_path / "bf2.bin")
    rc, out, _ = t.run("flint", "-d", "e2:00.0", "-i", str(bf2), "-y", "b")
    assert (rc, out) == (1, "-E- Burning FS4 image failed: FW image file cannot be programmed to device BlueField3, "
                            "it is intended for: BlueField2 only\n")
    bad = images.make_image("nic-fw", "bluefield3", "32.43.1014", tmp_path / "bad.bin", corrupt=True)
    rc, out, _ = t.run("flint", "-d", "e2:00.0", "-i", str(bad), "-y", "b")
    assert (rc, out) == (1, "-E- Burning FS4 image failed: Bad CRC.\n")
    assert images.read_image(bad)["intact"] is False and images.read_image(bf2)["intact"] is True


def test_mlxfwmanager_update_flow(twin, tmp_path):
    t = twin("connectx7")
    img = images.make_image("nic-fw", "connectx7", "28.44.1000", tmp_path / "fw.bin")
    rc, out, _ = t.run("mlxfwmanager", "-u", "-y", "-i", str(img))
    assert rc == 0
    assert "Found 1 device(s) requiring firmware update...\n\nPerform FW update? [y/N]: y\n" in out
    assert out.endswith("Done\n\nRestart needed for updates to take effect.\n")
    _, out, _ = t.run("mlxfwmanager", "--query", "-i", str(img))
    assert "Status:           Up to date" in out and "FW (Running)   28.43.1014" in out


def test_restricted_host_cannot_write(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    rc, out, _ = host.run("mlxprivhost", "-d", "e2:00.0", "r")
    assert rc == 1 and "cannot restrict itself" in out
    assert dpu.run("mlxprivhost", "-d", DEV, "r") == (
        0, "-I- preparing configuration file...Done!\n-I- configuring device...Done!\n", "")
    _, out, _ = host.run("mlxprivhost", "-d", "e2:00.0", "q")
    assert "level                         : RESTRICTED\n" in out
    rc, out, _ = host.run("mlxconfig", "-d", "e2:00.0", "-y", "set", "NUM_OF_VFS=2")
    assert rc == 1 and "Applying... Failed!" in out
    assert mlx_next(host, "e2:00.0", "NUM_OF_VFS") == "16"
    img = images.make_image("nic-fw", "bluefield3", "32.43.1014", tmp_path / "fw.bin")
    rc, out, _ = host.run("flint", "-d", "e2:00.0", "-i", str(img), "-y", "b")
    assert rc == 1 and "restricted" in out
    assert host.run("mlxfwreset", "-d", "e2:00.0", "-y", "r")[0] == 1
    assert dpu.run("mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=2")[0] == 0, "the Arm side stays privileged"
    assert mlx_next(host, "e2:00.0", "NUM_OF_VFS") == "2", "one card: the host sees the Arm's change"
    assert dpu.run("mlxprivhost", "-d", DEV, "p")[0] == 0
    assert host.run("mlxconfig", "-d", "e2:00.0", "-y", "set", "NUM_OF_VFS=4")[0] == 0


def test_disable_rshim_needs_power_cycle(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    dpu.run("mlxprivhost", "-d", DEV, "--disable_rshim", "r")
    assert host.cli("rshim", "cat")[0] == 0, "disable_rshim waits for a power cycle"
    host.cli("power-cycle")
    rc, _, err = host.cli("rshim", "cat")
    assert rc == 1 and "No such file or directory" in err


def test_rshim_busy_blocks_bfb_install(twin, tmp_path):
    host = twin("bluefield3")
    bfb = images.make_image("bfb", "bluefield3", "2.9.2-31_25.02", tmp_path / "b.bfb")
    host.cli("fault", "set", "rshim_busy")
    rc, out, _ = host.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))
    assert (rc, out) == (1, "Error: /dev/rshim0 is not a valid rshim device.\n")
    host.cli("fault", "clear", "rshim_busy")
    assert host.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))[0] == 0


def test_bfb_install_changes_what_the_dpu_reports(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    with dpu.edit() as node:
        node.runtime_for("p0")["qos_trust"] = "dscp"
    assert "OS Release Version: bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod" in dpu.run("bfver")[1]
    bfb = images.make_image("bfb", "bluefield3", "2.9.2-31_25.02", tmp_path / "b.bfb", nic_fw_version="32.43.2566")
    rc, out, _ = host.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("Pushing bfb 1.41GiB ")
    assert lines[1] == "Collecting BlueField booting status. Press Ctrl+C to stop"
    assert lines[2] == " INFO[PSC]: PSC BL1 START" and lines[-1] == " INFO[MISC]: Installation finished"
    _, out, _ = dpu.run("bfver")
    assert out.endswith("OS Release Version: bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod\n")
    assert (dpu.root / "etc" / "mlnx-release").read_text() == "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod\n"
    assert dpu.node().runtime == {}, "the DPU rebooted: runtime settings are gone"
    assert dpu.card().data["firmware"]["running"]["version"] == "32.43.2566"
    _, out, _ = host.cli("rshim", "cat")
    assert out.rstrip().endswith(" INFO[MISC]: Linux up\n INFO[MISC]: DPU is ready")
    _, out, _ = dpu.run("bfvcheck")
    assert out.endswith("Version check complete.\nNo issues found.\n")


def test_bfb_nic_firmware_pending_until_power_cycle(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    host.cli("fault", "set", "power_cycle_required")
    bfb = images.make_image("bfb", "bluefield3", "2.9.2-31_25.02", tmp_path / "b.bfb", nic_fw_version="32.43.2566")
    assert host.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))[0] == 0
    _, out, _ = dpu.run("bfvcheck")
    assert "WARNING: The firmware has been updated to 32.43.2566, but the chassis\nmust be power cycled" in out
    host.cli("power-cycle")
    assert dpu.run("bfvcheck")[1].endswith("No issues found.\n")


def test_bluefield2_bfb_on_bluefield3_fails(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    bfb = images.make_image("bfb", "bluefield2", "2.9.2-31_25.02", tmp_path / "bf2.bfb")
    rc, out, _ = host.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))
    assert rc == 1
    assert " ERR[PSC]: Invalid FW Package\nBlueField Update Failed\n" in out
    rc, _, err = dpu.run("bfver")
    assert rc == 255 and "not running" in err
    host.cli("rshim", "write", "SW_RESET", "1")
    assert dpu.run("bfver")[1].endswith("bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod\n"), "old OS boots again"


def test_dpu_never_returns(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    dpu.cli("fault", "set", "dpu_never_returns")
    assert host.cli("rshim", "write", "SW_RESET", "1")[0] == 0
    assert dpu.run("mst", "status", "-v")[0] == 255
    _, out, _ = host.cli("rshim", "cat")
    assert "DPU is ready" not in out
    host.cli("fault", "clear", "dpu_never_returns")
    host.cli("power-cycle")
    assert dpu.run("mst", "status", "-v")[0] == 0


def test_runtime_lost_on_reboot_persistent_kept(twin):
    t = twin("bluefield3", role="dpu")
    with t.edit() as node:
        node.runtime_for("p0")["pfc"] = [0, 0, 0, 1, 0, 0, 0, 0]
    t.run("mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=4")
    assert t.node().runtime["netdevs"]["p0"]["pfc"][3] == 1
    t.cli("reboot")
    # what was set is gone; what is left is the boot itself (driver loaded, sysfs at boot values: dpusim.boot)
    assert "netdevs" not in t.node().runtime
    assert set(t.node().runtime) <= {"linux"} and t.node().runtime["linux"]["net_sysfs"] is True
    assert mlx_next(t, DEV, "NUM_OF_VFS") == "4"


def test_rshim_misc_writes(twin):
    t = twin("bluefield3")
    assert t.cli("rshim", "write", "DISPLAY_LEVEL", "1")[0] == 0
    _, out, _ = t.cli("rshim", "cat")
    assert "CLEAR_ON_READ   0 (0:no, 1:yes)\n" in out and "Log Messages" not in out
    assert t.cli("rshim", "write", "BOGUS", "1")[0] == 1
    t.cli("rshim", "write", "DISPLAY_LEVEL", "2")
    t.cli("rshim", "write", "CLEAR_ON_READ", "1")
    t.cli("rshim", "write", "SW_RESET", "1")
    assert "DPU is ready" in t.cli("rshim", "cat")[1]
    assert "DPU is ready" not in t.cli("rshim", "cat")[1], "CLEAR_ON_READ empties the log"


def test_nic_mode_bfb_install_and_host_reboot(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    host.run("mlxconfig", "-d", "e2:00.0", "-y", "set", "INTERNAL_CPU_OFFLOAD_ENGINE=1")
    host.cli("reboot")
    assert "BF_MODE         DPU mode\n" in host.cli("rshim", "cat")[1], "a host reboot does not change the mode"
    host.cli("power-cycle")
    assert "BF_MODE         NIC mode\n" in host.cli("rshim", "cat")[1]
    host.run("mlxconfig", "-d", "e2:00.0", "-y", "set", "NUM_OF_VFS=2")
    host.cli("reboot")
    assert mlx_e(host, "e2:00.0", "NUM_OF_VFS")[1] == "2", "in NIC mode a host reboot reloads the firmware"
    bfb = images.make_image("bfb", "bluefield3", "2.9.2-31_25.02", tmp_path / "b.bfb")
    rc, out, _ = host.run("bfb-install", "-r", "rshim0", "-b", str(bfb))
    assert rc == 0
    assert out.startswith("/dev/rshim0 (e2:00) is in NIC mode\nPushing bfb ")
    assert out.endswith(" INFO[MISC]: In Enhanced NIC mode\n")
    assert dpu.run("bfver")[1].endswith("bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod\n")


def test_privhost_tracer_waits_for_fw_reset(twin):
    t = twin("bluefield3", role="dpu")
    t.run("mlxprivhost", "-d", DEV, "--disable_tracer", "--disable_port_owner", "r")
    _, out, _ = t.run("mlxprivhost", "-d", DEV, "q")
    # q reads the stored TLV (mstprivhost.py queryConf): the flag shows at once, active only after the reset
    assert "disable_tracer                : TRUE\n" in out and "disable_port_owner            : TRUE\n" in out
    assert json.loads(t.cli("state")[1])["cards"][0]["privhost"]["pending"] == {"disable_tracer": True}
    t.run("mlxfwreset", "-d", DEV, "-l", "3", "-y", "r")
    assert json.loads(t.cli("state")[1])["cards"][0]["privhost"]["current"]["disable_tracer"] is True


def test_bfb_install_argument_errors(twin, tmp_path):
    t = twin("bluefield3")
    assert t.run("bfb-install", "--rshim", "rshim0") == (1, "Error: Need to provide either bfb or pldm file.\n", "")
    rc, out, _ = t.run("bfb-install", "--rshim", "rshim0", "--bfb", str(tmp_path / "none.bfb"))
    assert (rc, out) == (1, "Error: %s not found.\n" % (tmp_path / "none.bfb"))
    bfb = images.make_image("bfb", "bluefield3", "2.9.2", tmp_path / "b.bfb")
    rc, out, _ = t.run("bfb-install", "--rshim", "rshim7", "--bfb", str(bfb))
    assert (rc, out) == (1, "Error: /dev/rshim7 is not a valid rshim device.\n")
    dpu = twin("bluefield3", role="dpu")
    assert dpu.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))[0] == 1, "no rshim on the Arm side"
    assert t.run("bfver") == (127, "", "bfver: command not found\n")


def test_flint_image_query_and_mlxconfig_reset(twin, tmp_path):
    t = twin("connectx7")
    img = images.make_image("nic-fw", "connectx7", "28.44.1000", tmp_path / "fw.bin")
    rc, out, _ = t.run("flint", "-i", str(img), "q")
    assert rc == 0 and "FW Version:            28.44.1000\n" in out and "PSID:                  MT_0000001244\n" in out
    rc, out, _ = t.run("flint", "-i", str(tmp_path / "missing.bin"), "q")
    assert rc == 1 and out.startswith("-E- Cannot open Image: ")
    t.run("mlxconfig", "-d", "37:00.0", "-y", "set", "NUM_OF_VFS=8")
    rc, out, _ = t.run("mlxconfig", "-d", "37:00.0", "-y", "reset")
    assert rc == 0
    assert out == ("\n Reset configuration for device 37:00.0? (y/n) [n] : y\nApplying... Done!\n"
                   "-I- Please reboot machine to load new configurations.\n")
    assert mlx_next(t, "37:00.0", "NUM_OF_VFS") == "0"
    rc, out, _ = t.run("mlxconfig", "-d", "37:00.0", "set", "NUM_OF_VFS=8", stdin="n\n")
    assert rc == 1 and out.endswith("(y/n) [n] : Aborted by user\n") and mlx_next(t, "37:00.0", "NUM_OF_VFS") == "0"


def test_power_cycle_from_either_root_clears_both_runtimes(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    for t, dev in ((host, "ens1f0np0"), (dpu, "p0")):
        with t.edit() as node:
            node.runtime_for(dev)["trust"] = "dscp"
    host.cli("reboot")
    assert "netdevs" not in host.node().runtime and dpu.node().runtime["netdevs"]["p0"]["trust"] == "dscp", \
        "a host warm reboot leaves the DPU running"
    with host.edit() as node:
        node.runtime_for("ens1f0np0")["trust"] = "dscp"
    dpu.cli("power-cycle")
    assert host.node().runtime == {} and "netdevs" not in dpu.node().runtime  # the DPU came up: boot values only
    with host.edit() as node:
        node.runtime_for("ens1f0np0")["trust"] = "pcp"
    assert host.node().runtime["netdevs"]["ens1f0np0"]["trust"] == "pcp", "seen once, not cleared again"


def test_two_burns_at_once_do_not_both_write(twin, tmp_path):
    t = twin("connectx7")
    img = images.make_image("nic-fw", "connectx7", "28.44.1000", tmp_path / "fw.bin")
    # long enough that a loaded machine starts the second burn while the first still runs
    env = dict(os.environ, DPUSIM_ROOT=str(t.root), DPUSIM_TIME_SCALE="0.03")
    cmd = [sys.executable, "-m", "dpusim.tool", "flint", "-d", "37:00.0", "-i", str(img), "-y", "b"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not t.card().data["firmware"].get("burn_in_progress") and time.monotonic() < deadline:
        time.sleep(0.02)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    out, _ = first.communicate(timeout=30)
    assert first.returncode == 0 and "Restoring signature" in out
    assert second.returncode == 1 and "burn of 28.44.1000 in progress" in second.stdout
    fw = t.card().data["firmware"]
    assert fw["active_bank"] == 1 and fw["banks"][0]["version"] == "28.43.1014"


def test_rshim_misc_file_reads_and_writes(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", role="host", card_dir=pair, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="dpu")
    misc = host.root / "dev" / "rshim0" / "misc"
    assert misc.read_text().startswith("DISPLAY_LEVEL   0 (0:basic, 1:advanced, 2:log)\n")
    boots = dpu.card().data["arm_boot_id"]
    misc.write_text("SW_RESET 1\n")
    assert host.run("mst", "status")[0] == 0, "any twin call on the host applies the write"
    assert dpu.card().data["arm_boot_id"] == boots + 1
    assert misc.read_text().startswith("DISPLAY_LEVEL   0 "), "the snapshot is rendered again"
    misc.write_text("DISPLAY_LEVEL 2\n")
    host.run("mst", "status")
    assert " INFO[MISC]: DPU is ready\n" in misc.read_text()
    misc.write_text("NOT_A_KEY 1\n")
    host.run("mst", "status")
    assert misc.read_text().startswith("DISPLAY_LEVEL   2 ")
