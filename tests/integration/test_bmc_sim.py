"""playbooks/upgrade.yml -e firmware_path=bmc against a sim fleet whose DPUs each have a twin BMC.

Two BlueField-3 DPU twins, one twin BMC each (dpusim.bmc.server in this process, on loopback), an
inventory naming each BMC in ``bluefleet_bmc`` with the password from BLUEFLEET_BMC_PASSWORD. Check
mode changes nothing; the OOB upgrade (BMC firmware, NIC firmware + card power cycle, BFB) converges
the fleet; a re-run changes nothing; a BMC too old for a BFB stops at preflight with the fix.
"""

from __future__ import annotations

import json
import threading

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
