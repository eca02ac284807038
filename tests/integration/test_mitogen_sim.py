"""The firmware stage, the upgrade playbook and the fabric benchmark under Mitogen (``strategy: mitogen_linear``)
on a sim fleet.

Mitogen runs modules in a persistent interpreter per host instead of one process per task; the roles and
modules must give the same results there: check mode touches nothing, the apply changes the cards, the second
run changes nothing, and the upgrade leaves every DPU on the new firmware. docs/MITOGEN.md says how to enable it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import BIN, ROOT, ansible_env, make_sim_inventory, twin_state

from bluefleet import strategy as bluefleet_strategy

NEW_FW = "32.43.1014"
NEW_RELEASE = "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"
PASSWORD_HASH = "$1$3B0RIrfX$TlHry93NFUJzg3Nya00rE1"  # bf.cfg ubuntu_PASSWORD (as test_upgrade_sim)
DPUS = ["sim01-dpu", "sim02-dpu"]
# ansible-core's warning whenever a strategy from outside ansible.builtin runs: proof that Mitogen's was used
THIRD_PARTY_STRATEGY = "strategy plugins not included in ansible.builtin"


@pytest.fixture(scope="module")
def mitogen_env():
    if not bluefleet_strategy.mitogen_strategy_dir():
        if os.environ.get("CI") == "true":
            pytest.fail("mitogen is not installed (the dev extra pins it): run `make venv`")
        pytest.skip("not run: mitogen is not installed (the dev extra pins it; `make venv` installs it)")
    env = ansible_env()
    env.update(bluefleet_strategy.strategy_env("mitogen_linear"))
    return env


def play(env, inventory, playbook, *extra, ok=True, timeout=1800):
    proc = subprocess.Popen([str(BIN / "ansible-playbook"), "-i", str(inventory), playbook, *extra], cwd=str(ROOT),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # ansible-playbook, its workers and Mitogen's interpreters
        out = proc.communicate()[0]
        stuck = end_unfinished_async_jobs(env)
        task = out[out.rfind("TASK ["):].partition("\n")[0] if "TASK [" in out else "(no task started)"
        pytest.fail("%s under Mitogen did not finish within %d s, in %s (async jobs left unfinished: %s; a collection "
                    "module started with async under Mitogen's connection, mitogen-hq/mitogen#835?):\n%s"
                    % (playbook, timeout, task, stuck or "none seen", out[-2000:]))
    if not ok:
        assert proc.returncode != 0, "%s under Mitogen did not fail:\n%s" % (playbook, stdout[-6000:])
        return stdout
    assert proc.returncode == 0, "%s under Mitogen failed:\n%s%s" % (playbook, stdout[-6000:], stderr[-3000:])
    assert THIRD_PARTY_STRATEGY in stderr, "the run did not use Mitogen's strategy: %s" % stderr[-2000:]
    return stdout


def end_unfinished_async_jobs(env):
    """End the async jobs of a run that did not finish, by the pid in their job files (ANSIBLE_ASYNC_DIR of the
    run); Mitogen's forked child starts its own session, so ending the run's process group leaves it behind."""
    stuck = []
    async_dir = env.get("ANSIBLE_ASYNC_DIR")
    for path in sorted(Path(async_dir).glob("*")) if async_dir else []:
        try:
            job = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if job.get("finished") == 0 and job.get("pid"):
            stuck.append("%s (pid %s)" % (path.name, job["pid"]))
            try:
                os.kill(int(job["pid"]), signal.SIGKILL)
            except ProcessLookupError:
                pass
    return ", ".join(stuck)


def changed(stdout):
    """Sum of changed= over the PLAY RECAP lines."""
    total = 0
    for line in stdout.splitlines():
        if " changed=" in line and " ok=" in line:
            total += int(line.split(" changed=")[1].split()[0])
    return total


def cards(inventory, dpus=tuple(DPUS)):
    return {host: twin_state(inventory.parent / "state" / host)["cards"][0] for host in dpus}


def test_firmware_stage_under_mitogen(tmp_path, mitogen_env, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    extra = tmp_path / "vars.yml"
    extra.write_text("firmware_nvconfig: {NUM_OF_VFS: 8, SRIOV_EN: true}\n")
    subprocess.run([str(BIN / "ansible-inventory"), "-i", str(inventory), "--list"], env=mitogen_env, check=True,
                   capture_output=True, timeout=600)  # creates the twin roots
    before = cards(inventory)
    check = play(mitogen_env, inventory, "playbooks/firmware.yml", "-e", "@%s" % extra, "--check", "--diff")
    assert changed(check) > 0 and "NUM_OF_VFS: 16 -> 8" in check
    assert cards(inventory) == before, "check mode under Mitogen changed a card"
    apply = play(mitogen_env, inventory, "playbooks/firmware.yml", "-e", "@%s" % extra)
    assert changed(apply) > 0
    for host, card in cards(inventory).items():
        assert card["mlxconfig"]["current"]["NUM_OF_VFS"] == 8, host
        assert card["arm_boot_id"] == before[host]["arm_boot_id"] + 1, "%s: exactly one firmware reset" % host
    again = play(mitogen_env, inventory, "playbooks/firmware.yml", "-e", "@%s" % extra)
    assert changed(again) == 0, again[-4000:]


def test_upgrade_playbook_under_mitogen(tmp_path, mitogen_env, collection_link):
    """Canary, then two DPUs in one batch: each one's mlxfwreset ends its session (the Arm restarts), and the reset's
    wait for the node must not cut the other's task (Mitogen serves every local host from one context)."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=3)
    image = tmp_path / "fw.bin"
    subprocess.run([str(BIN / "dpusim"), "make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version",
                    NEW_FW, "-o", str(image)], check=True, capture_output=True, timeout=60)
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"firmware_nic_image": str(image), "firmware_nic_version": NEW_FW,
                                 "upgrade_serial": ["1", "2"], "bluefleet_state_dir": str(tmp_path / "records")}))
    first = play(mitogen_env, inventory, "playbooks/upgrade.yml", "-e", "@%s" % extra)
    assert changed(first) > 0
    dpus = DPUS + ["sim03-dpu"]
    assert {host: card["firmware"]["running"]["version"] for host, card in cards(inventory, dpus).items()} == \
        dict.fromkeys(dpus, NEW_FW)
    second = play(mitogen_env, inventory, "playbooks/upgrade.yml", "-e", "@%s" % extra)
    assert changed(second) == 0, second[-4000:]


def test_bfb_upgrade_under_mitogen(tmp_path, mitogen_env, collection_link):
    """The BFB install (bluefleet.dpu.bfb_install, delegated to the DPU's host, async with poll) finishes under
    Mitogen: Mitogen's own async runner hangs on a collection module (mitogen-hq/mitogen#835), so the firmware role
    runs that task over Ansible's connection plugin. A hang fails here after 300 s instead of blocking the suite."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    bfb = tmp_path / "new.bfb"
    subprocess.run([str(BIN / "dpusim"), "make-image", "--kind", "bfb", "--profile", "bluefield3", "--version",
                    "2.9.2-31_25.02", "-o", str(bfb)], check=True, capture_output=True, timeout=60)
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"firmware_bfb_image": str(bfb), "firmware_bfb_version": NEW_RELEASE,
                                 "firmware_bfb_password_hash": PASSWORD_HASH, "firmware_bfb_ready_timeout": 3,
                                 "firmware_bfb_poll_interval": 1, "bluefleet_state_dir": str(tmp_path / "records")}))
    env = dict(mitogen_env, DPUSIM_TIME_SCALE="0.001", ANSIBLE_ASYNC_DIR=str(tmp_path / "async"))
    root = inventory.parent / "state" / "sim01-dpu"
    before = twin_state(root)["cards"][0]["dpu_os"]["release"]
    assert before != NEW_RELEASE
    first = play(env, inventory, "playbooks/upgrade.yml", "-e", "@%s" % extra, timeout=300)
    assert changed(first) > 0
    assert twin_state(root)["cards"][0]["dpu_os"]["release"] == NEW_RELEASE
    second = play(env, inventory, "playbooks/upgrade.yml", "-e", "@%s" % extra, timeout=300)
    assert changed(second) == 0, second[-4000:]


def test_fabric_benchmark_under_mitogen(tmp_path, mitogen_env, collection_link):
    """ib_write_bw's server runs in the background (async, poll 0) and the DPU-path receiver of the offload dividend
    too: under Mitogen both finish (Mitogen's own async runner hangs on a collection module, mitogen-hq/mitogen#835,
    so the playbook runs them over Ansible's connection plugin), and the client does not race its server (it tries
    again while the background server is not listening yet). When the server fails, its host says so and the client
    says it found no server; when the client alone fails, the server's host says why its later play measured
    nothing instead of a raw template error."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    args = ("--tags", "perftest,dividend", "-e", "fabric_benchmark_duration=1", "-e", "fabric_benchmark_use_cuda=false",
            "-e", "fabric_benchmark_min_bw_gbps=100")
    out = play(mitogen_env, inventory, "playbooks/fabric_benchmark.yml", "-e", "fabric_benchmark_tcp_port=24131", *args)
    assert "sim02 -> sim01: 109.52 Gb/s average (MTU 1024, GID 1, ToS 104, GPU memory False)" in out
    waited = out.split("TASK [Wait for the server's report]")[1].split("TASK [")[0]
    assert "ok: [sim01]" in waited, waited  # the server's background job finished and was collected
    assert "sim02: not measurable on a twin" in out  # the receiver's background job was collected
    env = dict(mitogen_env, DPUSIM_PERFTEST_WAIT="0")  # the twin's server gives up before the client comes
    failed = play(env, inventory, "playbooks/fabric_benchmark.yml", "-e", "fabric_benchmark_tcp_port=24132",
                  "-e", "fabric_benchmark_connect_wait=10", *args, ok=False)
    failed = " ".join(failed.split())  # the callback wraps long messages
    assert "sim01: the ib_write_bw server failed: measure RDMA write bandwidth on mlx5_0 (server)" in failed
    assert "no client on port 24132" in failed
    # the client found no server listening (it had ended): it tried for connect_wait and said so
    assert "no ib_write_bw server listened on" in failed and "TCP port 24132 within connect_wait 10 s" in failed
    assert "the ib_write_bw server's report is not collected" not in failed  # the server's own error is the cause
    assert "Error while evaluating conditional" not in failed and "HostVarsVars" not in failed
    # the client alone fails (too slow): the server's host goes on; its later play names the partner that failed
    slow = play(mitogen_env, inventory, "playbooks/fabric_benchmark.yml", "-e", "fabric_benchmark_tcp_port=24133",
                *args, "-e", "fabric_benchmark_min_bw_gbps=1000", ok=False)
    slow = " ".join(slow.split())
    assert "is below min_bw_gbps 1000" in slow
    assert "sim01: the ib_write_bw server failed" not in slow and "did not finish within" not in slow
    assert "sim01: offload dividend not measured: the partner sim02 failed earlier in this run" in slow
    assert "Error while evaluating conditional" not in slow and "HostVarsVars" not in slow
