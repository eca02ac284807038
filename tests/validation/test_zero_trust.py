"""Conformance, stage zero_trust: the GPU host is restricted on its BlueField (read from the DPU's Arm side), the
port-function flags asked for are stored, and the secure-boot lifecycle is readable (and the expected one when
``zero_trust_secure_boot_expected`` is set).

Tool outputs read here: ``mlxprivhost -d DEV q`` (corpus mlxprivhost/, "%-30s: %s" lines) and ``mlxbf-bootctl``
(corpus mlxbf-bootctl/, "key: value" lines). Fix for everything: playbooks/zero_trust.yml.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.stage("zero_trust")

_MST_ROW = re.compile(r"^\S+\s+(?P<dev>/dev/mst/mt\d+_pciconf\d+)\s", re.M)
_FIX = "playbooks/zero_trust.yml"
FLAGS = ("disable_rshim", "disable_tracer", "disable_counter_rd", "disable_port_owner")


def _tail(res) -> str:
    return (res.stderr or res.stdout).strip()[-300:]


def _privhost(dpu) -> dict[str, str]:
    res = dpu.read("mst status -v")
    assert res.rc == 0, (f"{dpu.name}: `mst status -v` failed (rc={res.rc}): {_tail(res)}; fix: install MFT and "
                         "run `mst start`")
    devices = _MST_ROW.findall(res.stdout)
    assert devices, f"{dpu.name}: `mst status -v` lists no device; fix: load the driver and run `mst start`"
    res = dpu.read(f"mlxprivhost -d {devices[0]} q")
    assert res.rc == 0, f"{dpu.name}: `mlxprivhost -d {devices[0]} q` failed (rc={res.rc}): {_tail(res)}"
    fields = {}
    for line in res.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and value.strip():
            fields[key.strip()] = value.strip()
    assert "level" in fields, f"{dpu.name}: `mlxprivhost q` printed no level line: {res.stdout[-300:]!r}"
    return fields


def test_host_restricted_from_the_dpu_side(dpu):
    wanted = str(dpu.vars.get("zero_trust_host_level", "restricted")).upper()
    level = _privhost(dpu)["level"]
    assert level == wanted, (f"{dpu.name}: GPU host privilege level (mlxprivhost q) is {level}, expected {wanted}; "
                             f"fix: zero_trust_host_level / {_FIX}")


def test_port_function_flags_are_stored(dpu):
    fields = _privhost(dpu)
    asked = {flag: dpu.vars.get("zero_trust_" + flag) for flag in FLAGS}
    for flag, value in asked.items():
        found = fields.get(flag)
        assert found in ("TRUE", "FALSE"), f"{dpu.name}: mlxprivhost q shows {flag} as {found!r}, expected TRUE/FALSE"
        if value is None or str(dpu.vars.get("zero_trust_host_level", "restricted")) != "restricted":
            continue  # null keeps what the card has
        want = "TRUE" if value else "FALSE"
        assert found == want, (f"{dpu.name}: host restriction flag {flag} is {found}, expected {want} (active after "
                               f"its reset); fix: zero_trust_{flag} / {_FIX}")


def test_secure_boot_lifecycle(dpu):
    res = dpu.read("mlxbf-bootctl")
    assert res.rc == 0, (f"{dpu.name}: `mlxbf-bootctl` failed (rc={res.rc}): {_tail(res)}; fix: run the check on the "
                         "BlueField Arm OS")
    states = [line.partition(":")[2].strip() for line in res.stdout.splitlines()
              if line.strip().lower().startswith("lifecycle state:")]
    assert states and states[0], (f"{dpu.name}: `mlxbf-bootctl` printed no 'lifecycle state:' line; the secure-boot "
                                  "state cannot be reported")
    expected = dpu.vars.get("zero_trust_secure_boot_expected") or []
    if expected:
        assert states[0] in expected, (f"{dpu.name}: secure-boot lifecycle is {states[0]}, expected "
                                       f"{' or '.join(expected)}; fix: a card in that state, or "
                                       f"zero_trust_secure_boot_expected / {_FIX}")
