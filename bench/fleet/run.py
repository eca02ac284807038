"""Fleet benchmark: a playbook (site.yml by default) on a sim fleet of N pairs against Ansible's floor.

Builds a sim fleet of N GPU host + DPU pairs in a temporary directory (the ``bluefleet.dpu.sim`` inventory:
local connection, one device-twin root per inventory host) and runs, with the same forks and strategy:

1. the floor: 15 trivial module tasks (``ansible.builtin.command: 'true'``) on every inventory host;
2. the playbook, first run (the twin starts from its factory state);
3. the playbook again, the no-op re-run (it must change nothing);
4. the floor again (the floor figure is the mean of both floor runs, so a load change during the run
   moves both sides).

For every run: wall time; CPU seconds of ansible-playbook and every process it started (``RUSAGE_CHILDREN``),
split into the twin's tool processes and the rest (controller + module runs). The twin's tools stand for native
binaries on real hardware, so they are measured apart: before the runs, every tool front-end the sim inventory
wrote (``<root>/bin/<tool>``, see ``dpusim env``) is replaced by one that runs the same ``dpusim.tool.run`` and
then appends its own CPU (self + children) to a log; the ``dpusim`` command the inventory hands to the roles
(power cycle, reboot) is wrapped the same way. A benchmark callback (``callback_plugins/bench_count.py``) counts
module runs per host (task results on a target that were not skipped, one per loop item; controller-only
actions such as ``set_fact`` / ``assert`` do not count) and marks the play boundaries, from which each stage of
site.yml gets its own wall time, CPU and module runs.

Figures are ratios to the floor: wall / floor wall, (CPU - twin CPU) / floor CPU. ``--repeat K`` runs steps 2 and 3
K times, each pair on a fresh fleet, and reports each pair's no-op re-run / first run and their median: on a shared
machine one pair's ratio moves by a few points between runs of the same code. Prints a table, writes JSON
(``--json``). Usage:
    .venv/bin/python bench/fleet/run.py --nodes 50 --json /tmp/fleet.json
    .venv/bin/python bench/fleet/run.py --nodes 4 --strategy mitogen_linear
    .venv/bin/python bench/fleet/run.py --nodes 20 --floor-runs 1 --repeat 5
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

from bluefleet import strategy as bluefleet_strategy

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
FLOOR_TASKS = 15

# The front-end of one twin tool with CPU accounting: the same call as `dpusim env` writes (dpusim.cli), then one
# line "<end time> <cpu seconds> <tool> <worker>" appended to $BENCH_TWIN_CPU_LOG (a single write, O_APPEND); <worker>
# is the Ansible worker the tool ran under (--profile, callback_plugins/bench_workers.py) or "-". The process then
# ends at once (os._exit, after flushing its output): a Python interpreter's shutdown after the accounting (about 4 ms
# a call here, unloading the twin's modules) would otherwise be CPU of nobody's log, counted as the controller's; a
# native tool has no such shutdown. The twin writes its state inside the call (closed files, released locks).
TOOL_TEMPLATE = """#!{python}
# dpusim front-end for {name!r} with CPU accounting; written by bench/fleet/run.py.
import os, resource, sys, time
sys.path.insert(0, {src!r})
def _account():
    path = os.environ.get("BENCH_TWIN_CPU_LOG")
    if path:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        worker = os.environ.get("BENCH_WORKER", "-")
        os.write(fd, ("%.6f %.6f %s %s\\n" % (time.time(), cpu, {name!r}, worker)).encode())
        os.close(fd)
try:
    {call}
finally:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # a reader that went away: as the interpreter's own flush at exit, nothing more to say
            pass
    _account()
os._exit(rc)
"""
TOOL_CALL = "from dpusim.tool import run\n    rc = run({name!r}, sys.argv[1:])"
CLI_CALL = "from dpusim.cli import main\n    rc = main()"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="N: GPU host + DPU pairs (default 4)")
    parser.add_argument("--playbook", default="site.yml", help="playbook of this repository (default site.yml)")
    parser.add_argument("--forks", type=int, default=20, help="ansible forks (default 20, as ansible.cfg)")
    parser.add_argument("--strategy", default="linear",
                        help="linear, free, mitogen_linear or mitogen_free (Mitogen must be installed)")
    parser.add_argument("--time-scale", type=float, default=0.001,
                        help="DPUSIM_TIME_SCALE: the twin's modelled waits (default 0.001, as in the tests)")
    parser.add_argument("--no-rerun", action="store_true", help="skip the no-op re-run")
    parser.add_argument("--floor-runs", type=int, choices=(1, 2), default=2,
                        help="floor before and after the playbook (2, the default) or only before (1)")
    parser.add_argument("--extra", action="append", default=[], metavar="K=V|@FILE",
                        help="extra vars for the playbook (repeatable), e.g. bluefleet_validate=false")
    parser.add_argument("--json", type=Path, help="write the result here (default: print only)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary fleet directory")
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="the first run and the no-op re-run K times, each pair on a fresh fleet, and the median "
                             "of their ratios (default 1): the machine moves the ratio of one pair by a few points")
    parser.add_argument("--profile", action="store_true",
                        help="split the CPU per task: ansible-playbook's own, each worker's, each module's (twin "
                             "tools excluded); linear and free strategies only")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.forks < 1 or args.time_scale < 0 or args.repeat < 1:
        parser.error("--nodes, --forks and --repeat must be >= 1 and --time-scale >= 0")
    if args.repeat > 1 and args.no_rerun:
        parser.error("--repeat: each repeat is a first run and its no-op re-run; leave out --no-rerun")
    if args.profile and args.strategy.startswith("mitogen_"):
        parser.error("--profile: under Mitogen the modules do not run in the workers' children; use linear or free")
    return args


def configured_callbacks():
    """The callbacks ansible.cfg enables (bluefleet.dpu.preload): ANSIBLE_CALLBACKS_ENABLED, which the bench sets for
    its own, replaces that list, and the runs measured are the ones a user of this configuration makes."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "ansible.cfg")
    listed = config.get("defaults", "callbacks_enabled", fallback="")
    return [name.strip() for name in listed.split(",") if name.strip()]


def strategy_env(strategy):
    """Environment that selects ``strategy`` (bluefleet.strategy); a strategy that cannot run here stops the bench."""
    try:
        return bluefleet_strategy.strategy_env(strategy)
    except bluefleet_strategy.StrategyError as exc:
        raise SystemExit("--strategy: %s" % exc) from exc


def write_fleet(work, nodes):
    """The sim inventory (its dpusim command wrapped) and the twin roots with accounting front-ends."""
    src = str(ROOT / "src")
    wrapdir = work / "twin-cli"
    wrapdir.mkdir()
    wrapper = wrapdir / "dpusim"
    wrapper.write_text(TOOL_TEMPLATE.format(python=sys.executable, name="dpusim", src=src, call=CLI_CALL))
    wrapper.chmod(0o755)
    inventory = work / "inventory" / "fleet.sim.yml"
    inventory.parent.mkdir()
    inventory.write_text("plugin: bluefleet.dpu.sim\nnodes: %d\nprofile: bluefield3\nstate_dir: state\n"
                         "dpusim: %s\n" % (nodes, wrapper))
    return inventory


def account_front_ends(state_dir):
    """Replace every ``<root>/bin/<tool>`` the inventory wrote with the accounting front-end; returns the count."""
    src = str(ROOT / "src")
    count = 0
    for bindir in sorted(state_dir.glob("*/bin")):
        for tool in bindir.iterdir():
            if tool.name.startswith(".") or not tool.is_file():
                continue
            tool.write_text(TOOL_TEMPLATE.format(python=sys.executable, name=tool.name, src=src,
                                                 call=TOOL_CALL.format(name=tool.name)))
            count += 1
    return count


def write_floor(work):
    tasks = [{"name": "Trivial module task %d" % (i + 1), "ansible.builtin.command": "true", "changed_when": False}
             for i in range(FLOOR_TASKS)]
    play = [{"name": "Ansible floor: %d trivial module tasks per host" % FLOOR_TASKS, "hosts": "gpu_hosts:dpus",
             "gather_facts": False, "tasks": tasks}]
    path = work / "floor.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    return path


def stage_of_play():
    """{play name: stage playbook} from site.yml's import_playbook entries (one playbook per stage)."""
    out = {}
    for entry in yaml.safe_load((ROOT / "site.yml").read_text()):
        stage = entry["ansible.builtin.import_playbook"]
        for play in yaml.safe_load((ROOT / stage).read_text()):
            out[play["name"]] = Path(stage).stem
    return out


def read_twin_log(path):
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            end, cpu, rest = line.split(" ", 2)
            tool, _, worker = rest.partition(" ")
            rows.append((float(end), float(cpu), tool, worker or "-"))
    return rows


def twin_speed(first, rerun):
    """How much more CPU the re-run's machine took for the same work than the first run's, gauged by the twin's tools:
    the re-run's calls of every tool both runs called, at the re-run's CPU per call against the first run's (> 1: the
    re-run met a slower machine, e.g. another tenant's load). Per tool, so that the first run's heavier calls (burns,
    installs) do not weigh in; None when the runs share no tool."""
    common = [tool for tool in rerun if tool in first]  # a tool listed was called at least once
    at_first = sum(rerun[tool][0] * first[tool][1] / first[tool][0] for tool in common)
    at_rerun = sum(rerun[tool][1] for tool in common)
    return at_rerun / at_first if at_first else None


def ratios(first, rerun):
    """The no-op re-run against its first run: wall, CPU excluding the twin, and that CPU at the first run's machine
    speed (twin_speed) where the runs share a twin tool; none where the first run took no time."""
    if not (first["wall_seconds"] and first["cpu_seconds_excluding_twin"]):
        return {}
    out = {"rerun_wall_vs_first": round(rerun["wall_seconds"] / first["wall_seconds"], 3),
           "rerun_cpu_vs_first": round(rerun["cpu_seconds_excluding_twin"] / first["cpu_seconds_excluding_twin"], 3)}
    speed = twin_speed(first["twin_by_tool"], rerun["twin_by_tool"])
    if speed:
        out["rerun_machine_vs_first"] = round(speed, 3)
        out["rerun_cpu_vs_first_same_machine"] = round(out["rerun_cpu_vs_first"] / speed, 3)
    return out


REPEAT_FIGURES = ("rc", "wall_seconds", "cpu_seconds", "twin_cpu_seconds", "twin_tool_calls",
                  "cpu_seconds_excluding_twin", "module_runs", "changed", "loadavg_before")
REPEAT_PROFILE = ("ansible_playbook_cpu", "workers_cpu", "workers_template_compile_cpu",
                  "module_processes_cpu_excluding_twin")


def repeat_summary(first, rerun):
    """One repeat's pair in short: each run's totals (and the profile's, with --profile) and the ratios."""
    out = {}
    for label, run in (("first", first), ("rerun", rerun)):
        out[label] = {key: run[key] for key in REPEAT_FIGURES}
        if "profile" in run:
            out[label]["profile"] = {key: run["profile"][key] for key in REPEAT_PROFILE}
        if "output_tail" in run:
            out[label]["output_tail"] = run["output_tail"]
    out.update(ratios(first, rerun))
    return out


def medians(repeats):
    """The median of each ratio over the repeats that have it."""
    out = {}
    for key in ("rerun_wall_vs_first", "rerun_cpu_vs_first", "rerun_cpu_vs_first_same_machine"):
        values = [repeat[key] for repeat in repeats if key in repeat]
        if values:
            out[key] = round(statistics.median(values), 3)
    return out


def run_one(label, playbook, inventory, work, env, extra_args):
    """Run one playbook; wall, CPU split into twin / rest, module runs per host and per stage."""
    events_path = work / ("events-%s.jsonl" % label)
    twin_path = work / ("twin-%s.log" % label)
    workers_path = work / ("workers-%s.jsonl" % label)
    run_env = dict(env, BENCH_FLEET_EVENTS=str(events_path), BENCH_TWIN_CPU_LOG=str(twin_path),
                   BENCH_FLEET_WORKERS=str(workers_path))
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started_wall, started = time.time(), time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(playbook), *extra_args],
                          env=run_env, capture_output=True, text=True, cwd=str(ROOT), check=False)
    wall = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    (work / ("ansible-%s.log" % label)).write_text(proc.stdout + proc.stderr)
    twin = read_twin_log(twin_path)
    events = [json.loads(line) for line in events_path.read_text().splitlines()] if events_path.exists() else []
    results = [e for e in events if e["event"] == "result"]
    runs_per_host = {}
    for e in results:
        runs_per_host[e["host"]] = runs_per_host.get(e["host"], 0) + e["runs"]
    twin_cpu = sum(row[1] for row in twin)
    by_tool = {}  # tool: [calls, CPU seconds]
    for _end, tool_cpu, tool, _worker in twin:
        tally = by_tool.setdefault(tool, [0, 0.0])
        tally[0] += 1
        tally[1] += tool_cpu
    out = {
        "rc": proc.returncode, "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 2),
        "twin_cpu_seconds": round(twin_cpu, 2), "twin_tool_calls": len(twin),
        "twin_by_tool": {tool: [calls, round(cpu, 4)] for tool, (calls, cpu) in sorted(by_tool.items())},
        "cpu_seconds_excluding_twin": round(cpu - twin_cpu, 2),
        "module_runs": sum(runs_per_host.values()), "module_runs_per_host": runs_per_host,
        "changed": sum(1 for e in results if e["changed"]),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "stages": stages(events, twin, started_wall, started_wall + wall),
    }
    if workers_path.exists():
        out["profile"] = profile(workers_path, twin)
    if proc.returncode != 0:
        out["output_tail"] = (proc.stdout + proc.stderr)[-4000:]
    return out


def profile(workers_path, twin, top=None):
    """--profile: the run's CPU excluding the twin split into ansible-playbook's own, the workers' own (the
    controller's per-task work) and the module processes'; the same per kind of result (a worker that ran a
    module process or not) and per task (summed over hosts, the costliest first)."""
    twin_by_worker = {}
    for row in twin:
        twin_by_worker[row[3]] = twin_by_worker.get(row[3], 0.0) + row[1]
    records = [json.loads(line) for line in workers_path.read_text().splitlines()]
    main = sum(r["main_self"] for r in records if "main_self" in r)
    workers = [r for r in records if "worker" in r]
    tasks, kinds = {}, {}
    for r in workers:
        module = max(r["children"] - twin_by_worker.get(str(r["worker"]), 0.0), 0.0)
        kind = kinds.setdefault("with a module process" if r["children"] > 0 else "controller only",
                                {"results": 0, "worker_cpu": 0.0, "module_cpu": 0.0})
        key = "%s | %s" % (r["action"], r["task"])
        task = tasks.setdefault(key, {"task": r["task"], "action": r["action"], "results": 0, "worker_cpu": 0.0,
                                      "module_cpu": 0.0})
        for entry in (kind, task):
            entry["results"] += 1
            entry["worker_cpu"] += r["self"]
            entry["module_cpu"] += module
    rounded = [dict(t, worker_cpu=round(t["worker_cpu"], 2), module_cpu=round(t["module_cpu"], 2))
               for t in tasks.values()]
    rounded.sort(key=lambda t: -(t["worker_cpu"] + t["module_cpu"]))
    return {
        "ansible_playbook_cpu": round(main, 2),
        "workers_cpu": round(sum(r["self"] for r in workers), 2),
        # of which template compilation (bench_workers: ansible-core compiles each template again in each worker)
        "workers_template_compile_cpu": (round(sum(r["compile"] for r in workers), 2)
                                         if workers and all(r.get("compile") is not None for r in workers) else None),
        "module_processes_cpu_excluding_twin": round(sum(k["module_cpu"] for k in kinds.values()), 2),
        "results": len(workers),
        "by_kind": {name: {"results": k["results"], "worker_cpu": round(k["worker_cpu"], 2),
                           "module_cpu": round(k["module_cpu"], 2)} for name, k in kinds.items()},
        "tasks": rounded[:top],
    }


def stages(events, twin, start, end):
    """Per stage of site.yml (consecutive plays of one stage playbook): wall, controller-side CPU, twin CPU,
    module runs. The controller-side CPU is ansible-playbook's own CPU plus its reaped children at the play
    boundaries (what the callback sees); the first stage's figure includes the start-up (inventory parsing)."""
    names = stage_of_play()
    marks = []  # (stage, t, cpu) at the start of each stage
    current = None
    for e in events:
        if e["event"] == "play":
            stage = names.get(e["play"], e["play"])
            if stage != current:
                marks.append([stage, e["t"], e["cpu"]])
                current = stage
    final = next((e for e in events if e["event"] == "end"), None)
    if not marks or final is None:
        return []
    marks[0][1], marks[0][2] = start, 0.0
    marks.append(["end", final["t"], final["cpu"]])
    out = []
    current, index = None, -1
    runs = {}
    for e in events:
        if e["event"] == "play":
            stage = names.get(e["play"], e["play"])
            if stage != current:
                current, index = stage, index + 1
        elif e["event"] == "result" and index >= 0:
            runs.setdefault(index, {}).setdefault(e["host"], 0)
            runs[index][e["host"]] += e["runs"]
    for index, (stage, t0, c0) in enumerate(marks[:-1]):
        t1, c1 = marks[index + 1][1], marks[index + 1][2]
        twin_cpu = sum(row[1] for row in twin if t0 <= row[0] < t1)
        hosts = runs.get(index, {})
        out.append({"stage": stage, "wall_seconds": round(t1 - t0, 2), "cpu_seconds": round(c1 - c0, 2),
                    "twin_cpu_seconds": round(twin_cpu, 2),
                    "module_runs": sum(hosts.values()), "hosts": len(hosts)})
    return out


def fresh_fleet(work, nodes, env):
    """A sim fleet in its factory state under ``work`` with the accounting front-ends: (inventory, front-ends)."""
    inventory = write_fleet(work, nodes)
    # the twin roots first, outside the measurement (an inventory read creates nothing: `bluefleet sim init`)
    subprocess.run([str(BIN / "bluefleet"), "sim", "init", "-i", str(inventory)], env=env, check=True,
                   capture_output=True, timeout=1800)
    return inventory, account_front_ends(inventory.parent / "state")


def run_bench(args):
    work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    floor = write_floor(work)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), DPUSIM_TIME_SCALE=repr(args.time_scale),
               ANSIBLE_FORKS=str(args.forks), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED=",".join(configured_callbacks() + ["bench_count"]
                                                  + (["bench_workers"] if args.profile else [])),
               PATH="%s%s%s" % (BIN, os.pathsep, os.environ.get("PATH", "")))
    env.update(strategy_env(args.strategy))
    for name in ("BLUEFLEET_SIM_NODES", "BLUEFLEET_SIM_STATE"):
        env.pop(name, None)
    inventory, front_ends = fresh_fleet(work, args.nodes, env)
    extra_args = []
    for extra in args.extra:
        extra_args += ["-e", extra]
    runs = {"floor_before": run_one("floor1", floor, inventory, work, env, [])}
    runs["first"] = run_one("first", ROOT / args.playbook, inventory, work, env, extra_args)
    if not args.no_rerun:
        runs["rerun"] = run_one("rerun", ROOT / args.playbook, inventory, work, env, extra_args)
    repeats = [repeat_summary(runs["first"], runs["rerun"])] if args.repeat > 1 else []
    for k in range(2, args.repeat + 1):  # the same pair again, each on a fleet of its own in its factory state
        repeat_work = work / ("repeat-%d" % k)
        repeat_work.mkdir()
        repeat_inventory, _ = fresh_fleet(repeat_work, args.nodes, env)
        first = run_one("first", ROOT / args.playbook, repeat_inventory, repeat_work, env, extra_args)
        rerun = run_one("rerun", ROOT / args.playbook, repeat_inventory, repeat_work, env, extra_args)
        repeats.append(repeat_summary(first, rerun))
    if args.floor_runs == 2:
        runs["floor_after"] = run_one("floor2", floor, inventory, work, env, [])
    floors = [runs[label] for label in ("floor_before", "floor_after") if label in runs]
    floor_wall = sum(run["wall_seconds"] for run in floors) / len(floors)
    floor_cpu = sum(run["cpu_seconds_excluding_twin"] for run in floors) / len(floors)
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "nodes": args.nodes, "inventory_hosts": 2 * args.nodes, "playbook": args.playbook, "forks": args.forks,
        "strategy": args.strategy, "time_scale": args.time_scale, "extra_vars": args.extra,
        "accounting_front_ends": front_ends,
        "floor": {"tasks_per_host": FLOOR_TASKS, "runs": len(floors), "wall_seconds": round(floor_wall, 3),
                  "cpu_seconds": round(floor_cpu, 2)},
        "runs": runs,
        "workdir": str(work),
    }
    for label in ("first", "rerun"):
        if label not in runs:
            continue
        run = runs[label]
        run["wall_vs_floor"] = round(run["wall_seconds"] / floor_wall, 3) if floor_wall else None
        run["cpu_vs_floor"] = round(run["cpu_seconds_excluding_twin"] / floor_cpu, 3) if floor_cpu else None
        run["cpu_per_pair_excluding_twin"] = round(run["cpu_seconds_excluding_twin"] / args.nodes, 3)
        run["twin_cpu_per_pair"] = round(run["twin_cpu_seconds"] / args.nodes, 3)
        run["module_runs_per_pair"] = round(run["module_runs"] / args.nodes, 2)
    if "rerun" in runs:
        result.update(ratios(runs["first"], runs["rerun"]))
    if repeats:
        result["repeats"] = repeats
        result["median"] = medians(repeats)
    result["rc"] = max([run["rc"] for run in runs.values()]
                       + [repeat[label]["rc"] for repeat in repeats for label in ("first", "rerun")])
    if not args.keep and result["rc"] == 0:
        subprocess.run(["rm", "-rf", str(work)], check=False)
        result["workdir"] = None
    return result


def table(result):
    floor = result["floor"]
    lines = ["fleet: N=%d pairs (%d hosts), %s, forks %d, strategy %s, DPUSIM_TIME_SCALE %s" % (
        result["nodes"], result["inventory_hosts"], result["playbook"], result["forks"], result["strategy"],
        result["time_scale"]),
        "floor (%d x command true per host, mean of %d runs): wall %.1f s, CPU %.1f s" % (
            floor["tasks_per_host"], floor["runs"], floor["wall_seconds"], floor["cpu_seconds"]),
        "%-6s %9s %8s %9s %9s %8s %8s %9s %8s %5s %7s" % (
            "run", "wall s", "x floor", "CPU s", "twin CPU", "rest", "x floor", "CPU/pair", "mod/pair", "chg",
            "load1")]
    for label in ("first", "rerun"):
        run = result["runs"].get(label)
        if run is None:
            continue
        lines.append("%-6s %9.1f %8.2f %9.1f %9.1f %8.1f %8.2f %9.2f %8.1f %5d %7.1f" % (
            label, run["wall_seconds"], run["wall_vs_floor"], run["cpu_seconds"], run["twin_cpu_seconds"],
            run["cpu_seconds_excluding_twin"], run["cpu_vs_floor"], run["cpu_per_pair_excluding_twin"],
            run["module_runs_per_pair"], run["changed"], run["loadavg_before"][0]))
    first = result["runs"]["first"]
    if first["stages"]:
        lines.append("stages of the first run: %-12s %8s %8s %8s %9s" % ("stage", "wall s", "CPU s", "twin s",
                                                                          "mod/pair"))
        for stage in first["stages"]:
            lines.append("                         %-12s %8.1f %8.1f %8.1f %9.1f" % (
                stage["stage"], stage["wall_seconds"], stage["cpu_seconds"], stage["twin_cpu_seconds"],
                stage["module_runs"] / result["nodes"]))
    for label in ("first", "rerun"):
        prof = (result["runs"].get(label) or {}).get("profile")
        if not prof:
            continue
        compile_cpu = prof.get("workers_template_compile_cpu")
        lines.append("profile of the %s run (CPU s, twin excluded): ansible-playbook %.1f, workers %.1f%s, module "
                     "processes %.1f; %d task results" % (
                         label, prof["ansible_playbook_cpu"], prof["workers_cpu"],
                         " (template compilation %.1f)" % compile_cpu if compile_cpu is not None else "",
                         prof["module_processes_cpu_excluding_twin"], prof["results"]))
        for kind, k in sorted(prof["by_kind"].items()):
            lines.append("  %-22s %5d results, workers %7.1f, modules %7.1f" % (
                kind, k["results"], k["worker_cpu"], k["module_cpu"]))
        for task in prof["tasks"][:10]:
            lines.append("  %7.2f %7.2f %4d  %s" % (task["worker_cpu"], task["module_cpu"], task["results"],
                                                   task["task"][:90]))
    if "rerun_wall_vs_first" in result:
        lines.append("no-op re-run / first run: wall %.0f %%, CPU excluding twin %.0f %%" % (
            100 * result["rerun_wall_vs_first"], 100 * result["rerun_cpu_vs_first"]))
        if "rerun_machine_vs_first" in result:
            lines.append("the twin's tools took %.2fx the first run's CPU per call in the re-run (the machine's "
                         "speed); at the first run's speed the re-run is %.0f %% of it" % (
                             result["rerun_machine_vs_first"], 100 * result["rerun_cpu_vs_first_same_machine"]))
    if result.get("repeats"):
        lines.append("repeat  first CPU s  re-run CPU s  chg  load1   re-run/first  same machine  (twin excluded)")
        for k, repeat in enumerate(result["repeats"], 1):
            lines.append("%6d %12.1f %13.1f %4d %6.1f %13.0f %%  %11s" % (
                k, repeat["first"]["cpu_seconds_excluding_twin"], repeat["rerun"]["cpu_seconds_excluding_twin"],
                repeat["rerun"]["changed"], repeat["first"]["loadavg_before"][0],
                100 * repeat.get("rerun_cpu_vs_first", 0),
                "%.0f %%" % (100 * repeat["rerun_cpu_vs_first_same_machine"])
                if "rerun_cpu_vs_first_same_machine" in repeat else "-"))
        median = result["median"]
        lines.append("median of %d repeats: re-run / first run CPU excluding twin %.1f %%%s, wall %.1f %%" % (
            len(result["repeats"]), 100 * median["rerun_cpu_vs_first"],
            ", at the first run's machine speed %.1f %%" % (100 * median["rerun_cpu_vs_first_same_machine"])
            if "rerun_cpu_vs_first_same_machine" in median else "", 100 * median["rerun_wall_vs_first"]))
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    result = run_bench(args)
    print(table(result))
    failed = list(result["runs"].items()) + [("%s of repeat %d" % (label, k), repeat[label])
                                             for k, repeat in enumerate(result.get("repeats", ()), 1)
                                             for label in ("first", "rerun")]
    for label, run in failed:
        if run["rc"] != 0:
            print("%s failed (rc=%d):\n%s" % (label, run["rc"], run.get("output_tail", "")), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
