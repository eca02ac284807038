"""The container lab: `bluefleet lab images|up|wire|down` against the real Docker engine.

Marked ``docker``: with no Docker engine these tests FAIL with a message saying how to start one
(scripts/ensure-docker.sh); they are never skipped. They need root (veths by container PID) and
the lab images (built once, then reused: the first run on a fresh machine takes ~2 minutes).
The lab prefix ``bft<6 hex of the checkout's path>`` (or $BLUEFLEET_TEST_LAB_PREFIX) keeps them apart from a
demo lab (``bf``), Molecule's (``mol``, which `make test` runs beside the integration phase), the dividend lab's
(``bfdv``) and the lab tests of another checkout on the same engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from bluefleet import lab_bmc, lab_images, lab_wiring
from bluefleet.lab_wiring import Topology

# the lab's community.docker connection: Ansible's default strategy
ANSIBLE_STRATEGY = "linear"

ROOT = Path(__file__).resolve().parents[2]
BLUEFLEET = str(Path(sys.executable).parent / "bluefleet")
# The labs that may stand beside this file's: a demo lab, Molecule's (`make test` runs Molecule beside the
# integration phase) and test_dividend_lab.py's.
NEIGHBOUR_PREFIXES = (lab_wiring.DEFAULT_PREFIX, "mol", os.environ.get("BLUEFLEET_DIVIDEND_LAB", "bfdv"))
NEIGHBOUR_SUBNETS = frozenset(lab_wiring.default_fabric_subnet(p) for p in NEIGHBOUR_PREFIXES)


def lab_prefix_for(root: Path) -> str:
    """``bft`` + 6 hex digits of the checkout's path; the next digits of the hash where that prefix's subnets would
    be a neighbour lab's (the subnet is picked from the prefix: about 1 checkout in 100 would clash otherwise)."""
    digest = hashlib.sha256(str(root).encode()).hexdigest()
    for start in range(0, len(digest) - 5):
        prefix = "bft" + digest[start:start + 6]
        if lab_wiring.default_fabric_subnet(prefix) not in NEIGHBOUR_SUBNETS:
            return prefix
    raise AssertionError("no lab prefix for %s leaves the neighbour labs' subnets free" % root)


PREFIX = os.environ.get("BLUEFLEET_TEST_LAB_PREFIX") or lab_prefix_for(ROOT)


def lab(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    argv = [BLUEFLEET, "lab", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})),
                          check=False, cwd=ROOT)


def resources(prefix: str = PREFIX) -> dict[str, list[str]]:
    return lab_wiring.lab_resources(prefix)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """A Docker engine and the lab images; fails (never skips) when there is none.

    The images are built from a snapshot of the twin (BLUEFLEET_TWIN_SRC), so edits to src/dpusim
    while the tests run cannot move the tags between two `up`s."""
    try:
        lab_images.require_docker()
    except lab_images.LabError as exc:
        pytest.fail("the lab tests need a Docker engine: %s" % exc)
    if os.geteuid() != 0:
        pytest.fail("the lab tests need root (veths are made by container PID): run them as root")
    snapshot = tmp_path_factory.mktemp("twin") / "dpusim"
    shutil.copytree(lab_images.twin_dir(), snapshot, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BLUEFLEET_TWIN_SRC", str(snapshot))
        proc = lab("images")
        assert proc.returncode == 0, "bluefleet lab images failed:\n%s%s" % (proc.stdout, proc.stderr)
        yield lab_images.planned_images()


@pytest.fixture
def clean_lab():
    lab_wiring.teardown(PREFIX)
    yield PREFIX
    lab_wiring.teardown(PREFIX)
    assert not any(resources().values()), "bluefleet lab down left %s" % resources()


def _links(container: str) -> dict[str, dict]:
    out = subprocess.run(["docker", "exec", container, "ip", "-j", "link", "show"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return {x["ifname"]: x for x in json.loads(out)}


def _twin_role(container: str) -> str:
    out = subprocess.run(["docker", "exec", container, "dpusim", "state"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return json.loads(out)["node"]["role"]


# ------------------------------------------------------------------ no engine needed
def test_lab_prefix_leaves_the_neighbour_labs_subnets_free():
    """A checkout whose first 6 hex digits would give Molecule's or the dividend lab's subnet gets the next digits:
    the lab tests and Molecule run at the same time under `make test`."""
    taken = NEIGHBOUR_SUBNETS
    clashing = next(Path("/clone-%d" % i) for i in range(100000)
                    if lab_wiring.default_fabric_subnet(
                        "bft" + hashlib.sha256(b"/clone-%d" % i).hexdigest()[:6]) in taken)
    plain = "bft" + hashlib.sha256(str(clashing).encode()).hexdigest()[:6]
    chosen = lab_prefix_for(clashing)
    assert chosen != plain and chosen.startswith("bft") and len(chosen) == 9
    assert lab_wiring.default_fabric_subnet(chosen) not in taken
    assert lab_prefix_for(ROOT) == lab_prefix_for(ROOT)  # the same checkout, the same lab


def test_molecule_scenario_uses_the_lab_layout():
    """molecule/default names its platforms, volumes and pairing vars as `bluefleet lab up` does."""
    spec = yaml.safe_load((ROOT / "molecule" / "default" / "molecule.yml").read_text())
    topo = Topology("mol", 2)
    assert spec["provisioner"]["inventory"]["host_vars"] == lab_wiring.host_vars(topo)
    group_all = spec["provisioner"]["inventory"]["group_vars"]["all"]
    assert {k: group_all.get(k) for k in lab_wiring.TWIN_VARS} == lab_wiring.TWIN_VARS
    assert {k: group_all.get(k) for k in lab_wiring.CONNECTION_VARS} == lab_wiring.CONNECTION_VARS
    platforms = {p["name"]: p for p in spec["platforms"]}
    for pair in topo.all_pairs():
        host, dpu = platforms[pair.host], platforms[pair.dpu]
        assert host["groups"] == ["gpu_hosts"] and dpu["groups"] == ["dpus"]
        assert host["network_mode"] == "none"
        assert [n["name"] for n in dpu["networks"]] == [topo.fabric]
        assert dpu["networks"][0]["ipv4_address"] == str(topo.fabric_network[pair.index])
        card = "%s:%s" % (pair.volume, lab_wiring.CARD_MOUNT)
        assert card in host["volumes"] and card in dpu["volumes"]
        assert "NET_ADMIN" in host["capabilities"] and "NET_ADMIN" in dpu["capabilities"]
        assert not host.get("privileged") and not dpu.get("privileged")
    assert set(platforms) == {n for p in topo.all_pairs() for n in (p.host, p.dpu)}
    fabric = [n for p in spec["platforms"] for n in p.get("docker_networks", [])]
    assert [n["ipam_config"][0]["subnet"] for n in fabric] == [topo.fabric_subnet]
    assert topo.fabric_subnet != lab_wiring.default_fabric_subnet(lab_wiring.DEFAULT_PREFIX), \
        "Molecule's fabric must not be the demo lab's: both may be up at once"
    seq = spec["scenario"]["test_sequence"]
    assert seq == ["destroy", "create", "prepare", "converge", "idempotence", "verify", "destroy"]


def test_image_tags_follow_their_inputs(tmp_path, monkeypatch):
    """A twin change moves the gpu-host and dpu tags and leaves the base tag alone."""
    before = lab_images.planned_images()
    assert before == lab_images.planned_images()
    twin = tmp_path / "dpusim"
    shutil.copytree(lab_images.twin_dir(), twin, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(lab_images, "twin_dir", lambda: twin)
    assert lab_images.planned_images() == before
    (twin / "__init__.py").write_text((twin / "__init__.py").read_text() + "\n# changed\n")
    after = lab_images.planned_images()
    assert after.base == before.base
    assert after.gpu_host != before.gpu_host and after.dpu != before.dpu


def test_missing_debootstrap_is_installed_or_named(monkeypatch):
    """No debootstrap: apt-get installs it; when that fails too, one message says what to install."""
    calls = []

    def fake_run(argv, **kwargs):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 100, "", "E: Unable to locate package debootstrap")

    monkeypatch.setattr(lab_images, "find_debootstrap", lambda: None)
    monkeypatch.setattr(lab_images, "require_root", lambda why: None)
    monkeypatch.setattr(lab_images, "run", fake_run)
    with pytest.raises(lab_images.LabError, match=r"apt-get install debootstrap\) and run again"):
        lab_images._ensure_debootstrap()
    assert [*lab_images.APT_GET, "install", "-y", "-q", "debootstrap"] in calls
    assert [*lab_images.APT_GET, "update", "-q"] in calls


# ------------------------------------------------------------------ against Docker
@pytest.mark.docker
def test_up_wires_pair_is_idempotent_and_down_leaves_nothing(engine, clean_lab, tmp_path):
    inv = tmp_path / "hosts.yml"
    first = lab("up", "--pairs", "1", "--prefix", PREFIX, "--inventory", str(inv))
    assert first.returncode == 0, first.stdout + first.stderr
    host, dpu = PREFIX + "-node1", PREFIX + "-node1-dpu"
    hl, dl = _links(host), _links(dpu)
    assert hl["ens1f0np0"]["operstate"] == "UP"
    assert dl["pf0hpf"]["operstate"] == "UP" and "UP" in dl["p0"]["flags"]
    assert "eth0" not in dl and set(hl) == {"lo", "ens1f0np0"}
    assert _twin_role(host) == "host" and _twin_role(dpu) == "dpu"
    data = yaml.safe_load(inv.read_text())
    children = data["all"]["children"]
    pairing = lab_wiring.host_vars(Topology(PREFIX, 1))
    assert children["gpu_hosts"]["hosts"] == {host: pairing[host]}
    assert children["dpus"]["hosts"] == {dpu: pairing[dpu]}
    assert pairing[host]["bluefleet_dpus"] == [dpu]
    assert pairing[dpu]["bluefleet_host"] == host and pairing[dpu]["bluefleet_rshim"] == "rshim0"
    assert data["all"]["vars"]["ansible_connection"] == "community.docker.docker"
    # a module reaches a lab container in one `docker exec`, fed on stdin (pipelining), no file copied in
    from conftest import ansible_env
    ping = subprocess.run([str(Path(sys.executable).parent / "ansible"), dpu, "-i", str(inv), "-m",
                           "ansible.builtin.ping", "-vvv"], capture_output=True, text=True, timeout=120,
                          env=ansible_env(), check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    execs = [line for line in ping.stdout.splitlines() if line.startswith("<%s> EXEC " % dpu)]
    assert len(execs) == 1 and "PUT " not in ping.stdout, ping.stdout
    # one twin BMC per DPU on the management network, answering Redfish over TLS with the lab's password
    topo = Topology(PREFIX, 1)
    pair = topo.all_pairs()[0]
    assert data["all"]["children"]["dpus"]["vars"]["bluefleet_lab_bmcs"][dpu]["address"] == \
        "https://" + topo.bmc_ip(pair)
    assert lab_bmc.probe(topo, pair, inv.parent / ".state") is None

    again = lab("up", "--pairs", "1", "--prefix", PREFIX, "--inventory", str(inv))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "changed=0" in again.stdout, again.stdout

    # break the host<->DPU link: `wire` (Molecule's prepare) repairs it, then is a no-op
    subprocess.run(["docker", "exec", host, "ip", "link", "del", "ens1f0np0"], check=True, timeout=30)
    fixed = lab("wire", "--pairs", "1", "--prefix", PREFIX)
    assert fixed.returncode == 0 and "changed=0" not in fixed.stdout, fixed.stdout + fixed.stderr
    assert _links(dpu)["pf0hpf"]["operstate"] == "UP"
    assert "changed=0" in lab("wire", "--pairs", "1", "--prefix", PREFIX).stdout

    summary = lab("summary", "--pairs", "1", "--prefix", PREFIX)
    assert summary.returncode == 0, summary.stdout + summary.stderr

    _bfb_from_the_host_changes_the_dpu_os(inv, tmp_path, host, dpu)

    down = lab("down", "--prefix", PREFIX, "--inventory", str(inv))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not any(resources().values()), resources()
    assert not inv.exists()
    assert not list((inv.parent / ".state").glob(PREFIX + "-*bmc*")), "lab down left BMC files"


OLD_RELEASE = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod"  # the bluefield3 profile's DPU OS
NEW_RELEASE = "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"
ARM_VIEW = "/var/lib/dpusim-arm"


def _dpu_release(dpu: str) -> tuple[str, str]:
    """What the DPU container itself reports: bfver's OS Release line and the card's mlnx-release file."""
    bfver = subprocess.run(["docker", "exec", dpu, "bfver"], capture_output=True, text=True, check=True,
                           timeout=60).stdout
    lines = [line for line in bfver.splitlines() if line.startswith("OS Release Version: ")]
    assert len(lines) == 1, "%s: bfver printed no single 'OS Release Version:' line:\n%s" % (dpu, bfver)
    release_file = subprocess.run(["docker", "exec", dpu, "cat", lab_wiring.CARD_MOUNT + "/files/mlnx-release"],
                                  capture_output=True, text=True, check=True, timeout=60).stdout
    return lines[0].split(": ", 1)[1].strip(), release_file.strip()


def _bfb_from_the_host_changes_the_dpu_os(inv: Path, tmp_path: Path, host: str, dpu: str) -> None:
    """Issue 5 item 8: playbooks/upgrade.yml pushes a BFB from the GPU-host container (bfb_install delegated to it,
    over the shared card volume that stands in for rshim); the DPU container then runs the new OS release, and a
    second run changes nothing.

    The lab has no path from the host container into the DPU container (on hardware: ssh over tmfifo_net0), so
    the DPU's answers to the module (bfver) come from a DPU-role view of the same card inside the host container
    (``ARM_VIEW``), given as firmware_bfb_dpu_command. What the test checks is read in the DPU container itself."""
    from conftest import changed_count, run_playbook

    subprocess.run(["docker", "exec", host, "sh", "-c",
                    "dpusim --root %s init --profile bluefield3 --role dpu --card-dir %s && dpusim env --root %s"
                    % (ARM_VIEW, lab_wiring.CARD_MOUNT, ARM_VIEW)], check=True, capture_output=True, timeout=120)
    bfb = tmp_path / "new.bfb"
    subprocess.run([str(Path(sys.executable).parent / "dpusim"), "make-image", "--kind", "bfb", "--profile",
                    "bluefield3", "--version", "2.9.2-31_25.02", "-o", str(bfb)], check=True, capture_output=True,
                   timeout=60)
    subprocess.run(["docker", "cp", str(bfb), "%s:/root/new.bfb" % host], check=True, capture_output=True, timeout=60)
    extra = tmp_path / "bfb.json"
    extra.write_text(json.dumps({
        "firmware_bfb_image": "/root/new.bfb", "firmware_bfb_version": NEW_RELEASE,
        "firmware_bfb_dpu_command": ["env", "DPUSIM_ROOT=" + ARM_VIEW,
                                     "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin" % ARM_VIEW],
        "firmware_bfb_poll_interval": 1, "firmware_bfb_ready_timeout": 120,
        "bluefleet_state_dir": str(tmp_path / "records")}))
    assert _dpu_release(dpu) == (OLD_RELEASE, OLD_RELEASE)

    first = run_playbook("playbooks/upgrade.yml", inv, "-e", "@%s" % extra)
    assert _dpu_release(dpu) == (NEW_RELEASE, NEW_RELEASE), "%s: the BFB from %s did not change its OS" % (dpu, host)
    installs = [e["event_data"] for e in first["events"] if e.get("event") == "runner_on_ok"
                and e["event_data"].get("task") == "Install the BFB from the host over rshim (the DPU reboots itself)"]
    assert [(e["host"], e["res"]["changed"]) for e in installs] == [(dpu, True)], installs
    assert installs[0]["res"]["versions"]["before"]["release"] == OLD_RELEASE
    assert installs[0]["res"]["versions"]["after"]["release"] == NEW_RELEASE
    gate_task = "Health gate, read the links and what the node runs, in one run (step 'health gate')"
    gate = [e["event_data"]["res"] for e in first["events"] if e.get("event") == "runner_on_ok"
            and e["event_data"].get("task") == gate_task]
    assert [g["dpu_os"]["release"] for g in gate] == [NEW_RELEASE]  # dpu_info, run in the DPU container

    again = run_playbook("playbooks/upgrade.yml", inv, "-e", "@%s" % extra)
    assert changed_count(again) == 0, again["stdout"][-3000:]
    assert _dpu_release(dpu) == (NEW_RELEASE, NEW_RELEASE)


@pytest.mark.docker
def test_interrupted_up_finishes_when_run_again(engine, clean_lab, tmp_path):
    inv = str(tmp_path / "hosts.yml")
    proc = subprocess.Popen([BLUEFLEET, "lab", "up", "--pairs", "1", "--prefix", PREFIX, "--inventory", inv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not resources()["containers"]:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert any(resources().values()), "the interrupt came too late to leave a half-built lab"
    rerun = lab("up", "--pairs", "1", "--prefix", PREFIX, "--inventory", inv)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert lab("summary", "--pairs", "1", "--prefix", PREFIX).returncode == 0


@pytest.mark.docker
def test_preconditions_fail_with_one_clear_message_and_create_nothing(engine, clean_lab, tmp_path):
    no_engine = lab("up", "--pairs", "1", "--prefix", PREFIX, env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert no_engine.returncode == 1
    assert "no Docker engine answers" in no_engine.stderr and "ensure-docker.sh" in no_engine.stderr
    assert len(no_engine.stderr.strip().splitlines()) == 1, no_engine.stderr

    not_root = _as_nobody("lab", "up", "--pairs", "1", "--prefix", PREFIX)
    assert not_root.returncode == 1, not_root.stdout + not_root.stderr
    assert "needs root" in not_root.stderr and "uid 65534" in not_root.stderr, not_root.stderr
    assert len(not_root.stderr.strip().splitlines()) == 1, not_root.stderr

    base_before = lab_images.planned_images().base
    no_mirror = lab("images", "--force", env={"BLUEFLEET_DEBIAN_MIRROR": "http://127.0.0.1:9/debian"})
    assert no_mirror.returncode == 1
    assert "cannot reach the package mirror" in no_mirror.stderr and "BLUEFLEET_DEBIAN_MIRROR" in no_mirror.stderr
    assert lab_images.image_exists(base_before)

    assert not any(resources().values()), resources()


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """``bluefleet *argv`` as uid 65534, from a world-readable copy of the bluefleet package.

    Where the checkout lives (a mode-700 home or ``mktemp -d``) must not matter: the other user reads only the
    copy (stdlib-only modules: cli, lab, lab_images, lab_wiring) and the distribution's interpreter, and runs in
    the copy's folder, so what it proves is the lab's own refusal, not a permission error on the tree."""
    work = Path(tempfile.mkdtemp(prefix="bluefleet-notroot-"))
    try:
        shutil.copytree(ROOT / "src" / "bluefleet", work / "bluefleet",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for path in [work, *work.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        # The distribution's interpreter (world-readable), else the one running the tests (pyenv in a home folder
        # may not be readable by another user).
        python = shutil.which("python3", path="/usr/bin:/bin") or os.path.realpath(
            getattr(sys, "_base_executable", sys.executable))
        code = "import sys; sys.path.insert(0, %r); from bluefleet.cli import main; sys.exit(main(sys.argv[1:]))" % (
            str(work))
        argv_full = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-I", "-c", code, *argv,
                     "--inventory", str(work / "x.yml")]
        proc = subprocess.run(argv_full, capture_output=True, text=True, timeout=120, check=False, cwd=work,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(work)})
        assert not (work / "x.yml").exists(), "a refused `up` wrote its inventory"
        return proc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_not_root_is_refused_first_with_one_message(monkeypatch, capsys, tmp_path):
    """The root check itself, with a faked euid: it comes before Docker is asked anything."""
    from bluefleet import lab as lab_cli

    monkeypatch.setattr(lab_images.os, "geteuid", lambda: 65534)
    asked = []
    monkeypatch.setattr(lab_images, "require_docker", lambda: asked.append("docker"))
    for cmd, extra in (("up", ["--inventory", str(tmp_path / "x.yml")]), ("wire", [])):
        rc = lab_cli.main([cmd, "--pairs", "1", "--prefix", PREFIX, *extra])
        err = capsys.readouterr().err
        assert rc == 1, err
        assert err.startswith("bluefleet lab %s: " % cmd) and "needs root (this runs as uid 65534)" in err, err
        assert len(err.strip().splitlines()) == 1, err
    assert asked == [] and not (tmp_path / "x.yml").exists()


@pytest.mark.docker
def test_up_with_fewer_pairs_shrinks_the_lab(engine, clean_lab, tmp_path):
    inv = str(tmp_path / "hosts.yml")
    assert lab("up", "--pairs", "2", "--prefix", PREFIX, "--inventory", inv).returncode == 0
    shrink = lab("up", "--pairs", "1", "--prefix", PREFIX, "--inventory", inv)
    assert shrink.returncode == 0, shrink.stdout + shrink.stderr
    res = resources()
    # node2 goes with its BMC; node1 keeps its own
    assert res["containers"] == [PREFIX + "-node1", PREFIX + "-node1-bmc", PREFIX + "-node1-dpu"], res
    assert res["volumes"] == [PREFIX + "-node1-card"], res
    assert PREFIX + "-node2" not in Path(inv).read_text()


@pytest.mark.docker
def test_failure_half_way_removes_a_new_lab(engine, clean_lab):
    """A step that fails after the first containers exist (here: the DPU image is missing) leaves nothing."""
    topo = Topology(PREFIX, 1)
    with pytest.raises(lab_images.LabError, match="docker run|%s-node1-dpu" % PREFIX):
        lab_wiring.bring_up(topo, engine.gpu_host, "bluefleet/dpu:missing-on-purpose")
    assert not any(resources().values()), resources()
