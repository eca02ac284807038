"""The twin's mstflint names (mstflint, mstconfig, mstfwreset, mstprivhost) refuse an MST device file as Debian 12's
mstflint 4.21.0+1-1 does (texts recorded on this machine for issue 18, in dpusim.tools._common); the MFT names
(flint, mlxconfig, mlxfwreset, mlxprivhost) and a PCI address keep working. Before the fix the twin accepted both."""

from __future__ import annotations

import pytest

DEV = "/dev/mst/mt41692_pciconf0"


@pytest.mark.parametrize("argv, rc, out, err", [
    (["mstflint", "-d", DEV, "q"], 1, "-E- Cannot open Device: %s. Invalid argument. MFE_CR_ERROR\n" % DEV,
     "Unable to parse device name %s\n" % DEV * 2),
    (["mstconfig", "-d", DEV, "q"], 3, "-E- Failed to open the device\n", "Unable to parse device name %s\n" % DEV),
    (["mstfwreset", "-d", DEV, "q"], 1, "-E- Failed to Identify Device: %s, Unable to parse device name %s\n"
     "mopen: Invalid argument\n.\n" % (DEV, DEV), ""),
    (["mstprivhost", "-d", DEV, "query"], 1, "-E- Unknown device '%s'!\n" % DEV, ""),
])
def test_mstflint_names_refuse_an_mst_device_file(twin, argv, rc, out, err):
    t = twin("bluefield3")
    assert t.run(*argv) == (rc, out, err)


@pytest.mark.parametrize("argv", [["mstflint", "-d", "0000:e2:00.0", "q"], ["mstconfig", "-d", "e2:00.0", "q"],
                                  ["mstfwreset", "-d", "0000:e2:00.0", "q"], ["flint", "-d", DEV, "q"],
                                  ["mlxconfig", "-d", DEV, "q"], ["mlxfwreset", "-d", DEV, "q"]])
def test_pci_addresses_and_mft_names_still_work(twin, argv):
    t = twin("bluefield3")
    rc, out, err = t.run(*argv)
    assert rc == 0, (out, err)
