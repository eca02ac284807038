"""Secrets never reach logs or results: site.yml at -vvv through ansible-runner against a two-pair sim fleet with
an IPsec PSK (roles/ipsec ``ipsec_psk``), BMC passwords (roles/firmware ``firmware_ipmi`` / ``firmware_redfish``)
and the bf.cfg password hash of a BFB install (roles/firmware ``firmware_bfb_password_hash``).

Each secret is random per run. None may appear in any runner event, the stdout, any file ansible-runner wrote
(artifacts, job events), the upgrade records, or the twin's state. The PSK must reach the one place it belongs
(strongSwan's secrets file under the DPU's root, mode 0600) and the BFB install must have run, so the secrets were
really used, not just absent.
"""

from __future__ import annotations

import json
import secrets
import stat
import subprocess

from conftest import BIN, make_sim_inventory, run_playbook, twin_state

NEW_RELEASE = "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"


def dpusim(*argv):
    proc = subprocess.run([str(BIN / "dpusim"), *argv], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, "dpusim %s: %s%s" % (" ".join(argv), proc.stdout, proc.stderr)


def test_site_at_vvv_leaks_no_secret(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    (inventory.parent / "addresses.yml").write_text(
        "all:\n  hosts:\n"
        "    sim01: {bluefleet_host_overlay_address: 10.10.0.1/24}\n"
        "    sim02: {bluefleet_host_overlay_address: 10.10.0.2/24}\n"
        "    sim01-dpu: {bluefleet_uplink_address: 192.168.50.1/24, bluefleet_vtep_address: 172.30.0.1/32}\n"
        "    sim02-dpu: {bluefleet_uplink_address: 192.168.50.2/24, bluefleet_vtep_address: 172.30.0.2/32}\n")
    bfb = tmp_path / "new.bfb"
    dpusim("make-image", "--kind", "bfb", "--profile", "bluefield3", "--version", "2.9.2-31_25.02", "-o", str(bfb))
    found = {
        "psk": secrets.token_urlsafe(36),
        "bfb_hash": "$6$%s$%s" % (secrets.token_hex(8), secrets.token_urlsafe(40)),
        "ipmi_password": "ipmi-" + secrets.token_urlsafe(18),
        "redfish_password": "redfish-" + secrets.token_urlsafe(18),
    }
    records = tmp_path / "records"
    extra = {"ipsec_psk": found["psk"],
             "firmware_bfb_image": str(bfb), "firmware_bfb_version": NEW_RELEASE,
             "firmware_bfb_password_hash": found["bfb_hash"], "firmware_bfb_ready_timeout": 3,
             "firmware_bfb_poll_interval": 1,
             "firmware_ipmi": {"host": "192.0.2.10", "user": "admin", "password": found["ipmi_password"]},
             "firmware_redfish": {"host": "192.0.2.11", "user": "admin", "password": found["redfish_password"],
                                  "system_id": "Bluefield"},
             "bluefleet_state_dir": str(records), "bluefleet_validate": False}
    (tmp_path / "extra.json").write_text(json.dumps(extra))

    # The stages that take none of these secrets (DOCA services, fabric, validate) are left out for time.
    run = run_playbook("site.yml", inventory.parent, "-vvv", "-e", "@%s" % (tmp_path / "extra.json"),
                       "--skip-tags", "services,fabric,validate")
    plays = [e["event_data"]["play"] for e in run["events"] if e.get("event") == "playbook_on_play_start"]
    assert "DPU offload: IPsec between DPUs" in plays and "Rolling upgrade, canary first, then batches" in plays

    def leaks(text, where):
        return ["%s in %s" % (name, where) for name, value in found.items() if value in text]

    problems = leaks(run["stdout"], "stdout")
    for event in run["events"]:
        problems += leaks(json.dumps(event), "event %s/%s" % (event.get("event"), event.get("counter")))
    runner_dirs = sorted(tmp_path.glob("runner-*"))  # run_playbook works next to the inventory it is given
    assert runner_dirs
    written = [p for d in runner_dirs for p in d.rglob("*") if p.is_file() and p.name != "extravars"]
    assert any(p.parent.name == "job_events" for p in written), "ansible-runner wrote its events to disk"
    for path in written:
        problems += leaks(path.read_text(errors="replace"), str(path))
    for path in records.rglob("*"):
        if path.is_file():
            problems += leaks(path.read_text(errors="replace"), str(path))
    state = inventory.parent / "state"
    for host in ("sim01", "sim01-dpu", "sim02", "sim02-dpu"):
        problems += leaks(json.dumps(twin_state(state / host)), "twin state of %s" % host)
    assert not problems, "secrets leaked: %s" % "; ".join(problems[:20])

    # The secrets were used: the PSK is in strongSwan's secrets file (and only readable by its owner) and the
    # BFB (whose bf.cfg carries the hash) was installed.
    secret_files = list((state / "sim01-dpu").rglob("bluefleet-secrets.conf"))
    assert len(secret_files) == 1 and found["psk"] in secret_files[0].read_text()
    assert stat.S_IMODE(secret_files[0].stat().st_mode) == 0o600
    for host in ("sim01-dpu", "sim02-dpu"):
        assert twin_state(state / host)["cards"][0]["dpu_os"]["release"] == NEW_RELEASE
