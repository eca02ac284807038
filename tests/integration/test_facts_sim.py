"""dpu_info / gpu_info against the device twin: the facts equal the twin's state, in one pass.

The twin's state is read with ``dpusim --root R state`` (cards: firmware banks, mlxconfig current/next,
privhost, DPU OS, rshim) and, for what lives in the node's Linux side (GPUs, eswitch mode, modules),
with the twin's own ``dpusim.linux_state`` functions. Before the run the state is changed with the
twin's tools so that the facts cannot match by accident: a pending mode change on one DPU, a
restricted host on the other, nvidia_peermem loaded on one GPU host.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import split_value
from conftest import ROOT, ansible_env, make_sim_inventory, run_playbook, twin_state

from dpusim import linux_state, state

# One task publishes both (bluefleet_gpu_info only where there are GPUs: the GPU hosts).
CARD_TASK = GPU_TASK = "Publish the card and GPU facts as bluefleet_dpu_info and bluefleet_gpu_info"
KEEP_TASK = "Keep the card facts, and the GPU facts on GPU hosts"


def _plain(value):
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _hostvars(inventory):
    proc = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", str(inventory), "--list"],
                          capture_output=True, text=True, env=ansible_env(), check=True, timeout=120)
    return _plain(json.loads(proc.stdout))["_meta"]["hostvars"]


def _twin_tool(hostvars, host, *argv):
    env = dict(os.environ)
    env.update(hostvars[host]["bluefleet_environment"])
    proc = subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, "%s on %s: %s%s" % (argv, host, proc.stdout, proc.stderr)
    return proc.stdout


def _facts(run, task, key):
    out = {}
    for event in run["events"]:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task") == task and key in data["res"]["ansible_facts"]:
            out[data["host"]] = data["res"]["ansible_facts"][key]
    return out


def _number(value):
    """What the twin stores for an mlxconfig value: the enum/int number, or the text (arrays)."""
    name, number = split_value(value)
    return number if number is not None else name


def _twin_mode(values):
    if values.get("INTERNAL_CPU_MODEL", 1) == 0:
        return "separated_host"
    return "dpu" if values.get("INTERNAL_CPU_OFFLOAD_ENGINE", 0) == 0 else "nic"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    directory = tmp_path_factory.mktemp("facts-sim")
    inventory = make_sim_inventory(directory, nodes=2)
    # Where the twin keeps /dev/rshimN/misc and /sys/...: the node root (see docs/dpusim.md).
    (directory / "group_vars").mkdir()
    (directory / "group_vars" / "all.yml").write_text(
        "---\npreflight_fs_root: \"{{ bluefleet_environment.DPUSIM_ROOT }}\"\n")
    hostvars = _hostvars(inventory)  # creates the twin roots
    mst = "/dev/mst/mt41692_pciconf0"
    _twin_tool(hostvars, "sim02-dpu", "mlxconfig", "-d", mst, "-y", "set", "INTERNAL_CPU_OFFLOAD_ENGINE=1")
    _twin_tool(hostvars, "sim01-dpu", "mlxprivhost", "-d", mst, "r")
    _twin_tool(hostvars, "sim01", "modprobe", "nvidia_peermem")
    run = run_playbook("playbooks/preflight.yml", inventory)
    check = run_playbook("playbooks/preflight.yml", inventory, "--check")
    roots = {host: Path(hv["bluefleet_environment"]["DPUSIM_ROOT"]) for host, hv in hostvars.items()}
    return {"run": run, "check": check, "roots": roots}


def test_every_host_reports_facts_in_one_pass(fleet):
    run = fleet["run"]
    assert sorted(_facts(run, CARD_TASK, "bluefleet_dpu_info")) == ["sim01", "sim01-dpu", "sim02", "sim02-dpu"]
    assert sorted(_facts(run, GPU_TASK, "bluefleet_gpu_info")) == ["sim01", "sim02"]
    assert sum((run["stats"].get("changed") or {}).values()) == 0
    for host, facts in _facts(run, CARD_TASK, "bluefleet_dpu_info").items():
        per_device = collections.Counter((a[0], a[2]) for a in facts["cmd"] if "-d" in a)
        assert per_device and max(per_device.values()) == 1, (host, facts["cmd"])
        assert facts["tools_missing"] == [], host


def test_the_reads_are_held_once_not_as_registered_results_too(fleet):
    """Once kept as preflight_dpu_info / preflight_gpu_info, the registered results shrink to what later tasks read
    (the section tools); every host's variables stay on the controller for the whole run."""
    kept = _facts(fleet["run"], KEEP_TASK, "preflight_dpu_info")
    registered = _facts(fleet["run"], KEEP_TASK, "__preflight_dpu_info")
    assert sorted(registered) == sorted(kept) == ["sim01", "sim01-dpu", "sim02", "sim02-dpu"]
    for host, value in registered.items():
        assert value == {"tools": kept[host]["tools"]}, host
    # the GPU read came in the same module run and is kept once: as preflight_gpu_info, not in preflight_dpu_info too
    gpus = _facts(fleet["run"], KEEP_TASK, "preflight_gpu_info")
    assert sorted(gpus) == ["sim01", "sim02"]
    for host, value in kept.items():
        assert "gpu_info" not in value, host
    for host, value in gpus.items():
        assert value["gpus"]["devices"] and "changed" not in value, host


def test_card_facts_equal_the_twin_state(fleet):
    facts = _facts(fleet["run"], CARD_TASK, "bluefleet_dpu_info")
    for host, info in facts.items():
        twin = twin_state(fleet["roots"][host])
        node = state.load_node(fleet["roots"][host])
        role = twin["node"]["role"]
        assert info["side"] == role, host
        assert len(info["devices"]) == len(twin["cards"]) == 1
        dev, card, entry = info["devices"][0], twin["cards"][0], twin["node"]["cards"][0]
        # identity
        assert dev["mst"] == entry["mst"]
        assert ["0000:" + f["pci"] for f in dev["functions"]] == [f["pci"] for f in entry["functions"]]
        assert [f["netdevs"] for f in dev["functions"]] == [f["netdevs"] for f in entry["functions"]]
        assert dev["rdma_devices"] == entry["rdma"]
        # firmware: flashed = the active bank, running = what the chip runs
        bank = card["firmware"]["banks"][card["firmware"]["active_bank"]]
        assert dev["firmware"]["flashed"] == bank["version"]
        assert dev["firmware"]["running"] == card["firmware"]["running"]["version"]
        assert dev["psid"] == bank["psid"]
        assert dev["firmware"]["pending_reset"] is (bank != card["firmware"]["running"])
        # nvconfig Current / Next Boot, every parameter the twin keeps
        params = dev["nvconfig"]["params"]
        assert set(params) == set(card["mlxconfig"]["current"]), host
        for name, value in card["mlxconfig"]["current"].items():
            assert _number(params[name]["current"]) == value, (host, name)
            assert _number(params[name]["next_boot"]) == card["mlxconfig"]["next"][name], (host, name)
        pending = sorted(k for k, v in card["mlxconfig"]["next"].items() if card["mlxconfig"]["current"][k] != v)
        assert dev["nvconfig"]["pending"] == pending
        assert dev["pending_reset"]["nvconfig"] == pending
        # mode
        assert dev["mode"]["current"] == _twin_mode(card["mlxconfig"]["current"])
        assert dev["mode"]["next_boot"] == _twin_mode(card["mlxconfig"]["next"])
        # eswitch, per PCI function, as the twin's Linux side holds it
        for fn in entry["functions"]:
            assert dev["eswitch"]["functions"][fn["pci"]] == linux_state.eswitch(node, fn["pci"])
        if role == "dpu":
            assert dev["privilege"]["level"] == card["privhost"]["level"]
            os_ = info["dpu_os"]
            assert (os_["release"], os_["doca_version"], os_["bsp_version"], os_["atf_version"], os_["uefi_version"]) \
                == (card["dpu_os"]["release"], card["dpu_os"]["doca"], card["dpu_os"]["bsp"], card["dpu_os"]["atf"],
                    card["dpu_os"]["uefi"])
            assert info["rshim"]["available"] is False
        else:
            assert dev["privilege"]["available"] is False
            assert [d["name"] for d in info["rshim"]["devices"]] == [entry["rshim"].rsplit("/", 1)[1]]
            fields = info["rshim"]["devices"][0]["fields"]
            # DISPLAY_LEVEL 0 prints the basic keys only (BOOT_RESET_SKIP etc. need a higher level)
            shown = {k: v for k, v in card["rshim"]["misc"].items() if k in fields}
            assert {"DISPLAY_LEVEL", "BOOT_MODE", "DROP_MODE"} <= set(shown), (host, sorted(fields))
            for key, value in shown.items():
                assert fields[key] == str(value), (host, key)


def test_the_changes_made_before_the_run_are_seen(fleet):
    facts = _facts(fleet["run"], CARD_TASK, "bluefleet_dpu_info")
    assert facts["sim02-dpu"]["devices"][0]["mode"] == {"available": True, "current": "dpu", "next_boot": "nic"}
    assert facts["sim02-dpu"]["devices"][0]["pending_reset"]["nvconfig"] == ["INTERNAL_CPU_OFFLOAD_ENGINE"]
    # the host shares the card: it sees the same pending change
    assert facts["sim02"]["devices"][0]["mode"]["next_boot"] == "nic"
    assert facts["sim01-dpu"]["devices"][0]["privilege"]["level"] == "RESTRICTED"
    assert facts["sim02-dpu"]["devices"][0]["privilege"]["level"] == "PRIVILEGED"


def test_gpu_facts_equal_the_twin_state(fleet):
    facts = _facts(fleet["run"], GPU_TASK, "bluefleet_gpu_info")
    for host, info in facts.items():
        node = state.load_node(fleet["roots"][host])
        cfg = linux_state.gpu_config(node)
        assert info["gpus"]["driver_version"] == cfg["driver_version"]
        assert info["gpus"]["cuda_version"] == cfg["cuda_version"]
        expected = [(g["index"], g["bus_id"], g["persistence"]) for g in linux_state.gpus(node)]
        assert [(g["index"], g["bus_id"], g["persistence_mode"]) for g in info["gpus"]["devices"]] == expected
        assert all(g["closest_nic"] is not None for g in info["gpus"]["devices"])
        loaded = "nvidia_peermem" in linux_state.modules(node)
        assert info["peermem"]["loaded"] is loaded
        assert info["peermem"]["registered"] is linux_state.peermem_sysfs(node).exists()
    assert facts["sim01"]["peermem"]["loaded"] is True
    assert facts["sim01"]["peermem"]["version"] == "1.1"
    assert facts["sim02"]["peermem"]["loaded"] is False


def test_check_mode_gives_the_same_facts(fleet):
    for task, key in ((CARD_TASK, "bluefleet_dpu_info"), (GPU_TASK, "bluefleet_gpu_info")):
        check, run = _facts(fleet["check"], task, key), _facts(fleet["run"], task, key)
        for host in run:  # when each read began (the node's clock): the check-mode run came later
            assert run[host].pop("read_at") < check[host].pop("read_at"), host
        assert check == run


def _adhoc(inventory, host, module, args):
    """Run one module on one host, in the host's twin environment; return (failed, result)."""
    import ansible_runner

    work = inventory.parent / ("adhoc-%d" % len(list(inventory.parent.glob("adhoc-*"))))
    (work / "project").mkdir(parents=True)
    play = [{"name": "one module", "hosts": host, "gather_facts": False,
             "environment": "{{ bluefleet_environment }}",
             "tasks": [{"name": "the module", module: args}]}]
    (work / "project" / "play.yml").write_text(json.dumps(play))
    run = ansible_runner.run(private_data_dir=str(work), playbook="play.yml", inventory=str(inventory),
                             envvars=ansible_env(), quiet=True)
    for event in run.events:
        if event.get("event") in ("runner_on_ok", "runner_on_failed"):
            return event["event"] == "runner_on_failed", event["event_data"]["res"]
    raise AssertionError("no result from %s on %s:\n%s" % (module, host, run.stdout.read()[-3000:]))


@pytest.fixture
def one_pair(tmp_path):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    return inventory, _hostvars(inventory)


def test_faults_of_the_twin_are_clear_results(one_pair):
    inventory, hostvars = one_pair
    dpusim = str(ROOT / ".venv/bin/dpusim")
    root = hostvars["sim01-dpu"]["bluefleet_environment"]["DPUSIM_ROOT"]

    _twin_tool(hostvars, "sim01-dpu", dpusim, "--root", root, "fault", "set", "device_missing")
    failed, res = _adhoc(inventory, "sim01-dpu", "bluefleet.dpu.dpu_info", {"filter": ["firmware", "mode"]})
    assert not failed, res
    assert res["devices"] == [] and res["msg"] == "no BlueField or ConnectX device found by mst status -v"
    _twin_tool(hostvars, "sim01-dpu", dpusim, "--root", root, "fault", "clear", "device_missing")

    _twin_tool(hostvars, "sim01-dpu", dpusim, "--root", root, "fault", "set", "garbage_output", "--tool", "flint")
    failed, res = _adhoc(inventory, "sim01-dpu", "bluefleet.dpu.dpu_info", {"filter": ["firmware"]})
    assert failed
    assert res["msg"].startswith("parse flint -d /dev/mst/mt41692_pciconf0 q output failed: cannot parse flint-query")
    assert res["cmd"] == ["flint", "-d", "/dev/mst/mt41692_pciconf0", "q"]
    _twin_tool(hostvars, "sim01-dpu", dpusim, "--root", root, "fault", "clear", "garbage_output")

    _twin_tool(hostvars, "sim01-dpu", dpusim, "--root", root, "fault", "set", "tool_hang", "--tool", "mlxconfig",
               "--seconds", "30")
    failed, res = _adhoc(inventory, "sim01-dpu", "bluefleet.dpu.dpu_info", {"filter": ["mode"], "timeout": 2})
    assert failed
    assert res["msg"] == ("query configuration of /dev/mst/mt41692_pciconf0 with mlxconfig failed: "
                          "mlxconfig timed out after 2 s")
    assert res["rc"] == 124
    _twin_tool(hostvars, "sim01-dpu", dpusim, "--root", root, "fault", "clear", "tool_hang")


# The card and the tools are checked in one task, from the read of the cards (roles/preflight/tasks/facts.yml).
TOOLS_ASSERT = "Every host has a card, and the tools it needs (from the read of the cards; says what to install)"


def _failed_tasks(run, host):
    return [e["event_data"]["task"] for e in run["events"]
            if e.get("event") == "runner_on_failed" and e["event_data"].get("host") == host]


def test_a_missing_tool_stops_preflight_naming_what_to_install(one_pair):
    """The read of the cards checks the tools in its own run (section tools); with --tags tools alone, where the read
    does not run, tools_info checks them. Both stop the host with the same words."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import ADVICE

    inventory, hostvars = one_pair
    run = run_playbook("playbooks/preflight.yml", inventory)
    assert not _failed_tasks(run, "sim01")
    ran = {e["event_data"]["task"] for e in run["events"] if e.get("event") == "runner_on_ok"}
    assert TOOLS_ASSERT in ran
    assert "Check the firmware, IPsec and BFB tools (says what to install)" not in ran, "checked twice"
    # the GPU host needs a BFB installer (it lists a DPU); the twin's is the only one on PATH: not executable, a
    # lookup on PATH passes it by (the inventory still finds the twin root whole)
    (Path(hostvars["sim01"]["bluefleet_environment"]["DPUSIM_ROOT"]) / "bin" / "bfb-install").chmod(0o644)
    expected = "check the tools failed: bfb_install: " + ADVICE["bfb_install"]
    for extra, task in (((), TOOLS_ASSERT),
                        (("--tags", "tools"), "Check the firmware, IPsec and BFB tools (says what to install)")):
        run = run_playbook("playbooks/preflight.yml", inventory, *extra, check=False)
        assert run["rc"] != 0, extra
        assert _failed_tasks(run, "sim01") == [task], (extra, run["stdout"][-3000:])
        assert expected in run["stdout"], extra
        # the DPU has its tools: the gate stops it, because one host failed
        assert _failed_tasks(run, "sim01-dpu") == [
            "Preflight passed on every host (a problem on one host stops the whole run before any change)"], extra
