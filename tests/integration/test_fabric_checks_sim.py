"""Bad RoCE input stops playbooks/fabric.yml before any change, and the conformance checks of
tests/validation/test_fabric_qos.py find exactly the setting that was broken by hand on one DPU.

The suite runs in a subprocess (pytest + testinfra over the sim inventory), as `bluefleet run` would run it.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import ROOT, ansible_env, make_sim_inventory, run_playbook, twin_snapshot, twin_state, twin_tool

PLAYBOOK = "playbooks/fabric.yml"
TAGS = "--tags=roce"
HOSTS = ("sim01", "sim01-dpu")


def failed_msgs(run):
    """The failure messages, one per failed item of a loop (the loop's own summary left out)."""
    out = []
    for event in run["events"]:
        if event.get("event") in ("runner_on_failed", "runner_item_on_failed"):
            msg = event["event_data"]["res"].get("msg", "")
            if msg != "One or more items failed":
                out.append(msg)
    return out


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    inventory = make_sim_inventory(tmp_path_factory.mktemp("fabric") / "inventory", nodes=1)
    run_playbook(PLAYBOOK, inventory, "--list-hosts")
    for host, netdevs in (("sim01", ("ens1f0np0", "ens1f1np1")), ("sim01-dpu", ("p0", "p1"))):
        for netdev in netdevs:
            twin_tool(inventory.parent / "state" / host, "mlnx_qos", "-i", netdev)
    return inventory


@pytest.mark.parametrize("extra, words", [
    ("bluefleet_roce_priority=9", "pfc priority 9 is out of range: use 0..7"),
    ("bluefleet_roce_cnp_dscp=26", "dscp and cnp_dscp are both 26"),
    ("bluefleet_roce_mtu=12000", "mtu 12000 is above what the port supports (max 9978)"),
    ('{"bluefleet_roce_netdevs": ["p9"]}', "p9 has no RDMA device"),
])
def test_bad_input_is_a_clear_error_and_changes_nothing(fleet, extra, words):
    before = twin_snapshot(fleet, HOSTS)
    run = run_playbook(PLAYBOOK, fleet, TAGS, "-e", "'%s'" % extra, check=False)
    assert run["rc"] != 0
    msgs = failed_msgs(run)
    assert msgs and all(words in m for m in msgs), msgs
    assert twin_snapshot(fleet, HOSTS) == before, "a bad value must stop the run before anything changes"


def test_preflight_tag_alone_checks_every_netdev_and_changes_nothing(fleet):
    """--tags preflight: the role's check-mode pass runs (the apply task does not), so bad input still fails, and
    good input changes nothing."""
    before = twin_snapshot(fleet, HOSTS)
    bad = run_playbook(PLAYBOOK, fleet, "--tags=preflight", "-e", "bluefleet_roce_mtu=12000", check=False)
    assert bad["rc"] != 0
    msgs = failed_msgs(bad)
    assert len(msgs) == 2 and all("mtu 12000 is above what the port supports (max 9978)" in m for m in msgs), msgs
    good = run_playbook(PLAYBOOK, fleet, "--tags=preflight")
    assert good["rc"] == 0 and not (good["stats"].get("changed") or {}), good["stdout"][-2000:]
    assert "Check every setting on every netdev" in good["stdout"]
    assert twin_snapshot(fleet, HOSTS) == before


def run_suite(inventory, tmp_path):
    report = tmp_path / "suite.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(ROOT / "tests/validation/test_fabric_qos.py"), "--hosts=ansible://all",
         "--ansible-inventory=%s" % inventory, "--junitxml=%s" % report],
        cwd=str(ROOT), env=ansible_env(), capture_output=True, text=True, timeout=600, check=False)
    failures = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            failures[case.get("name")] = problem.get("message", "")
    passed = len(list(ET.parse(report).getroot().iter("testcase"))) - len(failures)
    return proc, failures, passed


def test_breaking_one_setting_on_one_dpu_fails_exactly_that_check(fleet, tmp_path):
    run_playbook(PLAYBOOK, fleet, TAGS)
    proc, failures, passed = run_suite(fleet, tmp_path)
    assert proc.returncode == 0 and failures == {} and passed >= 17, proc.stdout[-3000:]

    dpu_root = fleet.parent / "state" / "sim01-dpu"
    assert twin_tool(dpu_root, "mlnx_qos", "-i", "p0", "--trust", "pcp").returncode == 0
    proc, failures, _passed = run_suite(fleet, tmp_path)
    assert proc.returncode == 1 and list(failures) == ["test_roce_trust_dscp[sim01-dpu]"], failures
    msg = failures["test_roce_trust_dscp[sim01-dpu]"]
    assert "sim01-dpu: p0 trust is pcp, expected dscp" in msg and "fix: bluefleet_roce_trust" in msg, msg
    assert "playbooks/fabric.yml" in msg

    fix = run_playbook(PLAYBOOK, fleet, TAGS)  # the fix the message names puts it back, on that DPU only
    assert set(fix["stats"].get("changed") or {}) == {"sim01-dpu"}
    assert "Priority trust state: dscp" in twin_tool(dpu_root, "mlnx_qos", "-i", "p0").stdout


def test_infiniband_variant_sets_link_type_for_next_boot_and_renders_opensm(fleet):
    ib = ("-e", "bluefleet_fabric_link_type=ib", "-e", "bluefleet_fabric_subnet_manager=host")
    dpu_root, host_root = fleet.parent / "state" / "sim01-dpu", fleet.parent / "state" / "sim01"
    before = twin_state(dpu_root)["cards"][0]["mlxconfig"]
    check = run_playbook(PLAYBOOK, fleet, "--tags=ib", *ib, "--check")
    assert set(check["stats"].get("changed") or {}) == set(HOSTS)
    assert twin_state(dpu_root)["cards"][0]["mlxconfig"] == before
    assert not (host_root / "etc" / "opensm").exists()

    apply = run_playbook(PLAYBOOK, fleet, "--tags=ib", *ib)
    nv = twin_state(dpu_root)["cards"][0]["mlxconfig"]
    assert nv["next"]["LINK_TYPE_P1"] == 1 and nv["next"]["LINK_TYPE_P2"] == 1, nv["next"]
    assert nv["current"]["LINK_TYPE_P1"] == before["current"]["LINK_TYPE_P1"], "IB only after the reset"
    assert "link type ib is set for the next boot; it needs a" in apply["stdout"]
    conf = (host_root / "etc" / "opensm" / "opensm.conf").read_text()
    assert "\nsm_priority 15\n" in conf and "\npartition_config_file /etc/opensm/partitions.conf\n" in conf
    assert "Default=0x7fff, ipoib : ALL=full ;\n" in (host_root / "etc" / "opensm" / "partitions.conf").read_text()
    assert not (dpu_root / "etc" / "opensm").exists(), "one subnet manager: on the first GPU host only"

    again = run_playbook(PLAYBOOK, fleet, "--tags=ib", *ib)
    assert not (again["stats"].get("changed") or {}), again["stdout"][-2000:]

    bad = run_playbook(PLAYBOOK, fleet, "--tags=ib", "-e", "bluefleet_fabric_link_type=ib", "-e",
                       "bluefleet_fabric_pkey=0x8000", check=False)
    assert bad["rc"] != 0 and all("bluefleet_fabric_pkey 0x8000 (0x0001..0x7fff)" in m for m in failed_msgs(bad))
    assert set(bad["stats"].get("failures") or {}) == set(HOSTS)
    # On a RoCE fabric neither part applies anywhere and the role ends early, but only where the settings pass the
    # check: a bad value still stops the run on every node.
    roce = run_playbook(PLAYBOOK, fleet, "--tags=ib", "-e", "bluefleet_fabric_pkey=0x8000", check=False)
    assert roce["rc"] != 0 and set(roce["stats"].get("failures") or {}) == set(HOSTS)
    assert all("bluefleet_fabric_pkey 0x8000 (0x0001..0x7fff)" in m for m in failed_msgs(roce))
