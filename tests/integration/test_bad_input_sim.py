"""Bad inputs are refused before anything changes, with a message naming the input and the fix.

The table (well over 60 cases) runs each bad value through the check that guards it, as the playbooks run it:
* upgrade.yml's own input checks (batch sizes, failure percentage, timeouts): the ``that`` and ``fail_msg`` of
  those tasks, read from the playbook and evaluated by Ansible's templar with the bad value as an extra var;
* every role's argument spec, through Ansible's ArgumentSpecValidator with the defaults taken out (what
  roles/preflight/tasks/inputs.yml runs on every host before any change, with bluefleet.dpu.spec_without_defaults):
  a word for a number, a word for a boolean, a value outside the choices, for every such option of every role;
* the IPsec proposals, through the filter roles/ipsec/tasks/preflight.yml calls before the driver restart.
Then a few end-to-end runs on a sim fleet prove the wiring: the run stops on every host, the twins are unchanged,
``bluefleet run`` exits 2, and a number given as a string (``-e firmware_bfb_ready_timeout=60``) is accepted.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.bluefleet.dpu.plugins.filter.ipsec_proposal_errors import proposal_errors
from ansible_collections.bluefleet.dpu.plugins.filter.spec_without_defaults import spec_without_defaults
from conftest import BIN, ROOT, make_sim_inventory, run_playbook, twin_snapshot

UPGRADE = yaml.safe_load((ROOT / "playbooks" / "upgrade.yml").read_text(encoding="utf-8"))
PICK = {task["name"]: task for task in UPGRADE[0]["tasks"]}
ROLLING = PICK["The rolling inputs are valid, checked before any node is touched"]
TIMEOUTS = PICK["The timeouts are whole numbers of seconds, checked before any node is touched"]


def _templar(variables):
    return Templar(loader=DataLoader(), variables=variables)


def _check(task, variables):
    """(passed, message) of an assert task of upgrade.yml with ``variables`` as extra vars."""
    templar = _templar(variables)
    local = {k: templar.template(trust_as_template(v)) for k, v in (task.get("vars") or {}).items()}
    templar = _templar(dict(variables, **local))
    that = task["ansible.builtin.assert"]["that"]
    that = that if isinstance(that, list) else [that]
    passed = all(templar.evaluate_conditional(trust_as_template(cond)) for cond in that)
    return passed, templar.template(trust_as_template(task["ansible.builtin.assert"]["fail_msg"]))


def _check_timeouts(variables):
    """The loop of the timeouts task: each item's result."""
    templar = _templar(variables)
    numbers = {k: templar.template(trust_as_template(v)) for k, v in TIMEOUTS["vars"]["__upgrade_numbers"].items()}
    out = {}
    for key, value in numbers.items():
        item_task = {"ansible.builtin.assert": TIMEOUTS["ansible.builtin.assert"]}
        out[key] = _check(item_task, dict(variables, item={"key": key, "value": value}))
    return out


ROLLING_BAD = [("upgrade_serial", v) for v in ("0", "-1", 0, -1, "abc", "0%", "101%", ["1", "0"], [], "1.5",
                                               ["1", "-25%"])] + \
              [("upgrade_max_fail_percentage", v) for v in (-1, 101, "x", "5.5")]
ROLLING_GOOD = [("upgrade_serial", v) for v in ("1", 1, ["1", "25%"], "100%", [1, 3])] + \
               [("upgrade_max_fail_percentage", v) for v in (0, "20", 100)]
TIMEOUT_BAD = [("firmware_timeout", "0"), ("firmware_bfb_timeout", -5), ("firmware_bfb_ready_timeout", "abc"),
               ("firmware_bfb_poll_interval", "0"), ("firmware_reconnect_timeout", "1.5"),
               ("firmware_bfb_ready_timeout", ""), ("firmware_timeout", "-600"), ("upgrade_links_interval", "0")]


@pytest.mark.parametrize("name, value", ROLLING_BAD, ids=json.dumps)
def test_rolling_input_refused(name, value):
    passed, msg = _check(ROLLING, {name: value})
    assert not passed, (name, value)
    assert "%s=%s" % (name, json.dumps(value)) in msg, msg  # the input as given
    assert "whole number >= 1 or a percentage" in msg and "Nothing was changed" in msg


@pytest.mark.parametrize("name, value", ROLLING_GOOD, ids=json.dumps)
def test_rolling_input_accepted(name, value):
    assert _check(ROLLING, {name: value})[0], (name, value)


@pytest.mark.parametrize("name, value", TIMEOUT_BAD, ids=json.dumps)
def test_timeout_refused(name, value):
    results = _check_timeouts({name: value})
    passed, msg = results[name]
    assert not passed
    assert msg.startswith("%s=%s: give a whole number of seconds above 0" % (name, json.dumps(value))), msg
    assert "-e %s=" % name in msg and "Nothing was changed" in msg
    assert all(ok for key, (ok, _why) in results.items() if key != name)


def test_links_wait_may_be_zero_not_negative():
    """upgrade_links_wait=0 reads the links once; a negative or fractional value is refused with its own words."""
    assert all(ok for ok, _why in _check_timeouts({"upgrade_links_wait": 0}).values())
    for value in ("-1", "1.5", "x"):
        passed, msg = _check_timeouts({"upgrade_links_wait": value})["upgrade_links_wait"]
        assert not passed, value
        assert msg.startswith("upgrade_links_wait=%s: give a whole number of seconds (0: read the links once)"
                              % json.dumps(value)), msg


def test_timeout_given_as_a_string_is_accepted():
    """The issue's case: -e firmware_bfb_ready_timeout=60 arrives as the string "60"."""
    assert all(ok for ok, _why in _check_timeouts({"firmware_bfb_ready_timeout": "60"}).values())


def _role_cases():
    cases = []
    for spec_file in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = spec_file.parts[-3]
        options = yaml.safe_load(spec_file.read_text(encoding="utf-8"))["argument_specs"]["main"]["options"]
        for name, spec in options.items():
            if spec.get("choices"):
                cases.append((role, name, "not-one-of-them"))
            elif spec.get("type") == "int":
                cases.append((role, name, "abc"))
            elif spec.get("type") == "bool":
                cases.append((role, name, "perhaps"))
            elif spec.get("type") == "dict":
                cases.append((role, name, ["a", "list"]))
    return cases


ROLE_CASES = _role_cases()


def _validate(role, params):
    spec_file = ROOT / "roles" / role / "meta" / "argument_specs.yml"
    options = yaml.safe_load(spec_file.read_text(encoding="utf-8"))["argument_specs"]["main"]["options"]
    return ArgumentSpecValidator(spec_without_defaults(options)).validate(params)


def test_the_role_table_is_large():
    assert len(ROLE_CASES) >= 40, len(ROLE_CASES)


@pytest.mark.parametrize("role, name, value", ROLE_CASES, ids=str)
def test_role_input_refused_naming_the_variable(role, name, value):
    result = _validate(role, {name: value})
    assert result.error_messages, "%s=%r accepted" % (name, value)
    assert name in " ".join(result.error_messages)


@pytest.mark.parametrize("role, name, value", [
    ("firmware", "firmware_bfb_ready_timeout", "60"), ("firmware", "firmware_timeout", 600),
    ("ovs", "ovs_vxlan_vni", "100"), ("firmware", "firmware_allow_fw_reset", "yes"),
    ("firmware", "firmware_bfb_generation", "3"), ("ipsec", "ipsec_topology", "mesh")])
def test_role_input_accepted(role, name, value):
    assert not _validate(role, {name: value}).error_messages


@pytest.mark.parametrize("name, kind, value", [
    ("ipsec_proposals", "ike", "rot13-md4"), ("ipsec_esp_proposals", "esp", "rot13-md4"),
    ("ipsec_proposals", "ike", "aes256gcm16-sha256-ecp256"), ("ipsec_proposals", "ike", "aes256gcm16-ecp256"),
    ("ipsec_esp_proposals", "esp", "prfsha256"), ("ipsec_esp_proposals", "esp", "")])
def test_ipsec_proposals_refused(name, kind, value):
    errors = proposal_errors(value, kind, name)
    assert errors and all(e.startswith(name) for e in errors)


# -- end to end on a sim fleet: the wiring of the checks above ------------------------------------------------


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bad-input")
    inventory = make_sim_inventory(directory / "inventory", nodes=2)
    run_playbook("playbooks/preflight.yml", inventory, "--list-hosts")  # creates the twins
    return {"dir": directory, "inventory": inventory, "hosts": ["sim01", "sim01-dpu", "sim02", "sim02-dpu"]}


def assert_unchanged(before, after):
    """The cards (firmware, NV config, restriction, mode ...) and every sysfs file that existed are as they were.
    (The twin writes a netdev's sysfs files when a tool first reads the node: new files are not a change.)"""
    for host, (state, files) in before.items():
        assert after[host][0]["cards"] == state["cards"], host
        assert {k: after[host][1].get(k) for k in files} == files, host


def failures(run):
    return {e["event_data"]["host"]: e["event_data"]["res"].get("msg", "") for e in run["events"]
            if e.get("event") == "runner_on_failed" and not e["event_data"].get("ignore_errors")}


def test_bad_role_inputs_stop_every_host_before_any_change_and_bluefleet_run_exits_2(fleet):
    before = twin_snapshot(fleet["inventory"], fleet["hosts"])
    run_dir = fleet["dir"] / "run"
    proc = subprocess.run([str(BIN / "bluefleet"), "run", "-i", str(fleet["inventory"]), "--no-validate",
                           "--run-dir", str(run_dir), "-e", "ovs_vxlan_vni=abc", "-e", "ipsec_topology=ring",
                           "-e", "firmware_bfb_ready_timeout=60"],
                          capture_output=True, text=True, timeout=1800, check=False, cwd=fleet["dir"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-4000:]
    assert "exit code 2" in out
    assert "ovs_vxlan_vni" in out and "ipsec_topology" in out and "firmware_bfb_ready_timeout" not in out.split(
        "FAILED", 1)[-1].split("exit code")[0].replace("-e firmware_bfb_ready_timeout", "")
    assert "Nothing was changed" in out
    assert_unchanged(before, twin_snapshot(fleet["inventory"], fleet["hosts"]))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exit_code"] == 2 and not any(s.get("changed") for s in summary["stats"].values())


def test_upgrade_serial_zero_is_refused_before_any_node(fleet):
    before = twin_snapshot(fleet["inventory"], fleet["hosts"])
    run = run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", "upgrade_serial=0",
                       "-e", "firmware_nic_image=/nonexistent", "-e", "firmware_nic_version=32.43.1014", check=False)
    assert run["rc"] != 0
    msgs = failures(run)
    assert any('upgrade_serial="0"' in m and "Nothing was changed" in m for m in msgs.values()), msgs
    assert_unchanged(before, twin_snapshot(fleet["inventory"], fleet["hosts"]))


def test_an_image_without_its_version_is_refused_before_any_node(fleet):
    before = twin_snapshot(fleet["inventory"], fleet["hosts"])
    run = run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", "firmware_nic_image=/nonexistent",
                       check=False)
    assert run["rc"] != 0
    msgs = failures(run)
    assert any("set firmware_nic_version with firmware_nic_image" in m and "Nothing was changed" in m
               and "-dpu" in m for m in msgs.values()), msgs
    # checked in the first play, for every node that upgrades: no node's upgrade play started
    assert not [e for e in run["events"] if e.get("event") == "playbook_on_play_start"
                and e["event_data"].get("name", "").startswith("Rolling upgrade")]
    assert_unchanged(before, twin_snapshot(fleet["inventory"], fleet["hosts"]))


def test_dpu_without_its_host_stops_every_host_with_one_message_each(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n"
        "  vars: {ansible_connection: local}\n"
        "  children:\n"
        "    gpu_hosts:\n"
        "      hosts:\n"
        "        h1: {bluefleet_dpus: [h1-dpu]}\n"
        "        h2: {bluefleet_dpus: [h2-dpu]}\n"
        "    dpus:\n"
        "      hosts:\n"
        "        h1-dpu: {bluefleet_rshim: rshim0}\n"
        "        h2-dpu: {bluefleet_host: h2, bluefleet_rshim: rshim0}\n")
    run = run_playbook("playbooks/preflight.yml", inventory, "--tags", "pairing", check=False)
    assert run["rc"] != 0
    msgs = failures(run)
    assert "bluefleet_host=(unset)" in msgs["h1-dpu"]
    assert "h1-dpu sets no bluefleet_host" in msgs["h1"]
    assert "HostVarsVars" not in run["stdout"] and "has no attribute" not in run["stdout"]
    # the other pair passed its own checks, and the gate stopped it too
    gate = [m for m in msgs.values() if m.startswith("preflight failed on")]
    assert gate and "h1, h1-dpu" in gate[0] and "no host was changed" in gate[0]
    assert run["stats"].get("failures", {}).keys() >= {"h1", "h1-dpu"}
    ok_after = [e for e in run["events"] if e.get("event") == "runner_on_ok"
                and e["event_data"].get("task", "").startswith("Preflight passed")]
    assert not ok_after
