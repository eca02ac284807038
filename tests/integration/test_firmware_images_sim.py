"""nic_firmware and bfb_install against the device twin: a 2-pair sim fleet, images made by ``dpusim make-image``.

Every mutating task runs four times (check: changed, twin untouched; apply: changed; apply again: unchanged;
check again: unchanged). Faults, each with a clear error and the twin's state before/after compared:
interrupted burn (the old firmware still runs; a re-run completes), DPU never comes back, PSID mismatch,
corrupt image, wrong generation, rshim busy. Secrets (the bf.cfg password hash) never reach the output.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import BIN, changed_count, make_sim_inventory, run_playbook, twin_state

DEV = "/dev/mst/mt41692_pciconf0"
NEW_FW = "32.43.1014"
OLD_FW = "32.41.1000"
RELEASE = "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"
PASSWORD_HASH = "$1$3B0RIrfX$TlHry93NFUJzg3Nya00rE1"

NIC_PLAY = """\
---
- name: NIC firmware from an image
  hosts: gpu_hosts
  gather_facts: false
  environment: "{{ bluefleet_environment }}"
  tasks:
    - name: Burn the NIC firmware
      bluefleet.dpu.nic_firmware:
        device: %s
        image: "{{ fw_image }}"
        allow_psid_change: "{{ fw_allow_psid_change | default(false) }}"
""" % DEV

BFB_PLAY = """\
---
- name: BFB from the host over rshim
  hosts: dpus
  gather_facts: false
  tasks:
    - name: Install the BFB
      bluefleet.dpu.bfb_install:
        bfb: "{{ bfb_image }}"
        version: "{{ bfb_release }}"
        sha256: "{{ bfb_sha256 | default(omit) }}"
        generation: "{{ bfb_generation | default(omit) }}"
        rshim: "{{ hostvars[bluefleet_host].bluefleet_environment.DPUSIM_ROOT }}/dev/{{ bluefleet_rshim }}"
        dpu_command:
          - env
          - "DPUSIM_ROOT={{ bluefleet_environment.DPUSIM_ROOT }}"
          - "PATH={{ bluefleet_environment.PATH }}"
        device: %s
        ubuntu_password_hash: "{{ dpu_password_hash }}"
        hostname: "{{ inventory_hostname }}"
        timeout: 120
        ready_timeout: 20
        poll_interval: 1
      delegate_to: "{{ bluefleet_host }}"
      environment: "{{ hostvars[bluefleet_host].bluefleet_environment }}"
      async: 300
      poll: 1
      vars:
        ansible_connection: ansible.builtin.local  # as docs/MITOGEN.md says: async under Mitogen (mitogen#835)
""" % DEV


def dpusim(*argv):
    proc = subprocess.run([str(BIN / "dpusim"), *argv], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, "dpusim %s: %s%s" % (" ".join(argv), proc.stdout, proc.stderr)
    return proc.stdout


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fw-images")
    inventory = make_sim_inventory(directory / "inventory", nodes=2)
    (directory / "inventory" / "group_vars").mkdir()
    (directory / "inventory" / "group_vars" / "all.yml").write_text(
        "---\ndpu_password_hash: '%s'\n" % PASSWORD_HASH)
    images = directory / "images"
    make = {
        "fw": ("nic-fw", "bluefield3", NEW_FW),
        "fw-psid": ("nic-fw", "bluefield3", NEW_FW, "--psid", "MT_0000000999"),
        "fw-corrupt": ("nic-fw", "bluefield3", NEW_FW, "--corrupt"),
        "bfb": ("bfb", "bluefield3", "2.9.2-31_25.02"),
        "bfb-bf2": ("bfb", "bluefield2", "2.9.2-31_25.02"),
        "bfb-corrupt": ("bfb", "bluefield3", "2.9.2-31_25.02", "--corrupt"),
    }
    paths = {}
    for name, (kind, profile, version, *extra) in make.items():
        paths[name] = images / (name + ".bin")
        dpusim("make-image", "--kind", kind, "--profile", profile, "--version", version, *extra, "-o",
               str(paths[name]))
    for name, text in (("nic.yml", NIC_PLAY), ("bfb.yml", BFB_PLAY)):
        (directory / name).write_text(text)
    state = directory / "inventory" / "state"
    # the inventory plugin creates the twin roots when it is first parsed: do it now
    run_playbook(str(directory / "nic.yml"), inventory, "--check", "-e", "fw_image=%s" % paths["fw"])
    return {"dir": directory, "inventory": inventory, "images": paths, "state": state,
            "hosts": ["sim01", "sim02"], "dpus": ["sim01-dpu", "sim02-dpu"]}


def roots(fleet):
    return [fleet["state"] / name for name in fleet["hosts"] + fleet["dpus"]]


def snapshot(fleet):
    return {str(root): twin_state(root) for root in roots(fleet)}


def card(fleet, host):
    return twin_state(fleet["state"] / host)["cards"][0]


def play(fleet, name, *extra, check=True):
    return run_playbook(str(fleet["dir"] / name), fleet["inventory"], *extra, check=check)


def failures(run):
    out = {}
    for event in run["events"]:
        if event.get("event") == "runner_on_failed":
            data = event["event_data"]
            out[data["host"]] = data["res"]
    return out


def four_times(fleet, name, *extra):
    before = snapshot(fleet)
    first = play(fleet, name, "--check", *extra)
    assert changed_count(first) == 2, first["stdout"][-3000:]
    assert snapshot(fleet) == before, "check mode changed the twin"
    second = play(fleet, name, *extra)
    assert changed_count(second) == 2, second["stdout"][-3000:]
    applied = snapshot(fleet)
    assert applied != before
    third = play(fleet, name, *extra)
    assert changed_count(third) == 0, third["stdout"][-3000:]
    fourth = play(fleet, name, "--check", *extra)
    assert changed_count(fourth) == 0, fourth["stdout"][-3000:]
    assert snapshot(fleet) == applied
    return [first, second, third, fourth]


def test_nic_firmware_four_times(fleet):
    runs = four_times(fleet, "nic.yml", "-e", "fw_image=%s" % fleet["images"]["fw"])
    for host in fleet["hosts"]:
        fw = card(fleet, host)["firmware"]
        assert fw["banks"][fw["active_bank"]]["version"] == NEW_FW
        assert fw["running"]["version"] == OLD_FW  # burnt, waiting for a reset
    results = [e["event_data"]["res"] for e in runs[1]["events"] if e.get("event") == "runner_on_ok"
               and e["event_data"].get("task") == "Burn the NIC firmware"]
    assert {r["reset_required"] for r in results} == {"firmware_reset"}
    # activate it for the tests that follow (a power cycle activates everything in the twin)
    for host in fleet["hosts"]:
        dpusim("--root", str(fleet["state"] / host), "power-cycle")
    assert card(fleet, "sim01")["firmware"]["running"]["version"] == NEW_FW


def test_bfb_four_times_changes_the_dpu_os_and_hides_the_password(fleet):
    old = card(fleet, "sim01-dpu")["dpu_os"]["release"]
    assert old != RELEASE
    extra = ("-e", "bfb_image=%s" % fleet["images"]["bfb"], "-e", "bfb_release=%s" % RELEASE)
    runs = four_times(fleet, "bfb.yml", *extra)
    for dpu in fleet["dpus"]:
        assert card(fleet, dpu)["dpu_os"]["release"] == RELEASE
        assert card(fleet, dpu)["arm"]["state"] == "running"
    applied = [e["event_data"]["res"] for e in runs[1]["events"] if e.get("event") == "runner_on_ok"
               and e["event_data"].get("task") == "Install the BFB" and e["event_data"]["res"].get("changed")]
    assert len(applied) == 2
    assert applied[0]["versions"]["before"]["release"] == old
    assert applied[0]["versions"]["after"]["release"] == RELEASE
    assert applied[0]["console"]["marker"] == "Installation finished"
    assert applied[0]["bf_cfg"]["ubuntu_PASSWORD"] == "********"
    for run in runs:
        assert PASSWORD_HASH not in run["stdout"]
        assert PASSWORD_HASH not in json.dumps(run["events"])


def test_psid_mismatch_is_refused_and_nothing_changes(fleet):
    before = snapshot(fleet)
    run = play(fleet, "nic.yml", "--limit", "sim01", "-e", "fw_image=%s" % fleet["images"]["fw-psid"], check=False)
    assert run["rc"] != 0
    msg = failures(run)["sim01"]["msg"]
    assert "PSID mismatch: the card has PSID MT_0000000998" in msg and "is for PSID MT_0000000999" in msg
    assert snapshot(fleet) == before


def test_corrupt_nic_image_is_refused_and_nothing_changes(fleet, tmp_path):
    older = tmp_path / "fw-older-corrupt.bin"
    dpusim("make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version", "32.42.1000", "--corrupt",
           "-o", str(older))
    before = snapshot(fleet)
    running = card(fleet, "sim01")["firmware"]["running"]["version"]
    run = play(fleet, "nic.yml", "--limit", "sim01", "-e", "fw_image=%s" % older, check=False)
    msg = failures(run)["sim01"]["msg"]
    assert "Bad CRC" in msg
    assert msg.endswith("the card still runs %s and its flash holds %s" % (running, running))
    assert snapshot(fleet) == before


def test_interrupted_burn_keeps_the_old_firmware_and_a_rerun_completes(fleet, tmp_path):
    image = tmp_path / "fw-32.45.bin"
    dpusim("make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version", "32.45.1020", "-o", str(image))
    host = str(fleet["state"] / "sim01")
    dpusim("--root", host, "fault", "set", "interrupted_burn")
    other = twin_state(fleet["state"] / "sim02")
    before = card(fleet, "sim01")["firmware"]
    run = play(fleet, "nic.yml", "--limit", "sim01", "-e", "fw_image=%s" % image, check=False)
    res = failures(run)["sim01"]
    assert "the burn was interrupted (exit status 130)" in res["msg"]
    running = before["running"]["version"]
    assert "the card still runs %s and its flash holds %s: run the task again" % (running, running) in res["msg"]
    after = card(fleet, "sim01")["firmware"]
    assert after["running"] == before["running"]
    assert after["active_bank"] == before["active_bank"]
    assert after["banks"][after["active_bank"]] == before["banks"][before["active_bank"]]
    assert twin_state(fleet["state"] / "sim02") == other
    rerun = play(fleet, "nic.yml", "--limit", "sim01", "-e", "fw_image=%s" % image)
    assert changed_count(rerun) == 1
    done = card(fleet, "sim01")["firmware"]
    assert done["banks"][done["active_bank"]]["version"] == "32.45.1020"
    assert done["running"]["version"] == running


def bfb_extra(fleet, image, *more):
    return ("--limit", "sim01-dpu", "-e", "bfb_image=%s" % fleet["images"][image], "-e",
            "bfb_release=bf-bundle-9.9.9-1_26.01_ubuntu-22.04_prod", *more)


def test_corrupt_bfb_is_refused_by_its_sha256_and_nothing_changes(fleet):
    good = subprocess.run(["sha256sum", str(fleet["images"]["bfb"])], capture_output=True, text=True,
                          check=True, timeout=30).stdout.split()[0]
    before = snapshot(fleet)
    run = play(fleet, "bfb.yml", *bfb_extra(fleet, "bfb-corrupt", "-e", "bfb_sha256=%s" % good), check=False)
    msg = failures(run)["sim01-dpu"]["msg"]
    assert "has sha256" in msg and "expected %s" % good in msg
    assert snapshot(fleet) == before


def test_wrong_generation_is_refused_and_nothing_changes(fleet):
    before = snapshot(fleet)
    run = play(fleet, "bfb.yml", *bfb_extra(fleet, "bfb-bf2", "-e", "bfb_generation=2"), check=False)
    msg = failures(run)["sim01-dpu"]["msg"]
    assert "the bundle is for BlueField-2 and the card on" in msg and "is BlueField-3(Rev 1)" in msg
    assert snapshot(fleet) == before


def test_rshim_busy_is_reported_and_nothing_changes(fleet):
    dpusim("--root", str(fleet["state"] / "sim01"), "fault", "set", "rshim_busy")
    try:
        before = snapshot(fleet)
        run = play(fleet, "bfb.yml", *bfb_extra(fleet, "bfb"), check=False)
        res = failures(run)["sim01-dpu"]
        assert res["failure"] == "rshim_unavailable"
        assert "another backend (the BMC) owns it" in res["msg"]
        assert snapshot(fleet) == before
    finally:
        dpusim("--root", str(fleet["state"] / "sim01"), "fault", "clear", "rshim_busy")


def test_dpu_that_never_comes_back(fleet):
    host = str(fleet["state"] / "sim01")
    dpusim("--root", host, "fault", "set", "dpu_never_returns")
    other = {str(r): twin_state(r) for r in (fleet["state"] / "sim02", fleet["state"] / "sim02-dpu")}
    before = card(fleet, "sim01-dpu")
    try:
        run = play(fleet, "bfb.yml", *bfb_extra(fleet, "bfb"), check=False)
        res = failures(run)["sim01-dpu"]
        assert res["failure"] == "stopped"
        assert "the DPU stopped booting the BFB after 'start'" in res["msg"]
        after = card(fleet, "sim01-dpu")
        assert after["dpu_os"] == before["dpu_os"]
        assert after["firmware"] == before["firmware"]
        assert after["arm"]["state"] == "down"
        assert {str(r): twin_state(r) for r in (fleet["state"] / "sim02", fleet["state"] / "sim02-dpu")} == other
    finally:
        dpusim("--root", host, "fault", "clear", "dpu_never_returns")
        dpusim("--root", host, "rshim", "write", "SW_RESET 1")
    assert card(fleet, "sim01-dpu")["arm"]["state"] == "running"
