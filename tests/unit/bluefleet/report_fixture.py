"""A run folder as `bluefleet run` writes it, built for report tests (no playbook, no twin).

Shapes: summary.json and facts.json as src/bluefleet/run.py writes them (stats from ansible-runner's
playbook_on_stats event data, dpu_info / gpu_info results as their RETURN documents them), evidence.json as
tests/validation/conftest.py writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

PSK = "s3cr3t-psk-must-not-leak"
PASSWORD = "hunter2-bfcfg-password"

# Verbatim from ../shared/corpus/ethtool/bf3-host-ethtool-i-rhel94-aarch64.txt (`ethtool -i enP2s2f0np0`,
# BlueField-3 B3220 seen from an aarch64 RHEL 9.4 host); its provenance header is left out.
ETHTOOL_I = (
    "driver: mlx5_core\n"
    "version: 5.14.0-427.50.1.el9_4.aarch64\n"
    "firmware-version: 32.43.1014 (MT_0000000884)\n"
    "expansion-rom-version: \n"
    "bus-info: 0002:01:00.0\n"
    "supports-statistics: yes\n"
    "supports-test: yes\n"
    "supports-eeprom-access: no\n"
    "supports-register-dump: no\n"
    "supports-priv-flags: yes\n")

HOSTS = {"node1": ["gpu_hosts"], "node2": ["gpu_hosts"], "node1-dpu": ["dpus"], "node2-dpu": ["dpus"]}


def _dpu_info(flashed: str, running: str, dpu: bool) -> dict:
    out = {"changed": False, "side": "dpu" if dpu else "host",
           "devices": [{"mst": "/dev/mst/mt41692_pciconf0", "device_type": "BlueField3(rev:1)", "bluefield": True,
                        "psid": "MT_0000000884", "netdevs": ["p0"] if dpu else ["ens1f0np0"],
                        "firmware": {"available": True, "flashed": flashed, "running": running,
                                     "pending_reset": flashed != running, "psid": "MT_0000000884"}}],
           "tool_versions": {"mst": "mst, mft 4.30.0-139, built on Oct 10 2024, 09:51:39. Git SHA Hash: N/A"}}
    if dpu:
        out["dpu_os"] = {"available": True, "release": "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod",
                         "doca_version": "2.9.1"}
    return out


def make_run_folder(path: Path, *, failing: str | None = None, running: dict | None = None,
                    gpu_driver: dict | None = None, unreachable: str | None = None,
                    not_applicable: str | None = None) -> Path:
    """A run folder at ``path``. ``failing``: a host whose fabric check fails; ``running``: host -> running
    firmware (flashed stays 32.43.1014); ``gpu_driver``: host -> driver; ``unreachable``: a host the playbook
    could not reach; ``not_applicable``: a DPU where the HBN check is N/A (passed on the other DPU)."""
    running = running or {}
    gpu_driver = gpu_driver or {}
    path.mkdir(parents=True)
    stats = {}
    for host in HOSTS:
        stats[host] = {"ok": 8, "changed": 1 if host == "node1" else 0, "failures": 0, "unreachable": 0,
                       "skipped": 1, "rescued": 0, "ignored": 0}
    stats["localhost"] = {"ok": 0, "changed": 0, "failures": 0, "unreachable": 0, "skipped": 3, "rescued": 0,
                          "ignored": 0}  # playbooks/validate.yml skipped on the controller
    failures = {}
    if unreachable:
        stats[unreachable].update(ok=0, unreachable=1)
        failures[unreachable] = [{"task": "Read the cards", "msg": "Failed to connect to the host via ssh"}]
    summary = {"format": "bluefleet-run/1", "started": path.name, "finished": path.name, "seconds": 12.5,
               "stage": "site", "playbook": "site.yml", "inventory": "/inv/fleet.yml", "limit": None,
               "check": False, "status": "failed" if unreachable else "successful",
               "exit_code": 3 if unreachable else (1 if failing else 0), "hosts": HOSTS, "stats": stats,
               "task_failures": failures,
               # what a careless extra var would carry: the report must not show it
               "extra": {"ipsec_psk": PSK, "bfb_password": PASSWORD}}
    checks = [{"nodeid": "tests/validation/test_wiring.py::test_selection_has_hosts", "check":
               "test_selection_has_hosts", "module": "test_wiring", "stage": "preflight", "hosts": [],
               "outcome": "passed", "message": "", "commands": []}]
    for host in HOSTS:
        checks.append({"nodeid": "tests/validation/test_wiring.py::test_mst_shows_card[%s]" % host,
                       "check": "test_mst_shows_card", "module": "test_wiring", "stage": "preflight",
                       "hosts": [host], "outcome": "passed", "message": "",
                       "commands": [{"host": host, "command": "mst status -v", "rc": 0,
                                     "stdout": "DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA\n", "stderr": ""}]})
    for host in ("node1-dpu", "node2-dpu"):
        bad = host == failing
        checks.append({
            "nodeid": "tests/validation/test_fabric.py::test_roce_trust[%s-pf0hpf]" % host,
            "check": "test_roce_trust[pf0hpf]", "module": "test_fabric", "stage": "fabric", "hosts": [host],
            "outcome": "failed" if bad else "passed",
            "message": ("AssertionError: %s: pf0hpf trust is pcp, expected dscp; fix: bluefleet_roce_trust / "
                        "playbooks/fabric.yml (conn psk=%s)" % (host, PSK)) if bad else "",
            "commands": [{"host": host, "command": "mlnx_qos -i pf0hpf", "rc": 0,
                          "stdout": "Priority trust state: %s\n</script><b>x</b>\n" % ("pcp" if bad else "dscp"),
                          "stderr": ""},
                         {"host": host, "command": "swanctl --list-conns", "rc": 0,
                          "stdout": "secret = %s\npsk: %s\n" % (PSK, PSK), "stderr": ""}]})
    checks.append({"nodeid": "tests/validation/test_wiring.py::test_pair_sees_one_card[node1+node1-dpu]",
                   "check": "test_pair_sees_one_card", "module": "test_wiring", "stage": "preflight",
                   "hosts": ["node1", "node1-dpu"], "outcome": "passed", "message": "",
                   "commands": [{"host": "node1", "command": "flint -d /dev/mst/mt41692_pciconf0 q", "rc": 0,
                                 "stdout": "PSID: MT_0000000884\n", "stderr": ""}]})
    if not_applicable:
        for host in ("node1-dpu", "node2-dpu"):
            na = host == not_applicable
            checks.append({
                "nodeid": "tests/validation/test_services.py::test_hbn_routes_present[%s]" % host,
                "check": "test_hbn_routes_present", "module": "test_services", "stage": "services", "hosts": [host],
                "outcome": "not_applicable" if na else "passed",
                "message": ("not applicable: %s does not ask for DOCA HBN (doca_services_list)" % host) if na else "",
                "commands": [] if na else [{"host": host, "command": "crictl exec -q x vtysh", "rc": 0,
                                            "stdout": "{}", "stderr": ""}]})
    evidence = {"format": "bluefleet-evidence/1", "exitstatus": 1 if failing else 0,
                "stages": ["preflight", "firmware", "offload", "services", "fabric", "zero_trust"],
                "inventory": "/inv/fleet.yml", "hosts": HOSTS, "not_applicable": [], "checks": checks}
    facts = {}
    for host, groups in HOSTS.items():
        dpu = "dpus" in groups
        facts[host] = {"groups": groups, "dpu_info": _dpu_info("32.43.1014", running.get(host, "32.43.1014"), dpu)}
        if not dpu:
            facts[host]["gpu_info"] = {"gpus": {"available": True, "driver_version": gpu_driver.get(host, "550.127.08"),
                                                "cuda_version": "12.4", "devices": []},
                                       "peermem": {"available": True, "loaded": True, "version": "1.1-0"}}
            facts[host]["ethtool_i"] = ETHTOOL_I
    facts["node1"]["dpu_info"]["bfb_password"] = PASSWORD  # a key that says secret: redacted by name
    for name, data in (("summary.json", summary), ("evidence.json", evidence), ("facts.json", facts)):
        (path / name).write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path
