"""Layouts of the firmware/MFT/rshim tools that no single capture shows, derived in code from the
fixtures and the print formats in shared/corpus/*/FORMAT-*.md, plus garbage that must be refused.

Each derived text names the FORMAT fact it follows; no fixture file is edited.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError

from bluefleet.parse import discover_parsers, strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"
PARSERS = discover_parsers()
MY_KINDS = [
    "mst-status", "lspci", "mlxconfig-query", "mlxconfig-set", "flint-query", "flint-burn", "mlxfwmanager-query",
    "mlxfwreset-query", "mlxfwreset-reset", "mlxprivhost-query", "rshim-misc", "bfb-install", "mlnx-release", "bfver",
    "mlxbf-bootctl",
]


def body(kind, name):
    return strip_header((FIXTURES / kind / f"{name}.txt").read_text(encoding="utf-8"))


def parse(kind, text):
    return PARSERS[kind](text)


# ---------------------------------------------------------------- mlxconfig


def test_mlxconfig_ro_and_modified_prefix_2023_layout():
    # FORMAT: 2023-07+ prefix is "%s%s     " = '*' or ' ', 'RO' or '  ', 5 spaces (8 characters)
    text = body("mlxconfig-query", "bf3-b3220-mstconfig-q-dpu-mode-head")
    text = text.replace("        INTERNAL_CPU_MODEL ", "*RO     INTERNAL_CPU_MODEL ", 1)
    text = text.replace("        NUM_OF_VFS ", " RO     NUM_OF_VFS ", 1)
    text = text.replace("        SRIOV_EN ", "*       SRIOV_EN ", 1)
    params = parse("mlxconfig-query", text)["devices"][0]["params"]
    assert params["INTERNAL_CPU_MODEL"] == {
        "default": None, "current": None, "next_boot": "EMBEDDED_CPU(1)", "modified": True, "read_only": True,
    }
    assert params["NUM_OF_VFS"]["read_only"] and not params["NUM_OF_VFS"]["modified"]
    assert params["NUM_OF_VFS"]["next_boot"] == 16
    assert params["SRIOV_EN"]["modified"] and not params["SRIOV_EN"]["read_only"]


def test_mlxconfig_values_overflowing_a_16_wide_column_are_split():
    # FORMAT: values longer than the %-16s column overflow with no separating space (pre-2024 releases)
    text = body("mlxconfig-query", "bf2-query-e-old-format-abridged").replace(
        "         MEMIC_BAR_SIZE                      0               0               0               ",
        "*        LAG_RESOURCE_ALLOCATION             DEVICE_DEFAULT(0)DEVICE_DEFAULT(0)ENABLE(1)       ",
    )
    param = parse("mlxconfig-query", text)["devices"][0]["params"]["LAG_RESOURCE_ALLOCATION"]
    got = (param["default"], param["current"], param["next_boot"])
    assert got == ("DEVICE_DEFAULT(0)", "DEVICE_DEFAULT(0)", "ENABLE(1)")
    assert param["modified"] is True


def test_mlxconfig_several_devices():
    text = body("mlxconfig-query", "bf2-query-e-old-format-abridged") + body("mlxconfig-query", "cx4-query-elided")
    devices = parse("mlxconfig-query", text)["devices"]
    assert [d["device"] for d in devices] == ["/dev/mst/mt41686_pciconf0", "/dev/mst/mt4115_pciconf0"]
    assert devices[0]["params"]["MEMIC_BAR_SIZE"]["current"] == 0
    assert devices[1]["params"]["NUM_OF_VFS"]["next_boot"] == 8


def test_mlxconfig_row_with_wrong_number_of_values_names_the_line():
    text = body("mlxconfig-query", "bf2-query-e-old-format-abridged").replace("_256KB(1)       _256KB(1)       ", "", 1)
    with pytest.raises(ParseError) as err:
        parse("mlxconfig-query", text)
    assert "MEMIC_SIZE_LIMIT" in str(err.value) and err.value.line_no > 0


def test_mlxconfig_split_value_helper():
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import split_value  # noqa: PLC0415

    assert split_value("EMBEDDED_CPU(1)") == ("EMBEDDED_CPU", 1)
    assert split_value(16) == (None, 16)
    assert split_value("Array[0..7]") == ("Array[0..7]", None)
    assert split_value(None) == (None, None)


def test_mlxconfig_set_declined_is_not_applied():
    text = body("mlxconfig-set", "cx5-mstconfig-set-sriov-4vfs")
    text = text.replace("[n] : y", "[n] : n").replace("Applying... Done!\n", "").replace(
        "-I- Please reboot machine to load new configurations.\n", "")
    data = parse("mlxconfig-set", text)
    assert data["answer"] == "n" and data["applied"] is False and data["reboot_required"] is False
    assert data["changes"]["NUM_OF_VFS"] == {"next_boot": 4, "new": 4}


def test_mlxconfig_set_power_cycle_message():
    # FORMAT: 5th-gen HCA when MFRL fails -> "Please power cycle machine to load new configurations."
    text = body("mlxconfig-set", "cx5-mstconfig-set-sriov-4vfs").replace(
        "Please reboot machine", "Please power cycle machine")
    data = parse("mlxconfig-set", text)
    assert data["applied"] and data["power_cycle_required"] and not data["reboot_required"]


# ---------------------------------------------------------------- mst


def test_mst_domain_prefixed_bdf_widens_the_pci_column():
    # FORMAT-observed: domain-prefixed BDFs widen the PCI column to 16
    text = body("mst-status", "bf2-host-mst-status-v-fixture")
    text = text.replace("PCI       RDMA", "PCI             RDMA").replace("e2:00.1   ", "0000:e2:00.1    ")
    devices = parse("mst-status", text)["devices"]
    assert devices[0]["pci"] == "0000:e2:00.1" and devices[0]["rdma"] == "mlx5_1" and devices[0]["numa"] == 1


def test_mst_truncated_row_is_refused():
    row = "/dev/mst/mt41692_pciconf0.1   03:00.1   mlx5_1"
    text = body("mst-status", "bf3-arm-mst-status-v").replace(row, "/dev/mst/mt4")
    with pytest.raises(ParseError) as err:
        parse("mst-status", text)
    assert err.value.line_no == 8  # MST modules (4 lines), PCI devices (2), the header, then this row


# ---------------------------------------------------------------- flint


def test_flint_narrow_21_column_labels_and_running_version():
    # FORMAT: very old flint used a 21-column label field; "FW Version(Running):" only between burn and reset
    lines = body("flint-query", "cx7-flint-query-secure-fw").split("\n")
    narrowed = []
    for line in lines:
        label, sep, value = line.partition(":")
        narrowed.append(f"{label + sep:<21}{value.strip()}" if sep and not line.startswith(" ") else line)
    narrowed.insert(2, "FW Version(Running): 28.42.1000")
    data = parse("flint-query", "\n".join(narrowed))
    assert data["fw_version"] == "28.43.1014" and data["running_fw_version"] == "28.42.1000"
    assert data["psid"] == "MT_0000001244" and data["security_attributes"] == "secure-fw"
    assert data["base_guid"] == "e09d730300126744" and data["base_guid_count"] == 16


def test_flint_burn_failed_step_is_not_ok():
    ok_line = "Restoring signature                     - OK"
    text = body("flint-burn", "cx3-winmft-burn-fs2-same-version").replace(ok_line, ok_line[:-2] + "FAILED")
    data = parse("flint-burn", text)
    assert data["ok"] is False and data["steps"][-1] == {"step": "Restoring signature", "status": "FAILED"}


def test_flint_burn_progress_rewritten_with_carriage_returns():
    # FORMAT: progress is rewritten in place with \r and "NN%" before "OK"
    text = body("flint-burn", "cx4lx-mstflint-burn-allow-psid-change").replace(
        "Burning FW image without signatures -   1%\n\n",
        "Burning FW image without signatures -   1%\rBurning FW image without signatures -  57%\r")
    data = parse("flint-burn", text)
    assert data["ok"] is True
    assert data["steps"][0] == {"step": "Burning FW image without signatures", "status": "OK"}


# ---------------------------------------------------------------- mlxprivhost, rshim


def test_mlxprivhost_new_title_and_restricted():
    # FORMAT: title "Host configurations" since 2021; RESTRICTED from ("PRIVILEGED", "RESTRICTED")[level]
    text = body("mlxprivhost-query", "bf2-query-privileged-fixture").replace(
        "Current device configurations:\n------------------------------", "Host configurations\n-------------------"
    ).replace("PRIVILEGED", "RESTRICTED").replace("disable_rshim                 : FALSE",
                                                  "disable_rshim                 : TRUE")
    data = parse("mlxprivhost-query", text)
    assert data["level"] == "RESTRICTED" and data["port_functions"]["disable_rshim"] == "TRUE"


def test_rshim_log_with_leading_space_reads_the_same():
    # FORMAT: rshim_log.c prints " %s[%s]: %s" (leading space); the corpus copy lost it
    text = body("rshim-misc", "bf3-misc-display-level-2-log")
    spaced = "\n".join(" " + line if line.startswith("INFO[") else line for line in text.split("\n"))
    assert parse("rshim-misc", spaced) == parse("rshim-misc", text)


def test_bfb_install_failure():
    # FORMAT: failure prints "BlueField Update Failed"; errors "Error: ..."
    text = body("bfb-install", "bf3-bf-bundle-2.7.0-with-bfcfg").replace(
        " INFO[MISC]: Installation finished", " ERR[MISC]: Installation failed\nBlueField Update Failed")
    data = parse("bfb-install", text)
    assert data["ok"] is False and data["finish_marker"] is None
    assert data["errors"] == ["ERR[MISC]: Installation failed", "BlueField Update Failed"]


# ---------------------------------------------------------------- garbage


GARBAGE = [
    "hello world\nthis is not tool output\n",
    "<html><body>502 Bad Gateway</body></html>\n",
    "Traceback (most recent call last):\n  File \"x\", line 1\n",
]


@pytest.mark.parametrize("kind", MY_KINDS)
@pytest.mark.parametrize("text", GARBAGE, ids=["prose", "html", "traceback"])
def test_garbage_is_refused_naming_kind_and_line(kind, text):
    with pytest.raises(ParseError) as err:
        parse(kind, text)
    assert err.value.kind == kind
    assert err.value.line_no >= 1 and err.value.line
    assert kind in str(err.value)


@pytest.mark.parametrize("kind", [k for k in MY_KINDS if k != "lspci"])
def test_empty_output_is_refused(kind):
    with pytest.raises(ParseError, match="empty"):
        parse(kind, "\n\n")


def test_lspci_empty_is_no_devices():
    assert parse("lspci", "") == {"devices": []}


@pytest.mark.parametrize(
    ("kind", "other"),
    [
        ("mst-status", "flint-query/cx7-flint-query-secure-fw"),
        ("flint-query", "mst-status/bf3-arm-mst-status-v"),
        ("mlxconfig-query", "rshim-misc/readme-misc-bf3-doc-example"),
        ("mlxfwmanager-query", "flint-query/cx4-flint-query-fs3"),
        ("rshim-misc", "lspci/bf2-lspci-4-functions"),
        ("lspci", "mlxbf-bootctl/bf2-ga-secured"),
        ("bfver", "mlxbf-bootctl/bf2-ga-secured"),
        ("mlxprivhost-query", "mlxfwreset-query/bf3-mlxfwreset-q-blockquote"),
        ("mlxfwreset-query", "mlxprivhost-query/bf2-query-privileged-fixture"),
    ],
)
def test_another_tools_output_is_refused(kind, other):
    folder, name = other.split("/")
    with pytest.raises(ParseError):
        parse(kind, body(folder, name))


def test_mst_numa_printed_as_na():
    row = "mlx5_5" + " " * 50 + "0"
    text = body("mst-status", "cx7-mst-status-v-container-ocp")
    assert row in text
    text = text.replace(row, row[:-1] + "NA")
    device = parse("mst-status", text)["devices"][0]
    assert (device["rdma"], device["net"], device["numa"]) == ("mlx5_5", [], None)


def test_lspci_k_driver_lines():
    # pciutils: lspci -k prints "\tKernel driver in use: X" and "\tKernel modules: A, B" under the device
    text = body("lspci", "bf3-host-lspci-grep-bluefield-3").split("\n")
    text.insert(1, "\tKernel driver in use: mlx5_core\n\tKernel modules: mlx5_core")
    device = parse("lspci", "\n".join(text))["devices"][0]
    assert device["kernel_driver"] == "mlx5_core" and device["kernel_modules"] == ["mlx5_core"]


def test_flint_image_query_security_ver_is_a_number():
    # FORMAT: "Security Ver:          %d" (image query only)
    text = body("flint-query", "cx7-flint-query-secure-fw") + "Security Ver:          2\n"
    assert parse("flint-query", text)["security_ver"] == 2
