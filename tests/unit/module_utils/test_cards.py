"""Card discovery and reading shared by the modules (``_cards``), driven by the parser fixtures (real
captures, provenance in their headers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import (
    card_handles,
    flint_versions,
    full_bdf,
    group_by_card,
    known,
    only_card,
    pci_device,
    query_nvconfig,
    read_mst,
    side_of,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import RC_MISSING, CommandResult
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError

from bluefleet.parse import strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"
MST = ("mst", "status", "-v")


def fixture(kind, name):
    return strip_header((FIXTURES / kind / (name + ".txt")).read_text(encoding="utf-8"))


class Runner:
    def __init__(self, answers):
        self.answers = {tuple(k): v for k, v in answers.items()}
        self.cmd = []

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        if tuple(argv) not in self.answers:
            return CommandResult(argv, RC_MISSING, "", "%s: command not found" % argv[0], missing=True)
        rc, out, err = self.answers[tuple(argv)]
        return CommandResult(argv, rc, out, err)


def functions_of(name):
    return read_mst(Runner({MST: (0, fixture("mst-status", name), "")}))[0]


def test_side_of_looks_for_host_pf_representors():
    assert side_of(["p0", "pf0hpf", "en3f0pf0sf0"]) == "dpu"
    assert side_of(n for n in ["ens7f0", "ens7f1"]) == "host"
    assert side_of(["pf0hpfx", "xpf0hpf", "pfhpf"]) == "host"
    assert side_of([]) == "host"


def test_pci_helpers():
    assert known("/dev/mst/mt41692_pciconf0") and not known("NA") and not known(None) and not known("")
    assert full_bdf("E2:00.1") == "0000:e2:00.1"
    assert full_bdf("0000:37:00.4") == "0000:37:00.4"
    assert full_bdf(None) is None
    assert pci_device("37:00.4") == "0000:37:00"


def test_bf3_arm_side_is_one_card_on_the_dpu_side():
    functions = functions_of("bf3-arm-mst-status-v")
    assert side_of(n for f in functions for n in f["net"]) == "dpu"
    assert only_card(functions) == "/dev/mst/mt41692_pciconf0"
    cards = group_by_card(functions)
    assert len(cards) == 1
    card = cards[0]
    assert (card["mst"], card["pci"], card["bluefield"], card["device_type"]) == (
        "/dev/mst/mt41692_pciconf0", "03:00.0", True, "BlueField3(rev:1)")
    assert card["netdevs"] == ["pf0hpf", "en3f0pf0sf0", "p0", "p1", "pf1hpf", "en3f1pf1sf0"]
    assert card["rdma_devices"] == ["mlx5_0", "mlx5_1"]
    assert [f["pci"] for f in card["functions"]] == ["03:00.0", "03:00.1"]


def test_bf2_host_side_is_a_host():
    functions = functions_of("bf2-host-mst-status-v-fixture")
    assert side_of(n for f in functions for n in f["net"]) == "host"
    assert card_handles(functions) == ["/dev/mst/mt41686_pciconf0"]


def test_two_connectx7_without_mst_driver_fail_with_the_list():
    functions = functions_of("cx7-mst-status-v-container-ocp")
    assert card_handles(functions) == ["0d:00.0", "37:00.0", "37:00.1", "37:00.2", "37:00.3", "37:00.4", "37:00.5",
                                       "37:00.6", "37:00.7"]
    with pytest.raises(ToolError) as caught:
        only_card(functions, "the result")
    assert caught.value.msg.startswith("find the card failed: mst status -v lists 9 cards (0d:00.0, 37:00.0, ")
    assert caught.value.msg.endswith("; set the device option")
    assert caught.value.result == "the result"
    cards = group_by_card(functions)
    assert [(c["pci"], c["mst"], c["device_type"], len(c["functions"])) for c in cards] == [
        ("0d:00.0", "0d:00.0", "ConnectX7(rev:0)", 1), ("37:00.0", "37:00.0", "ConnectX7(rev:0)", 8)]
    assert all(f["mst"] is None for f in cards[1]["functions"])


def test_no_card_says_none():
    with pytest.raises(ToolError, match=r"lists 0 cards \(none\)"):
        only_card([])


def test_read_mst_failures_name_the_command():
    with pytest.raises(ToolError) as caught:
        read_mst(Runner({}), missing_hint="; install MFT")
    assert caught.value.msg == "find the card with mst status -v failed: mst not found on PATH; install MFT"
    with pytest.raises(ToolError) as caught:
        read_mst(Runner({MST: (0, "garbage\n", "")}))
    assert caught.value.msg.startswith("find the card failed: cannot parse mst-status output")


def test_query_nvconfig_returns_the_device_block():
    text = fixture("mlxconfig-query", "bf3-e-query-wide-columns-go-test-fixture")
    runner = Runner({("mstconfig", "-d", "03:00.0", "-e", "q"): (0, text, "")})
    block, result = query_nvconfig(runner, "03:00.0", tool="mstconfig")
    assert result.stdout == text
    assert "params" in block and block["params"]
    assert runner.cmd == [["mstconfig", "-d", "03:00.0", "-e", "q"]]


def test_query_nvconfig_error_lines_fail():
    text = fixture("mlxconfig-query", "bf2-error-nv-access-registers")
    runner = Runner({("mlxconfig", "-d", "d", "-e", "q"): (0, text, "")})
    with pytest.raises(ToolError) as caught:
        query_nvconfig(runner, "d")
    assert caught.value.msg == ("query NV configuration of d failed: "
                                "-E- Error when trying to check if NV access registers are supported")


def test_flint_versions():
    text = fixture("flint-query", "cx7-flint-query-after-reset")
    runner = Runner({("flint", "-d", "d", "q"): (0, text, "")})
    assert flint_versions(runner, "d", "query firmware of d") == {"flashed": "28.43.1014", "running": "28.43.1014"}
    running = text.replace("FW Version:", "FW Version(Running):      28.41.1000\nFW Version:", 1)
    runner = Runner({("flint", "-d", "d", "q"): (0, running, "")})
    assert flint_versions(runner, "d", "query firmware of d") == {"flashed": "28.43.1014", "running": "28.41.1000"}
    assert flint_versions(Runner({}), "d", "query firmware of d", allow_missing=True) is None
    with pytest.raises(ToolError, match=r"^query NIC firmware of d failed: flint not found on PATH$"):
        flint_versions(Runner({}), "d", "query NIC firmware of d")
