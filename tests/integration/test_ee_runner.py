"""The execution environment, used as AWX / Automation Platform use it, on a sim fleet.

- ``ansible-runner run --process-isolation`` with docker as the runtime runs the preflight stage (it only
  reads) inside ``bluefleet/ee-sim`` (the EE of ``bluefleet ee build`` plus the twin), the fleet's twin roots
  mounted into the container at their own paths;
- ``ansible-runner transmit | docker run -i <EE> ansible-runner worker | ansible-runner process`` (the worker in
  the EE container, as an execution node runs it behind receptor) gives the same events (task names, per-host
  results) and the same per-host ok/changed/failed counts as a local ``ansible-runner run`` of the same stage.

The project is what AWX checks out: the repository's ansible.cfg, site.yml and playbooks/; the collection is the
one installed in the image (``collections_path`` of ansible.cfg is this checkout's link, absent in the
container: AWX sets ANSIBLE_COLLECTIONS_PATH for the same reason), and the events prove it was used.

Marked ``docker``: with no Docker engine these tests FAIL, never skip. The images are built when missing
(``make ee``; first build about 10 min on this machine, cached afterwards: a second ``bluefleet ee build``
takes seconds).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from conftest import BIN, ROOT, make_sim_inventory, twin_state

pytestmark = [pytest.mark.docker, pytest.mark.slow]

STAGE = "playbooks/preflight.yml"
EE_COLLECTION = "/usr/share/ansible/collections/ansible_collections/bluefleet/dpu/"
HOSTS = {"sim01", "sim01-dpu"}
RUN_TIMEOUT = 900


@pytest.fixture(scope="module")
def ee_image(request):
    from bluefleet import ee, lab_images

    try:
        lab_images.require_docker()
        images, timings = ee.ensure_ee(sim=True)
    except lab_images.LabError as exc:
        pytest.fail("the execution environment tests need a Docker engine and the EE images: %s" % exc)
    if timings:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        line = "bluefleet ee: built %s" % ", ".join("%s in %.0f s" % item for item in timings.items())
        if reporter:
            reporter.write_line(line)
        print(line)
    return images.sim


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, ee_image):
    """One sim pair, a local ``ansible-runner run`` of the stage on it (the reference), then the twin's tool
    front-ends rewritten by the twin inside the EE (``dpusim env``: their interpreter and sources are the
    image's), as a person at that machine would set it up. The stage only reads, so every run sees the same
    fleet; the cards are compared at the end."""
    base = tmp_path_factory.mktemp("ee-fleet")
    inventory = make_sim_inventory(base / "fleet", nodes=1)
    state = inventory.parent / "state"
    # the inventory every private data dir carries: the same twin roots, by absolute path
    source = "plugin: bluefleet.dpu.sim\nnodes: 1\nprofile: bluefield3\nstate_dir: %s\n" % state
    before = state_files(state)
    local = private_data_dir(base / "local", source, collections=str(ROOT / ".collections"))
    proc = runner_cli("run", str(local), "-p", STAGE)
    assert proc.returncode == 0, "the local ansible-runner run failed:\n%s" % proc.stdout[-6000:]
    reference = artifacts(local)
    out = docker_run(ee_image, "sh", "-c", "for host in %s; do dpusim env --root %s/$host >/dev/null || exit 1; done"
                     % (" ".join(sorted(HOSTS)), state), mounts=[state])
    assert out.returncode == 0, "dpusim env in the EE failed: %s" % out.stdout[-3000:]
    head = (state / "sim01" / "bin" / "flint").read_text().splitlines()[0]
    assert head == "#!/usr/bin/python3", "the twin's front-ends were not rewritten in the EE: %s" % head
    yield {"base": base, "state": state, "source": source, "reference": reference}
    assert state_files(state) == before, "the read-only stage changed a card of the fleet"


def state_files(state: Path) -> dict[str, list]:
    """The cards of every twin root as the twin reports them (firmware, configuration, reset counters)."""
    return {host: twin_state(state / host)["cards"] for host in sorted(HOSTS)}


def private_data_dir(path: Path, inventory_source: str, collections: str) -> Path:
    """An ansible-runner private data dir: project = the repository's ansible.cfg, site.yml, playbooks/."""
    (path / "inventory").mkdir(parents=True)
    (path / "inventory" / "fleet.sim.yml").write_text(inventory_source)
    project = path / "project"
    project.mkdir()
    shutil.copy2(ROOT / "ansible.cfg", project / "ansible.cfg")
    shutil.copy2(ROOT / "site.yml", project / "site.yml")
    shutil.copytree(ROOT / "playbooks", project / "playbooks")
    (path / "env").mkdir()
    (path / "env" / "envvars").write_text(json.dumps({"ANSIBLE_COLLECTIONS_PATH": collections,
                                                      "ANSIBLE_FORCE_COLOR": "0"}))
    return path


def runner_env() -> dict[str, str]:
    env = dict(os.environ, PATH="%s%s%s" % (BIN, os.pathsep, os.environ.get("PATH", "")), LC_ALL="C.UTF-8")
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS",
                 "BLUEFLEET_SIM_NODES", "BLUEFLEET_SIM_STATE"):
        env.pop(name, None)
    return env


def runner_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "ansible-runner"), *argv], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=runner_env(), check=False, stdin=subprocess.DEVNULL)


def docker_run(image: str, *argv: str, mounts: list[Path]) -> subprocess.CompletedProcess[str]:
    volumes = [arg for m in mounts for arg in ("-v", "%s:%s" % (m, m))]
    return subprocess.run(["docker", "run", "--rm", "--user", str(os.getuid()), *volumes, image, *argv],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)


def artifacts(pdd: Path) -> dict:
    """status, rc and events of the one run in ``pdd/artifacts`` (``<ident>/`` of run, flat of process)."""
    found = sorted(pdd.glob("artifacts/**/status"))
    assert len(found) == 1, "expected one run's artifacts under %s, found %s" % (pdd, found)
    folder = found[0].parent
    events = [json.loads(p.read_text()) for p in (folder / "job_events").glob("*.json")]
    events.sort(key=lambda e: e["counter"])
    return {"status": found[0].read_text().strip(), "rc": int((folder / "rc").read_text()), "events": events,
            "stdout": (folder / "stdout").read_text() if (folder / "stdout").exists() else "",
            "command": (folder / "command").read_text() if (folder / "command").exists() else ""}


def summary(run: dict) -> dict:
    """What must match between two runs of the stage: status, rc, the task names in order, every host's result
    of every task, and the per-host counts of the final stats event."""
    tasks = [e["event_data"]["task"] for e in run["events"] if e["event"] == "playbook_on_task_start"]
    results = Counter((e["event"], e["event_data"].get("host"), e["event_data"].get("task"))
                      for e in run["events"] if e["event"].startswith("runner_on_") and e["event"] != "runner_on_start")
    stats = [e["event_data"] for e in run["events"] if e["event"] == "playbook_on_stats"]
    assert len(stats) == 1, "no (or more than one) playbook_on_stats event"
    counts = {key: stats[0].get(key) or {} for key in ("ok", "changed", "failures", "dark", "skipped")}
    return {"status": run["status"], "rc": run["rc"], "tasks": tasks, "results": results, "counts": counts}


def ran_from_ee_collection(run: dict) -> list[str]:
    """The task paths of the collection's role tasks: all must be the image's installed collection."""
    return sorted({e["event_data"]["task_path"].rsplit(":", 1)[0] for e in run["events"]
                   if e["event"] == "playbook_on_task_start" and "/roles/" in e["event_data"].get("task_path", "")})


def assert_green(run: dict, what: str) -> None:
    result = summary(run)
    assert result["status"] == "successful" and result["rc"] == 0, "%s: %s rc=%s\n%s" % (
        what, result["status"], result["rc"], run["stdout"][-6000:])
    assert set(result["counts"]["ok"]) == HOSTS, "%s: not every host ran: %s" % (what, result["counts"])
    assert not result["counts"]["failures"] and not result["counts"]["dark"], result["counts"]
    assert not result["counts"]["changed"], "%s: a read-only stage changed something: %s" % (what, result["counts"])


def test_local_reference_run_is_green(fleet):
    """The reference the EE runs are compared with: green, every host, from this checkout's collection."""
    reference = fleet["reference"]
    assert_green(reference, "local ansible-runner run")
    paths = ran_from_ee_collection(reference)
    assert paths and all(p.startswith(str(ROOT)) for p in paths), paths


def test_stage_runs_with_process_isolation_in_the_ee(fleet, ee_image):
    pdd = private_data_dir(fleet["base"] / "isolated", fleet["source"], collections="/usr/share/ansible/collections")
    proc = runner_cli("run", str(pdd), "-p", STAGE, "--process-isolation", "--process-isolation-executable", "docker",
                      "--container-image", ee_image, "--container-volume-mount",
                      "%s:%s" % (fleet["state"], fleet["state"]))
    run = artifacts(pdd)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert_green(run, "ansible-runner run --process-isolation")
    command = json.loads(run["command"])["command"]
    assert command[:2] == ["docker", "run"] and ee_image in command, "not run in the EE container: %s" % command
    paths = ran_from_ee_collection(run)
    assert paths and all(p.startswith(EE_COLLECTION) for p in paths), "roles not from the image's collection: %s" % (
        paths)
    assert summary(run) == summary(fleet["reference"])


def test_transmit_worker_in_ee_process_matches_local_run(fleet, ee_image):
    pdd = private_data_dir(fleet["base"] / "transmitted", fleet["source"],
                           collections="/usr/share/ansible/collections")
    out = fleet["base"] / "processed"
    out.mkdir()
    env = runner_env()
    runner = str(BIN / "ansible-runner")
    state = str(fleet["state"])
    with subprocess.Popen([runner, "transmit", str(pdd), "-p", STAGE], stdout=subprocess.PIPE, env=env,
                          stdin=subprocess.DEVNULL) as transmit, \
            subprocess.Popen(["docker", "run", "-i", "--rm", "--user", str(os.getuid()), "-v", "%s:%s" % (state, state),
                              ee_image, "ansible-runner", "worker"], stdin=transmit.stdout, stdout=subprocess.PIPE,
                             env=env) as worker, \
            subprocess.Popen([runner, "process", str(out)], stdin=worker.stdout, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env) as process:
        transmit.stdout.close()  # the worker holds the pipe now: it sees EOF when transmit ends
        worker.stdout.close()
        shown = process.communicate(timeout=RUN_TIMEOUT)[0]
        codes = (transmit.wait(timeout=60), worker.wait(timeout=60), process.returncode)
    assert codes == (0, 0, 0), "transmit | worker | process exited %s:\n%s" % (codes, shown[-6000:])
    run = artifacts(out)
    assert_green(run, "transmit | worker (EE) | process")
    paths = ran_from_ee_collection(run)
    assert paths and all(p.startswith(EE_COLLECTION) for p in paths), paths
    streamed, local = summary(run), summary(fleet["reference"])
    assert streamed["tasks"] == local["tasks"]
    assert streamed["counts"] == local["counts"]
    assert streamed["results"] == local["results"]
    assert streamed == local
