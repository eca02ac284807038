"""dividend_tunnel: nothing to remove is no change; leftovers of an interrupted run are found from the state file
and removed (check mode only reports them); the pre-shared key never reaches the result; present needs its inputs.

The lab test (tests/integration/test_dividend_lab.py) builds the real tunnel and kills a measurement half way.
The ``ip`` outputs are iproute2's one-line forms (``ip -o``), as the lab's GPU-host container printed them.
"""

from __future__ import annotations

import json

from ansible_collections.bluefleet.dpu.plugins.modules import dividend_tunnel
from fake_tools import FakeRunner

LINK = ("ip", "-o", "link", "show", "dev", "bfdiv0")
ADDRS = ("ip", "-o", "-4", "addr", "show")
NO_LINK = (1, "", 'Device "bfdiv0" does not exist.\n')
LO_ONLY = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
LEFT = (LO_ONLY + "1: lo    inet 169.254.21.1/32 scope global lo\\       valid_lft forever preferred_lft forever\n"
        "5: bfdiv0    inet 169.254.22.1/30 scope global bfdiv0\\       valid_lft forever preferred_lft forever\n")
LINK_UP = (0, "5: bfdiv0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1150 qdisc noqueue state UNKNOWN mode DEFAULT "
              "group default qlen 1000\\    link/ether 2a:3b:4c:5d:6e:7f brd ff:ff:ff:ff:ff:ff\n", "")


SWANCTL_VERSION = ("swanctl", "--version")


class Runner(FakeRunner):
    """The fake tools, with strongSwan's version (run last, for tool_version)."""

    check_mode = False

    def __init__(self, answers, missing=()):
        answers = dict(answers)
        answers.setdefault(SWANCTL_VERSION, (0, "strongSwan swanctl 5.9.8\n", ""))
        super().__init__(answers, missing)


def leftover(tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "state.json").write_text(json.dumps({"device": "bfdiv0", "charon_pid": None,
                                                    "addresses": ["169.254.21.1/32", "169.254.22.1/30"]}))
    (workdir / "swanctl.conf").write_text('secrets { ike-x { secret = "s3cret-psk" } }\n')
    return workdir


def test_nothing_to_remove_is_no_change(run_module, tmp_path):
    runner = Runner({LINK: NO_LINK, ADDRS: (0, LO_ONLY, "")})
    failed, res = run_module(dividend_tunnel, {"state": "absent", "workdir": str(tmp_path / "run")}, runner)
    assert not failed, res
    assert not res["changed"] and res["removed"] == []
    assert [c[:2] for c in res["cmd"]] == [["ip", "-o"], ["ip", "-o"], list(SWANCTL_VERSION)]  # read only
    assert res["tool_version"] == "strongSwan swanctl 5.9.8"


def test_leftovers_are_removed(run_module, tmp_path):
    workdir = leftover(tmp_path)
    gone = {LINK: NO_LINK, ADDRS: (0, LO_ONLY, "")}

    class Interrupted(Runner):
        def run(self, argv, timeout=None):
            if tuple(argv) in (LINK, ADDRS) and ["ip", "link", "del", "dev", "bfdiv0"] in self.cmd:
                self.cmd.append(list(argv))
                from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
                return CommandResult(argv, *gone[tuple(argv)])
            return super().run(argv, timeout)

    runner = Interrupted({LINK: LINK_UP, ADDRS: (0, LEFT, ""), ("ip", "link", "del", "dev", "bfdiv0"): (0, "", ""),
                          ("ip", "addr", "del", "169.254.21.1/32", "dev", "lo"): (0, "", "")})
    failed, res = run_module(dividend_tunnel, {"state": "absent", "workdir": str(workdir)}, runner)
    assert not failed, res
    assert res["changed"]
    assert res["removed"] == ["link bfdiv0", "address 169.254.21.1/32 on lo", str(workdir)]
    assert not workdir.exists()  # the key file went with it
    assert res["tunnel"] == {"charon_pid": None, "device": False, "addresses": []}


def test_check_mode_reports_leftovers_and_keeps_them(run_module, tmp_path):
    workdir = leftover(tmp_path)
    runner = Runner({LINK: LINK_UP, ADDRS: (0, LEFT, "")})
    failed, res = run_module(dividend_tunnel, {"state": "absent", "workdir": str(workdir)}, runner, check_mode=True)
    assert not failed, res
    assert res["changed"] and res["removed"] == ["link bfdiv0", "address 169.254.21.1/32 on lo", str(workdir)]
    assert (workdir / "state.json").exists() and all(c[:2] == ["ip", "-o"] for c in res["cmd"][:-1])
    assert res["cmd"][-1] == list(SWANCTL_VERSION)


def test_present_needs_addresses_and_key(run_module, tmp_path):
    failed, res = run_module(dividend_tunnel, {"state": "present", "local_address": "10.10.0.1",
                                               "workdir": str(tmp_path / "run")}, Runner({}))
    assert failed and "peer_address" in res["msg"] and "psk" in res["msg"]


def test_the_key_never_reaches_the_result(run_module, tmp_path):
    runner = Runner({LINK: NO_LINK, ADDRS: (0, LO_ONLY, "")})
    failed, res = run_module(dividend_tunnel, {"state": "present", "local_address": "10.10.0.1",
                                               "peer_address": "10.10.0.2", "psk": "s3cret-psk",
                                               "workdir": str(tmp_path / "run")}, runner, check_mode=True)
    assert not failed, res
    assert res["changed"] and not (tmp_path / "run").exists()  # check mode writes nothing
    assert "s3cret-psk" not in json.dumps(res)
    assert dividend_tunnel.argument_spec()["psk"]["no_log"] is True
