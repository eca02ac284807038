"""Faults connection_drop and host_reboot: the caller's SSH session ends (exit 255, ssh's message), once."""

from __future__ import annotations


def test_connection_drop_ends_the_named_tool_once_and_changes_nothing(twin):
    t = twin("bluefield3", name="gpu7")
    before = t.node().data
    t.cli("fault", "set", "connection_drop", "--tool", "flint")
    assert "Reset-levels:" in t.run("mlxfwreset", "-d", "e2:00.0", "q")[1], "another tool answers normally"
    rc, out, err = t.run("flint", "-d", "e2:00.0", "q")
    assert (rc, out) == (255, "") and err.strip() == "Connection to gpu7 closed by remote host."
    assert "off connection_drop" in t.cli("fault", "list")[1], "fires once"
    rc, out, _ = t.run("flint", "-d", "e2:00.0", "q")
    assert rc == 0 and "FW Version" in out
    after = t.node().data
    assert after["runtime"] == before["runtime"]


def test_host_reboot_reboots_the_node_under_the_tool_once(twin):
    t = twin("bluefield3", name="gpu8")
    with t.edit() as node:
        node.runtime["marker"] = "set before the reboot"
    t.cli("fault", "set", "host_reboot", "--tool", "mst")
    rc, out, err = t.run("mst", "status")
    assert (rc, out) == (255, "") and "Connection to gpu8 closed by remote host." in err
    assert "marker" not in t.node().runtime, "a reboot drops the runtime settings"
    assert "off host_reboot" in t.cli("fault", "list")[1]
    assert t.run("mst", "status")[0] == 0
