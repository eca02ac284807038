"""_bfb helpers: bf.cfg rendering (quoting, secrets, refusals), rshim misc checks, console classification.

Consoles: the real BlueField-3 install (tests/unit/fixtures/parsers/bfb-install/bf3-bf-bundle-2.7.0-with-bfcfg)
and failure lines in the strings rshim/FORMAT-from-source.md and hardware-facts.md section 4 name.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _bfb
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rshim import parse_bfb_install, parse_rshim_misc

from bluefleet.parse import strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"


def fixture_text(kind, name):
    return strip_header((FIXTURES / kind / (name + ".txt")).read_text(encoding="utf-8"))


def test_values_are_single_quoted_so_the_shell_takes_them_literally(tmp_path):
    values, secrets = _bfb.bf_cfg_settings({"A": "it's $(reboot) `x` \"q\"", "B": True, "C": 9000})
    text = _bfb.render_bf_cfg(values)
    assert secrets == []
    cfg = tmp_path / "bf.cfg"
    cfg.write_text(text)
    out = subprocess.run(["bash", "-c", '. "$1"; printf "%s|%s|%s" "$A" "$B" "$C"', "x", str(cfg)],
                         capture_output=True, text=True, check=True, timeout=10).stdout
    assert out == "it's $(reboot) `x` \"q\"|yes|9000"


def test_secrets_are_listed_and_masked():
    values, secrets = _bfb.bf_cfg_settings({"UPDATE_DPU_OS": "yes"}, {"BMC_PASSWORD": "pw"}, "$6$salt$hash", False)
    assert list(values) == ["UPDATE_DPU_OS", "WITH_NIC_FW_UPDATE", "BMC_PASSWORD", "ubuntu_PASSWORD"]
    assert secrets == ["BMC_PASSWORD", "ubuntu_PASSWORD"]
    assert _bfb.masked(values, secrets) == {"UPDATE_DPU_OS": "yes", "WITH_NIC_FW_UPDATE": "no",
                                            "BMC_PASSWORD": "********", "ubuntu_PASSWORD": "********"}
    assert _bfb.scrub("a pw b $6$salt$hash", ["pw", "$6$salt$hash"]) == "a ******** b ********"


@pytest.mark.parametrize("settings, secrets, hashed, hostname, expected", [
    ({"bad key": "x"}, None, None, None, "is not a shell variable name"),
    ({"BMC_PASSWORD": "x"}, None, None, None, "looks like a credential"),
    ({"A": "two\nlines"}, None, None, None, "has a line break"),
    ({"A": ["x"]}, None, None, None, "must be a string, number or boolean"),
    (None, {"1X": "y"}, None, None, "bf_cfg_secrets key '1X'"),
    (None, None, "plain-password", None, "not a crypt(3) hash"),
    (None, None, None, "bad_host;reboot", "is not a valid host name"),
    ({"bfb_modify_os": "x"}, None, None, "dpu1", "cannot be combined"),
])
def test_refusals_name_the_input(settings, secrets, hashed, hostname, expected):
    with pytest.raises(_bfb.BfbError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        values, _secret_keys = _bfb.bf_cfg_settings(settings, secrets, hashed)
        _bfb.render_bf_cfg(values, hostname)


def test_nothing_to_write_is_empty():
    assert _bfb.render_bf_cfg({}) == ""


def test_generation_and_mode_from_misc():
    misc = parse_rshim_misc(fixture_text("rshim-misc", "bf3-misc-display-level-2-log"))
    assert _bfb.generation(misc["dev_info"]) == 3
    assert _bfb.misc_mode(misc["bf_mode"]) is None  # this capture prints "BF_MODE Unknown"
    assert _bfb.misc_problem(misc, "/dev/rshim0") is None
    assert _bfb.generation("N/A") is None
    assert _bfb.misc_mode("NIC mode") == "nic"
    assert _bfb.misc_mode("DPU mode") == "dpu"


def test_drop_mode_is_a_problem():
    misc = parse_rshim_misc(fixture_text("rshim-misc", "man-misc-bf2-doc-example").replace(
        "DROP_MODE       0", "DROP_MODE       1"))
    assert "drop mode" in _bfb.misc_problem(misc, "/dev/rshim0")


def test_real_install_console_is_a_success():
    parsed = parse_bfb_install(fixture_text("bfb-install", "bf3-bf-bundle-2.7.0-with-bfcfg"))
    assert _bfb.classify_console(parsed, 0) == {"ok": True, "marker": "Installation finished", "kind": None,
                                                "reason": None}
    assert _bfb.classify_console(parsed, 1)["kind"] == "failed"
    assert _bfb.classify_console(parsed, 124, timed_out=True)["kind"] == "timeout"


@pytest.mark.parametrize("lines, rc, kind", [
    ("Error: /dev/rshim0 is not a valid rshim device.", 1, "rshim_unavailable"),
    (" INFO[PSC]: PSC BL1 START\n ERR[PSC]: Invalid FW Package\nBlueField Update Failed", 1, "wrong_generation"),
    (" INFO[PSC]: PSC BL1 START\n ERR[PSC]: INTEGRITY_FAIL\nBlueField Update Failed", 1, "corrupt"),
    (" INFO[MISC]: Installing OS image\n INFO[MISC]: CRITICAL ERROR: no eMMC", 0, "critical"),
    ("Error: Need to provide rshim device name.", 1, "usage"),
    (" INFO[PSC]: PSC BL1 START\n INFO[BL2]: start\nBlueField Update Failed", 1, "stopped"),
    ("Collecting BlueField booting status. Press Ctrl+C to stop\n INFO[BL2]: start", 0, "stopped"),
    ("Collecting BlueField booting status. Press Ctrl+C to stop\n INFO[BL2]: start", 2, "failed"),
])
def test_failures_are_classified(lines, rc, kind):
    out = _bfb.classify_console(parse_bfb_install(lines + "\n"), rc)
    assert out["ok"] is False
    assert out["kind"] == kind
    assert out["reason"]


@pytest.mark.parametrize("marker", _bfb.SUCCESS_MARKERS)
def test_every_finish_marker_ends_a_run(marker):
    parsed = parse_bfb_install("Collecting BlueField booting status. Press Ctrl+C to stop\n INFO[MISC]: %s\n" % marker)
    assert _bfb.classify_console(parsed, 0)["marker"] == marker
    assert _bfb.classify_console(parsed, 0)["ok"] is True
