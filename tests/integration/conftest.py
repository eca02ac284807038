"""Fixtures for playbook runs against the device twin on the local connection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bluefleet import strategy as bluefleet_strategy

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


# The firmware role's tasks after its plans: where nothing is to be installed, burnt, written or reset it ends
# before them (test_firmware_sim, test_upgrade_sim).
FIRMWARE_AFTER_THE_PLANS = ("Install the BFB from the host over rshim (the DPU reboots itself)",
                            "Burn the NIC firmware (it runs after the reset below)",
                            "Write the NV configuration (Next Boot)",
                            "Show the reset plan and request the reset that activates what is pending",
                            "Check that nothing is pending, reading the card again where this run wrote to it or "
                            "reset it (reads only)",
                            "Read what is still pending (reads only)",
                            "Read the NV configuration again (reads only)",
                            "Nothing is pending and Next Boot holds what was asked")


def make_sim_inventory(directory: Path, nodes: int = 2, profile: str = "bluefield3") -> Path:
    """A sim inventory of ``nodes`` pairs with its own twin state under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "fleet.sim.yml"
    path.write_text("plugin: bluefleet.dpu.sim\nnodes: %d\nprofile: %s\nstate_dir: state\n" % (nodes, profile))
    # the twin roots: an inventory read creates nothing (`bluefleet sim init`, what a user runs)
    subprocess.run([str(BIN / "bluefleet"), "sim", "init", "-i", str(path)], check=True, capture_output=True,
                   timeout=300)
    return path


@pytest.fixture
def sim_inventory(tmp_path):
    return make_sim_inventory(tmp_path / "inventory")


def ansible_env() -> dict[str, str]:
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    env["PATH"] = "%s%s%s" % (BIN, os.pathsep, env.get("PATH", ""))
    env["ANSIBLE_FORCE_COLOR"] = "0"
    env["PY_COLORS"] = "0"
    env.pop("BLUEFLEET_SIM_NODES", None)
    env.pop("BLUEFLEET_SIM_STATE", None)
    env.update(strategy_env(env.get("BLUEFLEET_TEST_STRATEGY", "")))
    # AnsiballZ payloads kept from one run to the next, keyed by their sources (callback_plugins/ansiballz_cache.py);
    # the controller's objects frozen out of the cyclic collector before each task's forks (fork_gc.py);
    # and the collection's bluefleet.dpu.preload, which ansible.cfg enables and this variable replaces
    env["ANSIBLE_CALLBACK_PLUGINS"] = os.pathsep.join(
        p for p in (env.get("ANSIBLE_CALLBACK_PLUGINS"), str(Path(__file__).with_name("callback_plugins"))) if p)
    env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(
        p for p in (env.get("ANSIBLE_CALLBACKS_ENABLED"), "bluefleet.dpu.preload", "ansiballz_cache", "fork_gc") if p)
    env.setdefault("BLUEFLEET_TEST_ANSIBALLZ_CACHE", str(ROOT / ".cache" / "ansiballz"))
    return env


@pytest.fixture(scope="module", autouse=True)
def module_strategy(request):
    """A test file that sets ``ANSIBLE_STRATEGY = "linear"`` runs its playbooks (module fixtures included: an
    autouse fixture comes first in its scope) with Ansible's default strategy."""
    wanted = getattr(request.module, "ANSIBLE_STRATEGY", None)
    if not wanted:
        yield
        return
    before = os.environ.get("BLUEFLEET_TEST_STRATEGY")
    os.environ["BLUEFLEET_TEST_STRATEGY"] = wanted
    yield
    if before is None:
        os.environ.pop("BLUEFLEET_TEST_STRATEGY", None)
    else:
        os.environ["BLUEFLEET_TEST_STRATEGY"] = before


def strategy_env(strategy: str) -> dict[str, str]:
    """The Ansible strategy of the suite's playbook runs: ``BLUEFLEET_TEST_STRATEGY`` (``linear``, the default and
    what a user runs first, or ``mitogen_linear``: each host's modules in one persistent interpreter, about 40% less
    controller CPU, docs/MITOGEN.md). A file that needs Ansible's default whatever the choice (the lab's
    community.docker connection, site.yml's reference converge) says ``ANSIBLE_STRATEGY = "linear"``."""
    try:
        return bluefleet_strategy.strategy_env(strategy or "linear")
    except bluefleet_strategy.StrategyError as exc:
        raise AssertionError("BLUEFLEET_TEST_STRATEGY=%s: %s" % (strategy, exc)) from None


def run_playbook(playbook: str, inventory: Path, *extra: str, check: bool = True) -> dict:
    """Run a playbook of this repository with ansible-runner's Python API.

    Returns ``{"rc", "status", "stats", "stdout", "events"}``. With ``check`` (the default)
    a failed run raises an AssertionError that carries the output.
    """
    import ansible_runner

    work = inventory.parent / ("runner-%s" % len(list(inventory.parent.glob("runner-*"))))
    work.mkdir()
    result = ansible_runner.run(
        private_data_dir=str(work),
        project_dir=str(ROOT),
        playbook=playbook,
        inventory=str(inventory),
        cmdline=" ".join(extra) if extra else None,
        envvars=ansible_env(),
        quiet=True,
        json_mode=False,
    )
    stdout = result.stdout.read()
    out = {"rc": result.rc, "status": result.status, "stats": result.stats or {},
           "stdout": stdout, "events": list(result.events)}
    if check:
        assert result.rc == 0, "%s failed (rc=%s):\n%s" % (playbook, result.rc, stdout[-6000:])
    return out


# The playbook of worker_probe: one task runs the probe action in a worker, the next prints what it answered.
_PROBE_PLAYBOOK = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - worker_probe:
      register: seen
    - ansible.builtin.debug:
        msg: "PROBE=[{{ seen.probe }}]"
"""


def worker_probe(tmp_path: Path, env: dict, answer: str, imports: str = "") -> str:
    """What a task's worker, forked from ansible-playbook, finds before it renders anything: an action plugin
    (``worker_probe``, no arguments, no condition) returns the Python expression ``answer`` as a string, after
    ``imports``; the text comes back from the playbook's output."""
    (tmp_path / "action_plugins").mkdir(exist_ok=True)
    (tmp_path / "action_plugins" / "worker_probe.py").write_text(
        "from __future__ import annotations\n%s\nfrom ansible.plugins.action import ActionBase\n\n\n"
        "class ActionModule(ActionBase):\n    def run(self, tmp=None, task_vars=None):\n"
        "        return {\"changed\": False, \"probe\": str(%s)}\n" % (imports, answer))
    (tmp_path / "probe.yml").write_text(_PROBE_PLAYBOOK)
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(tmp_path / "probe.yml")],
                          env=dict(env, ANSIBLE_ACTION_PLUGINS=str(tmp_path / "action_plugins")), cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if "PROBE=[" in x]
    return line.split("PROBE=[", 1)[1].rsplit("]", 1)[0]


def changed_count(run: dict) -> int:
    return sum((run["stats"].get("changed") or {}).values())


def twin_tool(root: Path, *argv: str) -> subprocess.CompletedProcess:
    """Run a tool of the twin at ``root`` as a person at that machine would (its bin/ first on PATH)."""
    path = os.pathsep.join([str(root / "bin"), str(BIN), os.environ.get("PATH", "")])
    env = dict(os.environ, DPUSIM_ROOT=str(root), PATH=path)
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=60, check=False)


def twin_snapshot(inventory: Path, hosts) -> dict:
    """Twin state and the netdev sysfs files (mtu, ecn, ...) of each of ``hosts`` of a sim inventory."""
    out = {}
    for host in hosts:
        root = inventory.parent / "state" / host
        files = {str(p.relative_to(root)): p.read_text() for p in sorted((root / "sys" / "class" / "net").rglob("*"))
                 if p.is_file()}
        out[host] = (twin_state(root), files)
    return out


def twin_state(root: Path) -> dict:
    proc = subprocess.run([str(BIN / "dpusim"), "--root", str(root), "state"],
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def collection_link():
    """The repository must be reachable as bluefleet.dpu (make venv links it)."""
    link = ROOT / ".collections" / "ansible_collections" / "bluefleet" / "dpu"
    assert link.exists(), "run `make venv` first: %s is missing" % link
    return link


# ------------------------------------------------------------------ one read-only fleet per session (per worker)
def sim_hostvars(inventory: Path) -> dict:
    """``ansible-inventory --list`` hostvars of a sim inventory (loading it creates the twin roots)."""
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(inventory), "--list"], capture_output=True,
                          text=True, env=ansible_env(), check=True, timeout=120)
    return json.loads(proc.stdout)["_meta"]["hostvars"]


def fleet_fingerprint(inventory: Path) -> dict:
    """Every file under the fleet's twin roots with its content hash: what a read-only test must leave as it was."""
    import hashlib

    state = inventory.parent / "state"
    return {str(p.relative_to(state)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(state.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture(scope="session")
def shared_sim_fleet(tmp_path_factory):
    """A 2-pair bluefield3 sim fleet made once per session (per xdist worker) for tests that only READ it
    (inventory parsing, facts, --check runs, reports). A test that changes anything must use ``sim_inventory``
    or ``make_sim_inventory`` instead: at the end of the session this fixture fails when any file under the
    fleet's twin roots differs from the start, naming the files, so a writer cannot hide here.

    Returns ``{"inventory": Path, "hostvars": dict}``."""
    inventory = make_sim_inventory(tmp_path_factory.mktemp("shared-fleet") / "inventory", nodes=2)
    hostvars = sim_hostvars(inventory)
    before = fleet_fingerprint(inventory)
    yield {"inventory": inventory, "hostvars": hostvars}
    after = fleet_fingerprint(inventory)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, "a test wrote into shared_sim_fleet (use sim_inventory for tests that change state): %s" % (
        changed[:20])


def dpusim(*argv):
    """Run the twin's command line; its output (a failure fails the test with what it said)."""
    proc = subprocess.run([str(BIN / "dpusim"), *argv], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, "dpusim %s: %s%s" % (" ".join(argv), proc.stdout, proc.stderr)
    return proc.stdout


def restriction(root):
    """A twin card's host restriction: its level and every flag, pending ones included."""
    priv = twin_state(root)["cards"][0]["privhost"]
    return {"level": priv["level"], "flags": dict(priv.get("current") or {}, **(priv.get("pending") or {}))}


# ------------------------------------------------------------------ the slowest files first (xdist --dist loadfile)
def pytest_collection_modifyitems(session, config, items):
    """Order the files longest first, so the two workers of `make integration` finish together instead of one
    running the last long file alone (longest-processing-time-first scheduling: xdist's loadfile hands files out
    in collection order). The weights are the seconds per file of one measured run (durations.json beside this
    file; after `make integration`, ``python scripts/integration-durations.py tests/output/integration.xml``
    refreshes it); a file it does not know goes first, as if it were the slowest. Order within a file stays."""
    weights_file = Path(__file__).with_name("durations.json")
    weights = json.loads(weights_file.read_text()) if weights_file.is_file() else {}
    unknown = max(weights.values(), default=0) + 1
    order = {}
    for item in items:
        name = item.path.name
        order.setdefault(name, (-weights.get(name, unknown), len(order)))
    items.sort(key=lambda item: order[item.path.name])  # stable: a file's tests keep their order
