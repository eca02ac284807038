"""Rolling-upgrade benchmark: N simulated nodes, batch size B, scaled flash time T.

Builds a sim fleet of N GPU host + DPU pairs in a temporary directory (the local connection, one device-twin
root per inventory host), makes a NIC firmware image with ``dpusim make-image`` and runs playbooks/upgrade.yml
with ``upgrade_serial: [B]`` (``--canary`` puts one node first). The twin's modelled time for one node's
upgrade is the burn (120 s) plus the firmware reset (45 s) of ``dpusim.clock.DURATIONS``; ``DPUSIM_TIME_SCALE``
is set so that it is T seconds. Ideal makespan: ceil(N/B) x T (with a canary: (1 + ceil((N-1)/B)) x T).

Prints a small table and writes JSON (``--json``). Usage:
    .venv/bin/python bench/rolling_upgrade/run.py --nodes 100 --batch 10 --flash-seconds 30
    .venv/bin/python bench/rolling_upgrade/run.py --nodes 100 --batch 10 --flash-seconds 165 --strategy mitogen_linear
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bluefleet import strategy as bluefleet_strategy
from dpusim import clock

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NEW_FW = "32.43.1014"
PER_NODE_MODEL = clock.DURATIONS["burn"] + clock.DURATIONS["fw_reset"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100, help="N: GPU host + DPU pairs (default 100)")
    parser.add_argument("--batch", type=int, default=10, help="B: nodes per batch (default 10)")
    parser.add_argument("--flash-seconds", type=float, default=30.0,
                        help="T: seconds the twin takes for one node's burn + reset (default 30)")
    parser.add_argument("--canary", action="store_true", help="one node first, then batches of B")
    parser.add_argument("--strategy", default="linear",
                        help="linear, free, mitogen_linear or mitogen_free (Mitogen must be installed)")
    parser.add_argument("--forks", type=int, default=0, help="ansible forks (default: B)")
    parser.add_argument("--json", type=Path, help="write the result here (default: print only)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary fleet directory")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.batch < 1 or args.flash_seconds <= 0:
        parser.error("--nodes and --batch must be >= 1 and --flash-seconds > 0")
    try:
        args.strategy_env = bluefleet_strategy.strategy_env(args.strategy)
    except bluefleet_strategy.StrategyError as exc:
        parser.error("--strategy: %s" % exc)
    return args


def ideal_seconds(nodes, batch, flash, canary):
    batches = 1 + math.ceil((nodes - 1) / batch) if canary and nodes > 1 else math.ceil(nodes / batch)
    return batches, batches * flash


def host_names(nodes):
    width = max(2, len(str(nodes)))  # the sim inventory's host names: sim01 .. sim100 as sim001 ..
    return [name for i in range(1, nodes + 1) for name in ("sim%0*d" % (width, i), "sim%0*d-dpu" % (width, i))]


def separate_interpreters(inventory, nodes):
    """Mitogen keeps one interpreter per connection target, and a local connection's target is its Python alone
    (ansible_mitogen/connection.py ``_connect_local``: the key is ``python_path``): every host of the sim fleet would
    share one interpreter and run its tasks one host after another (seen: a batch's burns one at a time). Each
    real host has an interpreter of its own; here each sim host gets a path of its own to the same Python."""
    python = Path(sys.executable)
    folder = inventory.parent / "host_vars"
    folder.mkdir(exist_ok=True)
    for index, name in enumerate(host_names(nodes)):
        path = "%s/%s%s" % (python.parent, "./" * (index + 1), python.name)  # the same file, another string
        (folder / ("%s.yml" % name)).write_text("ansible_python_interpreter: %s\n" % path)


def run_bench(args):
    work = Path(tempfile.mkdtemp(prefix="bench-rolling-"))
    inventory = work / "inventory" / "fleet.sim.yml"
    inventory.parent.mkdir()
    inventory.write_text("plugin: bluefleet.dpu.sim\nnodes: %d\nprofile: bluefield3\nstate_dir: state\n" % args.nodes)
    subprocess.run([str(BIN / "bluefleet"), "sim", "init", "-i", str(inventory)], check=True, capture_output=True,
                   timeout=1800)
    image = work / "fw.bin"
    subprocess.run([str(BIN / "dpusim"), "make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version",
                    NEW_FW, "-o", str(image)], check=True, capture_output=True, timeout=60)
    scale = args.flash_seconds / PER_NODE_MODEL
    serial = (["1"] if args.canary else []) + [str(args.batch)]
    extra = {"firmware_nic_image": str(image), "firmware_nic_version": NEW_FW, "upgrade_serial": serial,
             "bluefleet_state_dir": str(work / "records")}
    (work / "extra.json").write_text(json.dumps(extra))
    if args.strategy.startswith("mitogen"):
        separate_interpreters(inventory, args.nodes)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), DPUSIM_TIME_SCALE="%.9f" % scale,
               ANSIBLE_FORKS=str(args.forks or args.batch), ANSIBLE_FORCE_COLOR="0",
               PATH="%s%s%s" % (BIN, os.pathsep, os.environ.get("PATH", "")))
    env.pop("BLUEFLEET_SIM_NODES", None)
    env.pop("BLUEFLEET_SIM_STATE", None)
    env.update(args.strategy_env)
    # parse the inventory once first: the plugin creates the twin roots then, outside the measurement
    subprocess.run([str(BIN / "ansible-inventory"), "-i", str(inventory), "--list"], env=env, check=True,
                   capture_output=True, timeout=600)
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(ROOT / "playbooks" / "upgrade.yml"),
                           "-e", "@%s" % (work / "extra.json")], env=env, capture_output=True, text=True,
                          cwd=str(ROOT), check=False)
    makespan = time.monotonic() - started
    load_after = os.getloadavg()
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of ansible-playbook and everything it started (workers, modules, twin tools): unlike the
    # makespan, this barely moves with what else runs on the machine
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    (work / "ansible.log").write_text(proc.stdout + proc.stderr)
    upgraded = 0
    for name in host_names(args.nodes)[1::2]:  # the DPUs
        root = work / "inventory" / "state" / name
        state = subprocess.run([str(BIN / "dpusim"), "--root", str(root), "state"], capture_output=True, text=True,
                               check=True, timeout=60)
        running = json.loads(state.stdout)["cards"][0]["firmware"]["running"]["version"]
        upgraded += running == NEW_FW
    batches, ideal = ideal_seconds(args.nodes, args.batch, args.flash_seconds, args.canary)
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "loadavg_before": load_before,
                    "loadavg_after": load_after},
        "nodes": args.nodes, "batch": args.batch, "canary": args.canary, "forks": args.forks or args.batch,
        "strategy": args.strategy,
        "flash_seconds": args.flash_seconds, "time_scale": scale, "batches": batches,
        "ideal_seconds": round(ideal, 3), "makespan_seconds": round(makespan, 3),
        "ratio": round(makespan / ideal, 3),
        "overhead_per_node_seconds": round((makespan - ideal) / args.nodes, 3),
        "overhead_per_batch_seconds": round((makespan - ideal) / batches, 3),
        "cpu_seconds": round(cpu, 1), "cpu_seconds_per_node": round(cpu / args.nodes, 3),
        "upgraded": upgraded, "rc": proc.returncode, "workdir": str(work),
    }
    if proc.returncode != 0:
        result["output_tail"] = (proc.stdout + proc.stderr)[-4000:]
    if not args.keep and proc.returncode == 0:
        subprocess.run(["rm", "-rf", str(work)], check=False)
        result["workdir"] = None
    return result


def table(result):
    rows = [("nodes N", result["nodes"]), ("batch B", result["batch"]), ("canary", result["canary"]),
            ("strategy", result["strategy"]),
            ("flash time T (s)", result["flash_seconds"]), ("batches", result["batches"]),
            ("ideal ceil(N/B) x T (s)", result["ideal_seconds"]), ("makespan (s)", result["makespan_seconds"]),
            ("makespan / ideal", result["ratio"]),
            ("overhead per node (s)", result["overhead_per_node_seconds"]),
            ("overhead per batch (s)", result["overhead_per_batch_seconds"]),
            ("CPU of the run per node (s)", result["cpu_seconds_per_node"]),
            ("load average before / after", "%.1f / %.1f" % (result["machine"]["loadavg_before"][0],
                                                             result["machine"]["loadavg_after"][0])),
            ("nodes upgraded", "%d / %d" % (result["upgraded"], result["nodes"])), ("ansible rc", result["rc"])]
    width = max(len(name) for name, _ in rows)
    return "\n".join("%-*s  %s" % (width, name, value) for name, value in rows)


def main(argv=None):
    args = parse_args(argv)
    result = run_bench(args)
    print(table(result))
    if result["rc"] != 0:
        print(result.get("output_tail", ""), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["rc"] == 0 and result["upgraded"] == result["nodes"] else 1


if __name__ == "__main__":
    sys.exit(main())
