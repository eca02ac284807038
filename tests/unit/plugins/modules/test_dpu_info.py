"""bluefleet.dpu.dpu_info driven by recorded tool outputs (tests/unit/fixtures/parsers) through a fake runner.

The captures come from different machines (see each fixture's header); a test pairs them only to
check what the module does with each tool's answer, not to model one real machine.
"""

from __future__ import annotations

import collections

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import RC_TIMEOUT, CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info
from fake_tools import FakeRunner, fixture_text

BF3 = "/dev/mst/mt41692_pciconf0"
BF2 = "/dev/mst/mt41686_pciconf0"
NOT_MODELLED = (1, "", "-E- Invalid command: --version\n")
VERSIONS_UNSUPPORTED = {
    ("mst", "version"): NOT_MODELLED,
    ("flint", "--version"): NOT_MODELLED,
    ("mlxconfig", "--version"): NOT_MODELLED,
    ("mlxprivhost", "-v"): NOT_MODELLED,
    ("devlink", "-V"): NOT_MODELLED,
}


def ok(kind, name):
    return (0, fixture_text(kind, name), "")


def dpu_answers():
    """The Arm side of a BlueField-3 (mst, flint, mlxconfig, bfver captured on BlueField-3 Arm systems)."""
    answers = {
        ("mst", "status", "-v"): ok("mst-status", "bf3-arm-mst-status-v"),
        ("devlink", "dev", "eswitch", "show"): ok("devlink-eswitch", "from-format-json-two-devices"),
        ("flint", "-d", BF3, "q"): ok("flint-query", "bf3-mstflint-q-nic-config-operator-pr97"),
        ("mlxconfig", "-d", BF3, "-e", "q"): ok("mlxconfig-query", "bf3-b3220-mstconfig-q-dpu-mode-head"),
        ("mlxprivhost", "-d", BF3, "q"): ok("mlxprivhost-query", "bf2-query-privileged-fixture"),
        ("bfver",): ok("bfver", "bf3-bfver-doca291"),
        ("mlxbf-bootctl",): ok("mlxbf-bootctl", "bf2-ga-secured"),
    }
    answers.update(VERSIONS_UNSUPPORTED)
    return answers


def host_answers():
    """The x86 host of a BlueField-2 (mst, mlxconfig -e q of the same mst device)."""
    answers = {
        ("mst", "status", "-v"): ok("mst-status", "bf2-host-mst-status-v-fixture"),
        ("devlink", "dev", "eswitch", "show"): ok("devlink-eswitch", "cx6-eswitch-show-switchdev"),
        ("flint", "-d", BF2, "q"): ok("flint-query", "cx4-flint-query-fs3"),
        ("mlxconfig", "-d", BF2, "-e", "q"): ok("mlxconfig-query", "bf2-query-e-old-format-abridged"),
    }
    answers.update(VERSIONS_UNSUPPORTED)
    return answers


DPU_ARGV = [
    ["mst", "status", "-v"],
    ["devlink", "dev", "eswitch", "show"],
    ["flint", "-d", BF3, "q"],
    ["mlxconfig", "-d", BF3, "-e", "q"],
    ["mlxprivhost", "-d", BF3, "q"],
    ["bfver"],
    ["mlxbf-bootctl"],
    ["mst", "version"],
    ["devlink", "-V"],
    ["flint", "--version"],
    ["mlxconfig", "--version"],
    ["mlxprivhost", "-v"],
]


def test_dpu_side_runs_exactly_these_commands_and_reports_the_card(run_module, fake_runner):
    runner = fake_runner(dpu_answers())
    failed, result = run_module(dpu_info, {}, runner)
    assert not failed, result
    assert runner.cmd == DPU_ARGV
    assert result["cmd"] == DPU_ARGV
    assert result["changed"] is False
    assert result["side"] == "dpu"
    assert result["tools_missing"] == []
    assert len(result["devices"]) == 1
    dev = result["devices"][0]
    assert dev["mst"] == BF3
    assert dev["device_type"] == "BlueField3(rev:1)"
    assert dev["bluefield"] is True
    assert dev["pci"] == "03:00.0"
    assert [f["pci"] for f in dev["functions"]] == ["03:00.0", "03:00.1"]
    assert dev["netdevs"] == ["pf0hpf", "en3f0pf0sf0", "p0", "p1", "pf1hpf", "en3f1pf1sf0"]
    assert dev["rdma_devices"] == ["mlx5_0", "mlx5_1"]
    assert dev["psid"] == "MT_0000000998"
    assert dev["part_number"] == "900-9D3B6-00CV-A_Ax"
    assert dev["firmware"]["flashed"] == "32.41.1000"
    assert dev["firmware"]["running"] == "32.41.1000"
    assert dev["firmware"]["pending_reset"] is False
    assert [r["type"] for r in dev["firmware"]["rom_info"]] == ["UEFI Virtio net", "UEFI Virtio blk", "UEFI", "PXE"]
    # This capture is a plain `q`: only the Next Boot column exists, Default and Current are null.
    assert dev["nvconfig"]["params"]["INTERNAL_CPU_MODEL"] == {
        "default": None, "current": None, "next_boot": "EMBEDDED_CPU(1)"}
    assert dev["nvconfig"]["pending"] == []
    assert dev["mode"] == {"available": True, "current": None, "next_boot": "dpu"}
    assert dev["eswitch"] == {"available": True, "functions": {
        "0000:03:00.0": {"mode": "switchdev", "inline_mode": "none", "encap_mode": "basic"},
        "0000:03:00.1": {"mode": "legacy", "inline_mode": "none", "encap_mode": "basic"}}}
    assert dev["privilege"]["level"] == "PRIVILEGED"
    assert dev["privilege"]["port_functions"]["disable_rshim"] == "FALSE"
    assert dev["pending_reset"] == {"required": False, "firmware": False, "nvconfig": []}
    assert result["dpu_os"] == {
        "available": True, "release": "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod", "doca_version": "2.9.1",
        "bundle_version": "2.9.1-40", "os": "ubuntu-22.04", "atf_version": "v2.2(release):4.9.1-21-gfc25b08d9",
        "uefi_version": "4.9.1-36-g0c3239837a", "bsp_version": "4.9.1.13442", "boot_device": "/dev/mmcblk0boot1"}
    assert result["secure_boot"]["lifecycle_state"] == "GA Secured"
    assert result["secure_boot"]["secured"] is True
    assert result["rshim"]["available"] is False
    assert result["tool_versions"] == {"mst": None, "devlink": None, "flint": None, "mlxconfig": None,
                                       "mlxprivhost": None, "bfver": None, "mlxbf-bootctl": None}


def test_host_side_reads_rshim_and_skips_arm_only_tools(run_module, fake_runner, tmp_path):
    misc = tmp_path / "dev" / "rshim0" / "misc"
    misc.parent.mkdir(parents=True)
    misc.write_text(fixture_text("rshim-misc", "bf3-misc-display-level-2-log"))
    runner = fake_runner(host_answers())
    failed, result = run_module(dpu_info, {"fs_root": str(tmp_path)}, runner)
    assert not failed, result
    assert runner.cmd == [
        ["mst", "status", "-v"],
        ["devlink", "dev", "eswitch", "show"],
        ["flint", "-d", BF2, "q"],
        ["mlxconfig", "-d", BF2, "-e", "q"],
        ["mst", "version"], ["devlink", "-V"], ["flint", "--version"], ["mlxconfig", "--version"],
    ]
    assert result["side"] == "host"
    dev = result["devices"][0]
    assert dev["netdevs"] == ["ens7f0", "ens7f1"]
    assert dev["part_number"] == "MBF2H516C-CECO_Ax"
    assert dev["nvconfig"]["params"]["HOST_CHAINING_MODE"] == {
        "default": "DISABLED(0)", "current": "DISABLED(0)", "next_boot": "DISABLED(0)"}
    # the BlueField-2 capture has no INTERNAL_CPU_MODEL line: the mode is unknown, not guessed
    assert dev["mode"] == {"available": True, "current": None, "next_boot": None}
    # devlink listed other PCI functions only
    assert dev["eswitch"] == {"available": True, "functions": {}}
    assert dev["privilege"] == {"available": False,
                                "reason": "mlxprivhost runs on the DPU's Arm side; this is the host side"}
    assert result["dpu_os"]["available"] is False
    assert result["secure_boot"]["available"] is False
    rshim = result["rshim"]
    assert rshim["available"] is True
    assert [d["name"] for d in rshim["devices"]] == ["rshim0"]
    assert rshim["devices"][0]["fields"]["DEV_NAME"] == "pcie-0000:53:00.2"


def test_each_tool_runs_at_most_once_per_card(run_module, fake_runner):
    # Two ConnectX-7 cards, one with 7 SR-IOV VFs, mst driver not loaded (MST column NA).
    answers = {("mst", "status", "-v"): ok("mst-status", "cx7-mst-status-v-container-ocp"),
               ("devlink", "dev", "eswitch", "show"): ok("devlink-eswitch", "cx6-eswitch-show-switchdev")}
    for pci in ("0d:00.0", "37:00.0"):
        answers[("flint", "-d", pci, "q")] = ok("flint-query", "cx7-flint-query-secure-fw")
        answers[("mlxconfig", "-d", pci, "-e", "q")] = ok("mlxconfig-query", "cx7-query-filtered-egrep")
    answers.update(VERSIONS_UNSUPPORTED)
    runner = fake_runner(answers)
    failed, result = run_module(dpu_info, {}, runner)
    assert not failed, result
    assert [d["mst"] for d in result["devices"]] == ["0d:00.0", "37:00.0"]
    assert [len(d["functions"]) for d in result["devices"]] == [1, 8]
    assert result["devices"][1]["rdma_devices"] == ["mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6",
                                                    "mlx5_7", "mlx5_8"]
    assert all(d["mode"]["current"] == "nic" for d in result["devices"])
    per_device = collections.Counter((argv[0], argv[2]) for argv in runner.cmd if "-d" in argv)
    assert per_device == {("flint", "0d:00.0"): 1, ("flint", "37:00.0"): 1,
                          ("mlxconfig", "0d:00.0"): 1, ("mlxconfig", "37:00.0"): 1}
    per_tool = collections.Counter(argv[0] for argv in runner.cmd if "-d" not in argv)
    # once per machine: the query and one version request
    assert per_tool == {"mst": 2, "devlink": 2, "flint": 1, "mlxconfig": 1}


def test_missing_tools_are_reported_not_fatal(run_module, fake_runner):
    runner = fake_runner(dpu_answers(), missing={"mlxconfig", "bfver", "devlink"})
    failed, result = run_module(dpu_info, {}, runner)
    assert not failed, result
    dev = result["devices"][0]
    assert dev["nvconfig"] == {"available": False, "reason": "mlxconfig not found on PATH"}
    assert dev["mode"] == {"available": False, "reason": "mlxconfig not found on PATH"}
    assert dev["eswitch"] == {"available": False, "reason": "devlink not found on PATH"}
    assert dev["part_number"] is None
    assert result["dpu_os"] == {"available": False, "reason": "bfver not found on PATH"}
    assert result["tools_missing"] == ["devlink", "mlxconfig", "bfver"]
    assert "mlxconfig" not in result["tool_versions"]
    assert ["mlxconfig", "--version"] not in runner.cmd


def test_missing_mst_gives_no_devices_and_a_message(run_module, fake_runner):
    runner = fake_runner({}, missing={"mst"})
    failed, result = run_module(dpu_info, {"side": "host"}, runner)
    assert not failed, result
    assert result["devices"] == []
    assert result["msg"].startswith("mst not found on PATH")
    assert runner.cmd == [["mst", "status", "-v"]]
    assert result["tools_missing"] == ["mst"]


def test_no_device_is_an_empty_list_and_a_message(run_module, fake_runner):
    # `mst status -v` with the table header and no rows (what mst prints once every card is gone).
    text = fixture_text("mst-status", "bf3-arm-mst-status-v")
    empty = text[: text.index("DEVICE_TYPE")] + text[text.index("DEVICE_TYPE"):].split("\n", 1)[0] + "\n"
    answers = {("mst", "status", "-v"): (0, empty, "")}
    answers.update(VERSIONS_UNSUPPORTED)
    runner = fake_runner(answers)
    failed, result = run_module(dpu_info, {"filter": ["firmware", "eswitch"]}, runner)
    assert not failed, result
    assert result["devices"] == []
    assert result["msg"] == "no BlueField or ConnectX device found by mst status -v"
    assert runner.cmd == [["mst", "status", "-v"]]


def test_tool_failure_fails_with_command_and_output(run_module, fake_runner):
    answers = dpu_answers()
    answers[("flint", "-d", BF3, "q")] = (1, "", "-E- Cannot open Device: /dev/mst/mt41692_pciconf0.\n")
    failed, result = run_module(dpu_info, {}, fake_runner(answers))
    assert failed
    assert result["msg"] == ("query firmware of %s with flint failed: -E- Cannot open Device: "
                             "/dev/mst/mt41692_pciconf0." % BF3)
    assert result["cmd"] == ["flint", "-d", BF3, "q"]
    assert result["rc"] == 1
    assert result["stderr"].startswith("-E- Cannot open Device")
    assert result["cmd_list"][-1] == ["flint", "-d", BF3, "q"]


def test_nonzero_rc_without_error_line_names_the_status(run_module, fake_runner):
    answers = dpu_answers()
    answers[("bfver",)] = (2, "", "bfver: cannot read /dev/mmcblk0boot1\n")
    failed, result = run_module(dpu_info, {}, fake_runner(answers))
    assert failed
    assert result["msg"] == ("query BFB and OS versions with bfver failed: exit status 2: "
                             "bfver: cannot read /dev/mmcblk0boot1")


def test_error_printed_with_rc_zero_is_a_failure(run_module, fake_runner):
    answers = dpu_answers()
    answers[("mlxconfig", "-d", BF3, "-e", "q")] = (0, fixture_text("mlxconfig-query",
                                                                    "bf2-error-nv-access-registers"), "")
    failed, result = run_module(dpu_info, {}, fake_runner(answers))
    assert failed
    assert result["msg"] == ("query configuration of %s with mlxconfig failed: -E- Error when trying to check if "
                             "NV access registers are supported" % BF3)
    assert result["rc"] == 0


def test_garbage_output_fails_with_the_parser_message(run_module, fake_runner):
    answers = dpu_answers()
    answers[("flint", "-d", BF3, "q")] = (0, "\x00\x01 nothing like flint\n", "")
    failed, result = run_module(dpu_info, {}, fake_runner(answers))
    assert failed
    assert result["msg"].startswith("parse flint -d %s q output failed: cannot parse flint-query output" % BF3)
    assert "bluefleet parse flint-query" in result["msg"]
    assert result["stdout"] == "\x00\x01 nothing like flint\n"


def test_check_mode_reads_the_same_and_changes_nothing(run_module, fake_runner):
    normal = fake_runner(dpu_answers())
    check = fake_runner(dpu_answers())
    first_failed, first = run_module(dpu_info, {}, normal)
    failed, second = run_module(dpu_info, {}, check, check_mode=True)
    assert not failed and not first_failed
    assert check.cmd == normal.cmd == DPU_ARGV
    assert first.pop("read_at") <= second.pop("read_at")  # when each read began (the node's clock)
    assert second == first
    assert second["changed"] is False


def test_filter_runs_only_what_the_sections_need(run_module, fake_runner):
    runner = fake_runner(dpu_answers())
    failed, result = run_module(dpu_info, {"filter": ["mode"]}, runner)
    assert not failed, result
    assert runner.cmd == [["mst", "status", "-v"], ["mlxconfig", "-d", BF3, "-e", "q"]]
    dev = result["devices"][0]
    assert "nvconfig" not in dev and "firmware" not in dev and "eswitch" not in dev
    assert dev["mode"]["next_boot"] == "dpu"
    for key in ("rshim", "dpu_os", "secure_boot", "tool_versions"):
        assert key not in result
    assert result["filter"] == ["mode"]


def test_filter_rejects_unknown_sections(run_module, fake_runner):
    failed, result = run_module(dpu_info, {"filter": ["firmwares"]}, fake_runner({}))
    assert failed
    assert "firmwares" in result["msg"]


def test_flashed_newer_than_running_is_a_pending_reset(run_module, fake_runner):
    # flint prints "FW Version(Running):" after "FW Version:" only while flash and running differ
    # (corpus/flint/FORMAT-from-source.md, 23-column label); no capture has it, so it is added here.
    text = fixture_text("flint-query", "bf3-mstflint-q-nic-config-operator-pr97")
    line = next(x for x in text.splitlines(True) if x.startswith("FW Version:"))
    text = text.replace(line, line.replace("32.41.1000", "32.43.1014") + "FW Version(Running):   32.41.1000\n")
    answers = dpu_answers()
    answers[("flint", "-d", BF3, "q")] = (0, text, "")
    failed, result = run_module(dpu_info, {"filter": ["firmware"]}, fake_runner(answers))
    assert not failed, result
    dev = result["devices"][0]
    assert dev["firmware"]["flashed"] == "32.43.1014"
    assert dev["firmware"]["running"] == "32.41.1000"
    assert dev["firmware"]["pending_reset"] is True
    assert dev["pending_reset"] == {"required": True, "firmware": True, "nvconfig": []}


def test_tool_versions_keep_the_first_line_printed(run_module, fake_runner):
    answers = dpu_answers()
    answers[("flint", "--version")] = (0, "\nfirst line as printed\nsecond line\n", "")
    failed, result = run_module(dpu_info, {"filter": ["firmware", "tool_versions"]}, fake_runner(answers))
    assert not failed, result
    assert result["tool_versions"] == {"mst": None, "flint": "first line as printed"}


@pytest.mark.parametrize("current, next_boot, expected", [
    ({"INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)", "INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED(0)"}, None, "dpu"),
    ({"INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)", "INTERNAL_CPU_OFFLOAD_ENGINE": "DISABLED(1)"}, None, "nic"),
    ({"INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)"}, None, "dpu"),
    ({"INTERNAL_CPU_MODEL": "SEPARATED_HOST(0)"}, None, "separated_host"),
    ({}, None, None),
])
def test_mode_rules(current, next_boot, expected):
    params = {k: {"default": None, "current": v, "next_boot": v} for k, v in current.items()}
    bluefield = {"bluefield": True}
    assert dpu_info.DpuInfo.mode_of(bluefield, params, "current") == expected
    assert dpu_info.DpuInfo.mode_of({"bluefield": False}, params, "current") == "nic"


def test_mode_follows_next_boot_separately():
    params = {"INTERNAL_CPU_MODEL": {"default": "EMBEDDED_CPU(1)", "current": "EMBEDDED_CPU(1)",
                                     "next_boot": "EMBEDDED_CPU(1)"},
              "INTERNAL_CPU_OFFLOAD_ENGINE": {"default": "ENABLED(0)", "current": "ENABLED(0)",
                                              "next_boot": "DISABLED(1)"}}
    assert dpu_info.DpuInfo.mode_of({"bluefield": True}, params, "current") == "dpu"
    assert dpu_info.DpuInfo.mode_of({"bluefield": True}, params, "next_boot") == "nic"


def test_timeout_fails_with_the_limit_and_the_runner_gets_the_option(run_module, fake_runner):
    argv = ["flint", "-d", BF3, "q"]
    answers = dpu_answers()
    answers[tuple(argv)] = CommandResult(argv, RC_TIMEOUT, "", "flint timed out after 7 s", timed_out=True)
    runner = fake_runner(answers)
    failed, result = run_module(dpu_info, {"timeout": 7}, runner)
    assert failed
    assert runner.built_with_timeout == 7
    assert result["msg"] == "query firmware of %s with flint failed: flint timed out after 7 s" % BF3
    assert result["rc"] == RC_TIMEOUT


def test_non_positive_timeout_is_refused(run_module, fake_runner):
    failed, result = run_module(dpu_info, {"timeout": 0}, fake_runner({}))
    assert failed
    assert result["msg"] == "gather DPU facts failed: timeout must be a positive number of seconds, got 0"


RDMA_ARGV = ("rdma", "link", "show")


def test_rdma_links_are_read_once_in_the_same_run_as_the_firmware(run_module, fake_runner):
    # The rolling upgrade's health gate: versions and links in one module run (rdma-link fixtures: one ACTIVE and
    # one DOWN port, first-release layout; one ACTIVE port, current layout).
    answers = dpu_answers()
    answers[RDMA_ARGV] = ok("rdma-link", "from-format-old-ifindex-prefix-ib-and-roce")
    runner = fake_runner(answers)
    failed, result = run_module(dpu_info, {"filter": ["firmware", "dpu_os", "rdma_links"]}, runner)
    assert not failed, result
    assert runner.cmd == [["mst", "status", "-v"], ["flint", "-d", BF3, "q"], ["bfver"], list(RDMA_ARGV)]
    links = result["rdma_links"]
    assert links["available"] is True and links["all_active"] is False
    assert links["down"] == ["mlx5_1/1 DOWN"] and links["missing"] == []
    assert [(link["ibdev"], link["state"]) for link in links["links"]] == [("mlx5_0", "ACTIVE"), ("mlx5_1", "DOWN")]
    assert result["filter"] == ["firmware", "dpu_os", "rdma_links"]
    answers[RDMA_ARGV] = ok("rdma-link", "sf-rdma-link-and-dev-show-parav")
    failed, result = run_module(dpu_info, {"filter": ["rdma_links"]}, fake_runner(answers), check_mode=True)
    assert not failed and result["rdma_links"]["all_active"] is True and result["rdma_links"]["down"] == []


def test_rdma_links_not_in_the_default_and_agree_with_rdma_link_info(run_module, fake_runner):
    from ansible_collections.bluefleet.dpu.plugins.modules import rdma_link_info

    answers = dpu_answers()
    answers[RDMA_ARGV] = ok("rdma-link", "from-format-old-ifindex-prefix-ib-and-roce")
    runner = fake_runner(answers)
    failed, result = run_module(dpu_info, {}, runner)
    assert not failed and "rdma_links" not in result and list(RDMA_ARGV) not in runner.cmd
    failed, mine = run_module(dpu_info, {"filter": ["rdma_links"]}, fake_runner(answers))
    failed_too, theirs = run_module(rdma_link_info, {}, fake_runner(answers))
    assert not failed and not failed_too
    assert {k: mine["rdma_links"][k] for k in ("links", "all_active", "down", "missing")} == \
        {k: theirs[k] for k in ("links", "all_active", "down", "missing")}


def test_rdma_links_missing_tool_is_unavailable_and_garbage_fails(run_module, fake_runner):
    failed, result = run_module(dpu_info, {"filter": ["rdma_links"]}, fake_runner(dpu_answers(), missing={"rdma"}))
    assert not failed, result
    assert result["rdma_links"] == {"available": False, "reason": "rdma not found on PATH"}
    assert result["tools_missing"] == ["rdma"]
    answers = dpu_answers()
    answers[RDMA_ARGV] = (0, "link mlx5_0/1 state\n", "")
    failed, result = run_module(dpu_info, {"filter": ["firmware", "rdma_links"]}, fake_runner(answers))
    assert failed
    assert result["msg"].startswith("parse rdma link show output failed:"), result["msg"]
    assert "bluefleet parse rdma-link" in result["msg"]
    answers[RDMA_ARGV] = (1, "", "rdma: no such device\n")
    failed, result = run_module(dpu_info, {"filter": ["rdma_links"]}, fake_runner(answers))
    assert failed and result["msg"].startswith("read the RDMA ports with rdma link show failed:"), result["msg"]


# --- reset_levels: what fw_reset reads with `mlxfwreset -d DEV q` (Card.levels) ------------------------------------

class WhichRunner(FakeRunner):
    """The fake runner with ``which`` (fw_reset's pick_tool asks it): every program but the missing ones is there."""

    def which(self, program):
        return None if program in self.missing else "/usr/bin/" + program


# BlueField-3, DOCA 2.9.2 host (level 3 supported, sync 1 supported and the default).
FWQ_BF3 = "bf3-mlxfwreset-q-blockquote"
LEVEL3_ROW = "3: Driver restart and PCI reset                                  -"
SYNC1_ROW = "1: Driver is the owner                                           -"


def test_reset_levels_level3_and_sync1_supported(run_module):
    answers = dpu_answers()
    answers[("mlxfwreset", "-d", BF3, "q")] = ok("mlxfwreset-query", FWQ_BF3)
    runner = WhichRunner(answers)
    failed, result = run_module(dpu_info, {"filter": ["firmware", "reset_levels"]}, runner)
    assert not failed, result
    assert runner.cmd == [["mst", "status", "-v"], ["flint", "-d", BF3, "q"], ["mlxfwreset", "-d", BF3, "q"]]
    dev = result["devices"][0]
    assert dev["reset_levels"] == {"available": True, "tool": "mlxfwreset", "level3": True, "sync1": True}
    assert result["filter"] == ["firmware", "reset_levels"]
    assert result["tools_missing"] == []


def test_reset_levels_level3_not_supported(run_module):
    text = fixture_text("mlxfwreset-query", FWQ_BF3)
    assert text.count(LEVEL3_ROW + "Supported") == 1 and text.count(SYNC1_ROW + "Supported") == 1
    text = text.replace(LEVEL3_ROW + "Supported", LEVEL3_ROW + "Not Supported")
    answers = dpu_answers()
    answers[("mlxfwreset", "-d", BF3, "q")] = (0, text, "")
    answers[("mlxfwreset", "--version")] = NOT_MODELLED
    runner = WhichRunner(answers)
    failed, result = run_module(dpu_info, {"filter": ["reset_levels", "tool_versions"]}, runner)
    assert not failed, result
    assert result["devices"][0]["reset_levels"] == {"available": True, "tool": "mlxfwreset", "level3": False,
                                                    "sync1": True}
    assert result["tool_versions"] == {"mst": None, "mlxfwreset": None}
    # sync 1 not supported either (the sync row of the same capture)
    answers[("mlxfwreset", "-d", BF3, "q")] = (0, text.replace(SYNC1_ROW + "Supported", SYNC1_ROW + "Not Supported"),
                                               "")
    failed, result = run_module(dpu_info, {"filter": ["reset_levels"]}, WhichRunner(answers))
    assert not failed, result
    assert result["devices"][0]["reset_levels"] == {"available": True, "tool": "mlxfwreset", "level3": False,
                                                    "sync1": False}


def test_reset_levels_with_mstfwreset_only_give_the_pci_address(run_module):
    # mstflint's tools refuse an mst device file (_cards.check_device): the card's PCI address with its domain.
    bdf = "0000:03:00.0"
    answers = dpu_answers()
    answers[("mstfwreset", "-d", bdf, "q")] = ok("mlxfwreset-query", "bf3-mstfwreset-q-mroq-2025-from-source")
    runner = WhichRunner(answers, missing={"mlxfwreset"})
    failed, result = run_module(dpu_info, {"filter": ["reset_levels"]}, runner)
    assert not failed, result
    assert runner.cmd == [["mst", "status", "-v"], ["mstfwreset", "-d", bdf, "q"]]
    assert result["devices"][0]["reset_levels"] == {"available": True, "tool": "mstfwreset", "level3": True,
                                                    "sync1": True}
    assert result["tools_missing"] == []


def test_reset_levels_without_any_reset_tool_is_unavailable(run_module):
    runner = WhichRunner(dpu_answers(), missing={"mlxfwreset", "mstfwreset"})
    failed, result = run_module(dpu_info, {"filter": ["mode", "reset_levels"]}, runner)
    assert not failed, result
    dev = result["devices"][0]
    assert dev["reset_levels"] == {"available": False, "reason": "mlxfwreset not found on PATH", "level3": False,
                                   "sync1": False}
    assert dev["mode"]["next_boot"] == "dpu"
    assert result["tools_missing"] == ["mlxfwreset"]
    assert runner.cmd == [["mst", "status", "-v"], ["mlxconfig", "-d", BF3, "-e", "q"], ["mlxfwreset", "-d", BF3, "q"]]


def test_reset_levels_garbage_or_a_failing_tool_fails_naming_the_command(run_module):
    answers = dpu_answers()
    answers[("mlxfwreset", "-d", BF3, "q")] = (0, "\x00\x01 nothing like mlxfwreset\n", "")
    failed, result = run_module(dpu_info, {"filter": ["reset_levels"]}, WhichRunner(answers))
    assert failed
    assert result["msg"].startswith("parse mlxfwreset -d %s q output failed:" % BF3), result["msg"]
    assert "bluefleet parse mlxfwreset-query" in result["msg"]
    assert result["cmd"] == ["mlxfwreset", "-d", BF3, "q"]
    # an error mlxfwreset prints (shared/corpus/mlxfwreset/FORMAT-from-source.md)
    answers[("mlxfwreset", "-d", BF3, "q")] = (1, "-E- Only root user can run this tool.\n", "")
    failed, result = run_module(dpu_info, {"filter": ["reset_levels"]}, WhichRunner(answers))
    assert failed
    assert result["msg"] == ("query reset levels of %s with mlxfwreset failed: -E- Only root user can run this tool."
                             % BF3)
    assert result["rc"] == 1


def test_reset_levels_not_in_a_default_run(run_module):
    answers = dpu_answers()
    answers[("mlxfwreset", "-d", BF3, "q")] = ok("mlxfwreset-query", FWQ_BF3)
    runner = WhichRunner(answers)
    failed, result = run_module(dpu_info, {}, runner)
    assert not failed, result
    assert runner.cmd == DPU_ARGV
    assert "reset_levels" not in result["devices"][0]
    assert "reset_levels" not in result["filter"]
    assert "reset_levels" not in dpu_info.DEFAULT_SECTIONS and "reset_levels" in dpu_info.SECTIONS


# --- tools: tools_info's report in the same run (preflight's one read of a node) -----------------------------------

def test_tools_section_reports_as_tools_info_and_does_not_fail(run_module):
    """A Debian 12 DPU: mstflint and strongSwan 5.9.8 (recorded version lines). The report equals tools_info's
    (without changed and cmd), and an unmet requirement is reported in missing, not raised."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import ADVICE
    from ansible_collections.bluefleet.dpu.plugins.modules import tools_info

    answers = dpu_answers()
    answers[("mstflint", "--version")] = ok("tool-version", "debian12-mstflint-version")
    answers[("swanctl", "--help")] = ok("tool-version", "debian12-swanctl-help-head")
    missing = ("flint", "mst", "bfb-install", "doca-installer", "nft")
    runner = WhichRunner(answers, missing=missing)
    failed, result = run_module(dpu_info, {"filter": ["firmware", "tools"],
                                           "require": ["firmware", "ipsec_packet_offload"]}, runner)
    assert not failed, result
    assert runner.cmd[-2:] == [["mstflint", "--version"], ["swanctl", "--help"]]
    assert result["tools"]["firmware_tools"] == "mstflint"
    assert result["tools"]["missing"] == [
        "ipsec_packet_offload: " + ADVICE["ipsec_packet_offload"] + " (found: strongSwan 5.9.8)"]
    failed, alone = run_module(tools_info, {"require": ["firmware", "ipsec_packet_offload"]},
                               WhichRunner(answers, missing=missing))
    assert failed and alone["msg"] == "check the tools failed: " + "; ".join(result["tools"]["missing"])
    assert {k: v for k, v in alone.items() if k not in ("changed", "cmd", "msg", "cmd_list")} == result["tools"]


def test_tools_section_met_and_not_in_the_default(run_module):
    answers = dpu_answers()
    answers[("flint", "--version")] = (0, "flint, mft 4.30.1-8, built on Oct 10 2024, 09:51:39. Git SHA Hash: N/A\n",
                                       "")
    answers[("nft", "--version")] = ok("tool-version", "debian12-nft-version")
    runner = WhichRunner(answers, missing=("mstflint", "swanctl", "bfb-install", "doca-installer"))
    failed, result = run_module(dpu_info, {"filter": ["tools"], "require": ["firmware", "mst"]}, runner)
    assert not failed, result
    assert result["tools"]["missing"] == [] and result["tools"]["firmware_tools"] == "mft"
    assert result["tools"]["tools"]["nftables"] == {"present": True, "path": "/usr/bin/nft", "version": "1.0.6",
                                                    "note": None}
    assert "tools" not in dpu_info.DEFAULT_SECTIONS and "tools" in dpu_info.SECTIONS
    failed, result = run_module(dpu_info, {}, WhichRunner(dpu_answers()))
    assert not failed and "tools" not in result


def test_require_without_the_tools_section_is_refused(run_module):
    runner = WhichRunner(dpu_answers())
    failed, result = run_module(dpu_info, {"require": ["firmware"]}, runner)
    assert failed and runner.cmd == []
    assert result["msg"] == ("gather DPU facts failed: require=['firmware'] is what the section tools checks, and "
                             "filter does not ask for it: add tools to filter, or leave require out")


def test_tool_versions_and_tools_ask_flint_for_its_version_once(run_module):
    answers = dpu_answers()
    answers[("flint", "--version")] = (0, "flint, mft 4.30.1-8, built on Oct 10 2024, 09:51:39. Git SHA Hash: N/A\n",
                                       "")
    runner = WhichRunner(answers, missing=("mstflint", "swanctl", "bfb-install", "doca-installer", "nft"))
    failed, result = run_module(dpu_info, {"filter": ["firmware", "tool_versions", "tools"]}, runner)
    assert not failed, result
    assert runner.cmd.count(["flint", "--version"]) == 1
    assert result["tool_versions"]["flint"].startswith("flint, mft 4.30.1-8")
    assert result["tools"]["tools"]["mft"]["version"] == "4.30.1-8"


def test_gpu_filter_reads_the_gpus_in_the_same_run_as_gpu_info_would(run_module, fake_runner, tmp_path):
    """On a GPU host one module run reads the cards and the GPUs (preflight's read): the section gpu_info is what
    gpu_info returns from the same tool outputs, the card read's cmd stays the card read's."""
    # imported here: test_module_imports imports this file and counts the module_utils dpu_info's read imports
    from ansible_collections.bluefleet.dpu.plugins.modules import gpu_info
    from test_gpu_info import ARGV as GPU_ARGV
    from test_gpu_info import answers as gpu_answers

    misc = tmp_path / "dev" / "rshim0" / "misc"
    misc.parent.mkdir(parents=True)
    misc.write_text(fixture_text("rshim-misc", "bf3-misc-display-level-2-log"))
    runner = fake_runner({**host_answers(), **gpu_answers()})
    failed, result = run_module(dpu_info, {"fs_root": str(tmp_path), "gpu_filter": ["gpus", "topology", "peermem"]},
                                runner)
    assert not failed, result
    card_argv = [a for a in runner.cmd if a not in GPU_ARGV]
    assert runner.cmd == card_argv + GPU_ARGV  # the GPUs after the cards, each command once
    assert result["cmd"] == card_argv
    alone = fake_runner(gpu_answers())
    failed, expected = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["gpus", "topology", "peermem"]},
                                  alone)
    assert not failed, expected
    got = dict(result["gpu_info"])
    assert "changed" not in got
    for key in ("cmd", "read_at", "changed"):
        got.pop(key, None)
        expected.pop(key, None)
    assert got == expected
    assert result["devices"][0]["part_number"] == "MBF2H516C-CECO_Ax"


def test_no_gpu_filter_reads_no_gpu(run_module, fake_runner):
    runner = fake_runner(dpu_answers())
    failed, result = run_module(dpu_info, {}, runner)
    assert not failed, result
    assert "gpu_info" not in result and runner.cmd == DPU_ARGV


def test_a_failed_gpu_read_fails_the_task_naming_the_gpus(run_module, fake_runner, tmp_path):
    from test_gpu_info import answers as gpu_answers

    answers = {**dpu_answers(), **gpu_answers()}
    answers[("nvidia-smi",)] = (9, "", "NVIDIA-SMI has failed because it couldn't communicate with the driver\n")
    failed, result = run_module(dpu_info, {"gpu_filter": ["gpus"], "fs_root": str(tmp_path)}, fake_runner(answers))
    assert failed
    assert result["msg"].startswith("read the GPUs: ") and "nvidia-smi" in result["msg"]
    assert result["cmd_list"][-1] == ["nvidia-smi"]


def test_gpu_filter_refuses_unknown_sections(run_module, fake_runner):
    failed, result = run_module(dpu_info, {"gpu_filter": ["gpus", "fans"]}, fake_runner(dpu_answers()))
    assert failed and "gpu_filter" in result["msg"] and "fans" in result["msg"]
