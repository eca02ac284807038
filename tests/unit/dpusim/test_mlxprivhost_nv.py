"""The twin's mlxprivhost against the real tool's behaviour (mstflint mlxconfig/mstprivhost.py, see the
docstring of src/dpusim/tools/mlxprivhost.py): q shows what is stored in NV, r replaces the flag set,
p clears it and refuses flags, the x86 side of a single-host card cannot change the level, and a flag
becomes active only after its reset (hardware-facts.md section 2)."""

from __future__ import annotations

DEV = "/dev/mst/mt41692_pciconf0"
DONE = "-I- preparing configuration file...Done!\n-I- configuring device...Done!\n"


def flag(out, name):
    for line in out.splitlines():
        if line.startswith(name + " "):
            return line.split(":")[1].strip()
    raise AssertionError("%s not in %r" % (name, out))


def pair(twin, tmp_path):
    card = tmp_path / "pair"
    return (twin("bluefield3", role="host", card_dir=card, name="host"),
            twin("bluefield3", role="dpu", card_dir=card, name="dpu"))


def test_restrict_prints_the_two_info_lines_and_q_shows_stored_flags(twin):
    dpu = twin("bluefield3", role="dpu")
    assert dpu.run("mlxprivhost", "-d", DEV, "r", "--disable_rshim", "--disable_tracer") == (0, DONE, "")
    out = dpu.run("mlxprivhost", "-d", DEV, "q")[1]
    assert flag(out, "level") == "RESTRICTED"
    assert flag(out, "disable_rshim") == "TRUE", "q reads NV: shown before the power cycle"
    assert flag(out, "disable_tracer") == "TRUE"
    assert flag(out, "disable_port_owner") == "FALSE"


def test_disable_rshim_is_active_only_after_a_power_cycle(twin, tmp_path):
    host, dpu = pair(twin, tmp_path)
    dpu.run("mlxprivhost", "-d", DEV, "r", "--disable_rshim")
    assert host.cli("rshim", "cat")[0] == 0, "stored, not active before the power cycle"
    host.cli("power-cycle")
    assert host.cli("rshim", "cat")[0] == 1
    assert flag(dpu.run("mlxprivhost", "-d", DEV, "q")[1], "disable_rshim") == "TRUE"


def test_restrict_again_replaces_the_flags(twin):
    dpu = twin("bluefield3", role="dpu")
    dpu.run("mlxprivhost", "-d", DEV, "r", "--disable_port_owner", "--disable_counter_rd")
    dpu.run("mlxprivhost", "-d", DEV, "r", "--disable_tracer")
    out = dpu.run("mlxprivhost", "-d", DEV, "q")[1]
    assert [flag(out, f) for f in ("disable_tracer", "disable_port_owner", "disable_counter_rd")] == \
        ["TRUE", "FALSE", "FALSE"]


def test_privilege_clears_every_flag_and_refuses_flags(twin):
    dpu = twin("bluefield3", role="dpu")
    dpu.run("mlxprivhost", "-d", DEV, "r", "--disable_port_owner", "--disable_rshim")
    rc, out, err = dpu.run("mlxprivhost", "-d", DEV, "p", "--disable_rshim")
    assert rc == 2 and out == "" and err.endswith("error: disable flags are not allowed in privilege mode\n")
    assert dpu.run("mlxprivhost", "-d", DEV, "p") == (0, DONE, "")
    out = dpu.run("mlxprivhost", "-d", DEV, "q")[1]
    assert flag(out, "level") == "PRIVILEGED"
    assert flag(out, "disable_rshim") == flag(out, "disable_port_owner") == "FALSE"


def test_the_host_side_cannot_change_the_level(twin, tmp_path):
    host, dpu = pair(twin, tmp_path)
    rc, out, _ = host.run("mlxprivhost", "-d", "e2:00.0", "r")
    assert (rc, out) == (1, "-E- There is only a single host, it cannot restrict itself\n")
    dpu.run("mlxprivhost", "-d", DEV, "r")
    assert host.run("mlxprivhost", "-d", "e2:00.0", "r")[:2] == (0, "-E- Host is already restricted\n")
    rc, out, _ = host.run("mlxprivhost", "-d", "e2:00.0", "p")
    assert rc == 1 and out.endswith("Failed\n-E- Removing the restriction only effective on the ARM side\n")
    assert flag(host.run("mlxprivhost", "-d", "e2:00.0", "q")[1], "level") == "RESTRICTED"
