"""playbooks/upgrade.yml -e firmware_path=bmc against a sim fleet whose DPUs each have a twin BMC.

Two BlueField-3 DPU twins, one twin BMC each (dpusim.bmc.server in this process, on loopback), an
inventory naming each BMC in ``bluefleet_bmc`` with the password from BLUEFLEET_BMC_PASSWORD. Check
mode changes nothing; the OOB upgrade (BMC firmware, NIC firmware + card power cycle, BFB) converges
the fleet; a re-run changes nothing; a BMC too old for a BFB stops at preflight with the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import changed_count, run_playbook

from dpusim import images, state
from dpusim.bmc import server, service

PASSWORD = "s3cret-Pass1"


@pytest.fixture
def fleet(tmp_path, monkeypatch, collection_link):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0.001")
    monkeypatch.setenv("BLUEFLEET_BMC_PASSWORD", PASSWORD)
    servers, roots, hosts = [], {}, {}
    for name, firmware in (("dpu1", "24.10"), ("dpu2", "24.10")):
        root = tmp_path / "state" / name
        state.init_node(root, ["bluefield3"], "dpu", [None])
        httpd = server.build_server(service.Bmc(root, password=PASSWORD, firmware=firmware), "127.0.0.1", 0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        roots[name] = root
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": "auto_silent",
                       "bluefleet_bmc": {"address": "http://127.0.0.1:%d" % httpd.server_address[1],
                                         "username": "root", "validate_certs": False}}
    inventory = tmp_path / "inventory" / "fleet.yml"
    inventory.parent.mkdir()
    inventory.write_text(json.dumps({"all": {"children": {"dpus": {"hosts": hosts}, "gpu_hosts": {"hosts": {}}}}}))
    images.make_image("nic-fw", "bluefield3", "32.43.1014", tmp_path / "fw.bin")
    service.make_image("bmc-fw", "BF-24.10-33", tmp_path / "bmc.fwpkg")
    images.make_image("bfb", "bluefield3", "2.9.2-31_24.11", tmp_path / "new.bfb", nic_fw_version="32.43.1014")
    extra = ["-e", "firmware_path=bmc", "-e", "bmc_upgrade_poll_interval=0",
             "-e", "bmc_upgrade_serve_address=127.0.0.1",
             "-e", "firmware_nic_image=%s" % (tmp_path / "fw.bin"), "-e", "firmware_nic_version=32.43.1014",
             "-e", "firmware_bmc_image=%s" % (tmp_path / "bmc.fwpkg"), "-e", "firmware_bmc_version=BF-24.10-33",
             "-e", "firmware_bfb_image=%s" % (tmp_path / "new.bfb"),
             "-e", "firmware_bfb_version=%s" % images.bfb_release("2.9.2-31_24.11")]
    yield inventory, roots, extra
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def cards(roots):
    return {name: state.load_node(root).cards[0].data for name, root in roots.items()}


def test_oob_upgrade_converges_and_a_rerun_changes_nothing(fleet):
    inventory, roots, extra = fleet
    before = cards(roots)
    run_playbook("playbooks/upgrade.yml", inventory, "--check", *extra)
    after_check = cards(roots)
    for name in roots:
        assert after_check[name]["firmware"] == before[name]["firmware"]
        assert after_check[name]["bmc"]["versions"] == before[name]["bmc"]["versions"]
        assert after_check[name]["bmc"]["tasks"] == []
    first = run_playbook("playbooks/upgrade.yml", inventory, *extra)
    assert changed_count(first) > 0
    for name, card in cards(roots).items():
        assert card["firmware"]["running"]["version"] == "32.43.1014", name
        assert card["bmc"]["versions"]["bmc"] == "BF-24.10-33", name
        assert card["dpu_os"]["release"] == images.bfb_release("2.9.2-31_24.11"), name
    second = run_playbook("playbooks/upgrade.yml", inventory, *extra)
    assert changed_count(second) == 0, second["stdout"][-3000:]


def test_rshim_held_by_the_host_stops_at_preflight_with_the_fix(fleet):
    inventory, roots, extra = fleet
    with state.open_node(roots["dpu1"]) as node:
        node.cards[0].data["bmc"]["host_rshim"] = "Enabled"
    before = cards(roots)
    run = run_playbook("playbooks/upgrade.yml", inventory, *extra, check=False)
    assert run["rc"] != 0
    assert "rshim_not_held_by_host" in run["stdout"] and "systemctl stop rshim" in run["stdout"]
    assert cards(roots)["dpu1"]["firmware"] == before["dpu1"]["firmware"]
    assert cards(roots)["dpu2"]["firmware"] == before["dpu2"]["firmware"]  # the canary failed: no batch ran


READ_BMCS = """
- name: Read every DPU's BMC
  hosts: dpus
  gather_facts: false
  tasks:
    - name: Read the BMC
      bluefleet.dpu.bmc_info:
        bmc: "{{ bluefleet_bmc }}"
      delegate_to: localhost
"""


def _free_ports(count):
    import socket
    for base in range(20000 + os.getpid() % 20000, 60000, 7):
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError("no %d free consecutive loopback ports" % count)


def test_sim_inventory_bmc_port_names_a_bmc_per_dpu_that_bluefleet_sim_bmc_serves(tmp_path, monkeypatch,
                                                                                  collection_link):
    """The sim plugin's bmc_port: every DPU names its BMC; `bluefleet sim init` starts nothing; `bluefleet sim
    bmc` serves them over the DPUs' twin roots until SIGTERM; bmc_info reads each card's versions."""
    monkeypatch.setenv("BLUEFLEET_BMC_PASSWORD", PASSWORD)
    base = _free_ports(2)
    inventory = tmp_path / "inventory" / "fleet.sim.yml"
    inventory.parent.mkdir()
    inventory.write_text("plugin: bluefleet.dpu.sim\nnodes: 2\nprefix: oob\nbmc_port: %d\n" % base)
    bluefleet = str(Path(sys.executable).parent / "bluefleet")
    subprocess.run([bluefleet, "sim", "init", "-i", str(inventory)], check=True, capture_output=True, timeout=300)
    with open(tmp_path / "sim-bmc.err", "w") as err:
        proc = subprocess.Popen([bluefleet, "sim", "bmc", "-i", str(inventory)], stdout=subprocess.PIPE, stderr=err,
                                text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any(x.startswith("bluefleet sim: 2 BMC(s) serving") for x in lines) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert any(x.startswith("bluefleet sim: 2 BMC(s) serving") for x in lines), \
            "".join(lines) + (tmp_path / "sim-bmc.err").read_text()
        assert "bluefleet sim: oob01-dpu BMC at http://127.0.0.1:%d\n" % base in lines
        run = run_playbook(str(_write(tmp_path / "read.yml", READ_BMCS)), inventory)
        reads = {e["event_data"]["host"]: e["event_data"]["res"] for e in run["events"]
                 if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Read the BMC"}
        assert set(reads) == {"oob01-dpu", "oob02-dpu"}
        for name, res in reads.items():
            card = state.load_node(tmp_path / "inventory" / ".state" / name).cards[0].data
            assert res["firmware"]["DPU_NIC"] == card["firmware"]["running"]["version"], name
            assert res["bmc_version"] == card["bmc"]["versions"]["bmc"], name
        assert PASSWORD not in run["stdout"]
    finally:
        proc.terminate()
        rc = proc.wait(timeout=30)
    assert rc == 0
    import socket
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", base), timeout=2).close()


def test_bluefleet_sim_bmc_without_the_password_or_bmc_port_says_the_fix(tmp_path, monkeypatch, collection_link):
    bluefleet = str(Path(sys.executable).parent / "bluefleet")
    inventory = tmp_path / "fleet.sim.yml"
    inventory.write_text("plugin: bluefleet.dpu.sim\nnodes: 1\nprefix: oob\n")
    env = {k: v for k, v in os.environ.items() if k != "BLUEFLEET_BMC_PASSWORD"}
    proc = subprocess.run([bluefleet, "sim", "bmc", "-i", str(inventory)], capture_output=True, text=True, check=False,
                          timeout=120, env=env)
    assert proc.returncode == 2 and "BLUEFLEET_BMC_PASSWORD is not set" in proc.stderr
    proc = subprocess.run([bluefleet, "sim", "bmc", "-i", str(inventory)], capture_output=True, text=True, check=False,
                          timeout=300, env=dict(env, BLUEFLEET_BMC_PASSWORD=PASSWORD))
    assert proc.returncode == 2 and "names no twin BMC: set bmc_port" in proc.stderr


def _write(path, text):
    path.write_text(text)
    return path
