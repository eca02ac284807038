"""Transcript tests against real captures kept as parser fixtures (tests/unit/fixtures/parsers).

These captures were collected for the parsers (each keeps its provenance header); they add
layouts the corpus lacks. Covered:

* bfb-install/bf2-fwbundle-3.2.0-nic-fw-version.txt: the current bfb-install script on a
  BlueField-2 with a firmware-only bundle; exact but the pv bar.
* mlxfwmanager-query/bf2-online-u-after-bfb-fw-running.txt: right after that install, the NIC
  firmware still pending (FW (Running) row); exact but the masked GUID/MAC values.
* mlxfwreset-query/bf3-mlxfwreset-q-blockquote.txt: ``mlxfwreset q`` of a BlueField-3; trailing
  spaces ignored (absent in the copy) and the final blank line (print's newline).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpusim import images

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"


def fixture(rel: str) -> str:
    path = FIXTURES / rel
    if not path.exists():
        pytest.fail("fixture %s is missing" % path)
    return path.read_text(encoding="utf-8").split("\n# ---\n", 1)[1]


def bf2_fwbundle_install(twin, tmp_path, monkeypatch):
    pair = tmp_path / "pair"
    host = twin("bluefield2", card_dir=pair, name="host")
    dpu = twin("bluefield2", role="dpu", card_dir=pair, name="dpu")
    with host.edit() as node:
        node.cards[0].data["identity"] = {"lifecycle": "GA Non-Secured"}
    bfb = images.make_image("bfb", "bluefield2", "bf-fwbundle-3.2.0-113_25.10-prod",
                            tmp_path / "bf-fwbundle-3.2.0-113_25.10-prod.bfb", nic_fw_version="24.47.1026",
                            bundle_size=693 << 20)
    monkeypatch.setenv("DPUSIM_BFB_INSTALL_STYLE", "current")
    rc, out, err = host.run("bfb-install", "--bfb", str(bfb), "--rshim", "rshim0")
    assert rc == 0, err + out
    return host, dpu, out


def test_bfb_install_current_script_bf2_fwbundle(twin, tmp_path, monkeypatch):
    expected = fixture("bfb-install/bf2-fwbundle-3.2.0-nic-fw-version.txt").rstrip("\n").split("\n")
    host, dpu, out = bf2_fwbundle_install(twin, tmp_path, monkeypatch)
    got = out.rstrip("\n").split("\n")
    assert len(got) == len(expected)
    pv = expected[3].index("[", expected[3].index("/s]") + 1)
    assert got[3][:pv] == expected[3][:pv] == " 693MiB 0:01:52 [6.19MiB/s] "
    assert got[:3] + got[4:] == expected[:3] + expected[4:]
    assert dpu.run("bfver")[1].endswith("OS Release Version: DOCA_1.3.0_BSP_3.9.0_Ubuntu_20.04-6.signed\n"), \
        "a firmware-only bundle leaves the OS alone"


def test_mlxfwmanager_after_bf2_fwbundle(twin, tmp_path, monkeypatch):
    expected = fixture("mlxfwmanager-query/bf2-online-u-after-bfb-fw-running.txt").rstrip("\n").split("\n")
    host, _dpu, _ = bf2_fwbundle_install(twin, tmp_path, monkeypatch)
    img = images.make_image("nic-fw", "bluefield2", "24.43.1014", tmp_path / "fw.bin",
                            roms={"PXE": "3.7.0500", "UEFI": "14.36.0016"})
    rc, out, _ = host.run("mlxfwmanager", "-u", "-i", str(img))
    got = out.rstrip("\n").split("\n")
    assert rc == 0 and len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        if "*" in want:
            assert have.split(":")[0] == want.split(":")[0]
        else:
            assert have == want


def test_mlxfwreset_query_bf3(twin):
    expected = fixture("mlxfwreset-query/bf3-mlxfwreset-q-blockquote.txt")
    t = twin("bluefield3")
    rc, out, _ = t.run("mlxfwreset", "-d", "/dev/mst/mt41692_pciconf0", "q")
    assert rc == 0
    # level 0 is Supported (default) in the capture: a live-patchable firmware was pending there.
    with t.edit() as node:
        fw = node.cards[0].data["firmware"]
        fw["banks"][1] = dict(fw["banks"][0], version="32.41.1010")
        fw["active_bank"] = 1
    rc, out, _ = t.run("mlxfwreset", "-d", "/dev/mst/mt41692_pciconf0", "q")
    assert [x.rstrip() for x in out.rstrip("\n").split("\n")] == expected.rstrip("\n").split("\n")


def test_mlxfwreset_query_layout_follows_the_profile(twin, monkeypatch):
    """ConnectX-7 (profile mlxfwreset_layout 2025) prints the MROQ/MRSI layout of mstflint >= 4.33 with the
    fixture's paddings; the same card with the 2022 layout prints the MCAM ``Reset-sync`` text."""
    want = fixture("mlxfwreset-query/bf3-mstfwreset-q-mroq-2025-from-source.txt").split("\n")
    t = twin("connectx7")
    rc, out, _ = t.run("mlxfwreset", "-d", "/dev/mst/mt4129_pciconf0", "q")
    got = out.split("\n")
    assert rc == 0
    assert got[:2] == want[:2] == ["The following query is relevant only for reset-type 0:", ""]
    for line in ("Reset sync (relevant only for reset-level 3):",
                 "2: FW is the owner                                               -Not Supported ",
                 "Reset request method (relevant only for reset-level 3):",
                 "0: Link Disable method                                           -Supported     (default)"):
        assert line in got
    assert "Reset-sync (relevant only for reset-level 3):" not in got
    # the MRSI lines: the fixture's padding, the twin's values (a cold boot: no warm reset yet)
    assert want.index("Reset-reason:" + " " * 52 + "Warm reset    ") > 0
    assert "Reset-reason:" + " " * 52 + "Cold reset    " in got
    assert "Timestamp (number of clock cycles) since last cold reset:        0             " in got
    ok = t.run("mlxfwreset", "-d", "/dev/mst/mt4129_pciconf0", "-y", "-l", "3", "r")
    assert ok[0] == 0, ok
    out = t.run("mlxfwreset", "-d", "/dev/mst/mt4129_pciconf0", "q")[1].split("\n")
    assert "Reset-reason:" + " " * 52 + "Warm reset    " in out
    monkeypatch.setenv("DPUSIM_MLXFWRESET_LAYOUT", "2022")
    old = t.run("mlxfwreset", "-d", "/dev/mst/mt4129_pciconf0", "q")[1].split("\n")
    assert old[0] == "Reset-levels:" and "Reset-sync (relevant only for reset-level 3):" in old
    assert not any(line.startswith(("Reset-reason", "Reset request")) for line in old)
