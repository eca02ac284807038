"""Module-process cost: CPU seconds of one run of each module that preflight and an upgrade run, twin excluded.

Every module run on a node is a fresh Python process that unpacks the AnsiballZ payload and imports from it, so what
the collection's code imports and builds at import time is paid on every run. This bench measures exactly that
process and nothing of Ansible's controller:

1. builds a sim fleet of one pair (``bluefleet.dpu.sim``, as bench/fleet/run.py: every twin tool front-end replaced by
   one that logs its own CPU), and a NIC firmware image;
2. runs one playbook with ``ANSIBLE_KEEP_REMOTE_FILES=1`` that makes Ansible build and keep the AnsiballZ payload of
   each case (``CASES``: the reads of preflight - its own ``facts`` tasks, so the very arguments preflight gives -
   and of an upgrade: dpu_info with the upgrade's two filters, nic_firmware and fw_reset in check mode);
3. runs each kept payload K times as Ansible's local connection runs it (the host's interpreter, the task's
   ``bluefleet_environment``), and takes the CPU of that process and its children (``RUSAGE_CHILDREN``) less the
   CPU the twin's front-ends logged during it. Every case reads or runs in check mode: the twin's state does not
   change from one run to the next, and each run's result must not be failed.

With ``--baseline DIR`` (another checkout of the collection, e.g. a worktree of main) the payloads are built from both
checkouts with the same playbook and arguments, and their runs alternate (current, baseline, then baseline, current,
...), so that the machine's load moves both sides alike: the ratio current / baseline is the figure to read.

Usage:
    .venv/bin/python bench/module_cost/run.py --runs 10 [--baseline /work/wt/main-base] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
HOST, DPU = "sim01", "sim01-dpu"
NIC_VERSION = "32.43.1014"
# The card of a bluefield3 twin as mst names it: the upgrade gives nic_firmware and fw_reset the card its read found.
DEVICE = "/dev/mst/mt41692_pciconf0"

# (name, host, module, arguments, check mode) of the cases run with their own arguments (a module without a collection
# is bluefleet.dpu's); "preflight" runs preflight's facts tasks on both hosts instead (its dpu_info on each, on the
# GPU host with the GPUs read in the same run). The floor: a module that imports ansible.module_utils.basic and does
# nothing (ping), what any module run costs; a case's CPU above it is what the collection's code costs.
CASES = (
    ("floor: ansible.builtin.ping", DPU, "ansible.builtin.ping", {}, False),
    ("upgrade: dpu_info read versions", DPU, "dpu_info",
     {"filter": ["firmware", "privilege", "dpu_os", "nvconfig", "reset_levels"]}, False),
    ("upgrade: dpu_info health gate", DPU, "dpu_info", {"filter": ["firmware", "dpu_os", "rdma_links"]}, False),
    ("upgrade: nic_firmware (check mode)", DPU, "nic_firmware",
     {"device": "{{ bench_device }}", "image": "{{ bench_nic_image }}", "version": NIC_VERSION}, True),
    ("upgrade: fw_reset (check mode)", DPU, "fw_reset",
     {"device": "{{ bench_device }}",
      "changes": [{"kind": "nic_firmware", "name": "nic_firmware", "before": "32.41.1000", "after": NIC_VERSION}]},
     True),
)
PREFLIGHT = (("preflight: dpu_info (DPU)", DPU, "dpu_info"), ("preflight: dpu_info (GPU host)", HOST, "dpu_info"))
# The module runs of one upgrade of a node (playbooks/upgrade.yml with a NIC image: two reads, the burn and the reset;
# the burn and the reset are measured in check mode, their reads and plans without the writes)
UPGRADE = tuple(case[0] for case in CASES if case[0].startswith("upgrade: "))
FLOOR = CASES[0][0]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="K: runs of each payload (default 10)")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout of the collection (its root): its payloads run alternately with these")
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    if args.baseline and not (args.baseline / "galaxy.yml").is_file():
        parser.error("--baseline: %s is not the root of a checkout of the collection (no galaxy.yml)" % args.baseline)
    return args


def fleet_bench():
    """bench/fleet/run.py as a module: its sim fleet with accounting front-ends, one way of measuring the twin."""
    spec = importlib.util.spec_from_file_location("bench_fleet_run", ROOT / "bench" / "fleet" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def collections_dir(work, label, checkout):
    """A collections path holding ``checkout`` as bluefleet.dpu."""
    path = work / "collections" / label
    (path / "ansible_collections" / "bluefleet").mkdir(parents=True)
    (path / "ansible_collections" / "bluefleet" / "dpu").symlink_to(checkout.resolve())
    return path


def playbook(payloads):
    """One play per case, each keeping its payload under its own remote tmp (``payloads/<index>``); preflight's facts
    tasks on both hosts (``payloads/preflight-<host>``)."""
    plays = [{"name": "Preflight's reads on %s" % host, "hosts": host, "gather_facts": False,
              "environment": "{{ bluefleet_environment | default({}) }}",
              "vars": {"ansible_remote_tmp": "%s/preflight-%s" % (payloads, host)},
              "tasks": [{"name": "Preflight's facts tasks",
                         "ansible.builtin.include_role": {"name": "bluefleet.dpu.preflight", "tasks_from": "facts"}}]}
             for host in (HOST, DPU)]
    for index, (name, host, module, module_args, check_mode) in enumerate(CASES):
        plays.append({"name": name, "hosts": host, "gather_facts": False,
                      "environment": "{{ bluefleet_environment | default({}) }}",
                      "vars": {"ansible_remote_tmp": "%s/%d" % (payloads, index)},
                      "tasks": [{"name": name, fqcn(module): module_args, "check_mode": check_mode}]})
    return plays


def build_payloads(work, label, collections, inventory, env, image):
    """Run the playbook once with the payloads kept; ``{case name: (host, payload path)}``."""
    payloads = work / "payloads" / label
    book = work / ("payloads-%s.yml" % label)
    book.write_text(yaml.safe_dump(playbook(payloads), sort_keys=False))
    run_env = dict(env, ANSIBLE_KEEP_REMOTE_FILES="1", ANSIBLE_COLLECTIONS_PATH=str(collections))
    extra = "bench_nic_image=%s bench_device=%s" % (image, DEVICE)
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(book), "-e", extra],
                          env=run_env, capture_output=True, text=True, cwd=str(ROOT), check=False, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit("building the payloads (%s) failed:\n%s" % (label, (proc.stdout + proc.stderr)[-4000:]))
    found = {}
    for name, host, module in PREFLIGHT:
        found[name] = (host, one_payload(payloads / ("preflight-" + host), module))
    for index, (name, host, module, _args, _check) in enumerate(CASES):
        found[name] = (host, one_payload(payloads / str(index), module))
    return found


def fqcn(module):
    return module if "." in module else "bluefleet.dpu." + module


def one_payload(directory, module):
    module = module.rsplit(".", 1)[-1]
    paths = sorted(directory.glob("ansible-tmp-*/AnsiballZ_%s.py" % module))
    if len(paths) != 1:
        raise SystemExit("expected one AnsiballZ_%s.py under %s, found %d" % (module, directory, len(paths)))
    return paths[0]


def host_environment(inventory, env):
    """Each host's ``bluefleet_environment`` (the twin's PATH and root) and interpreter, as the inventory gives them."""
    out = {}
    for host in (HOST, DPU):
        proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(inventory), "--host", host], env=env,
                              capture_output=True, text=True, check=True, timeout=300)
        hostvars = json.loads(proc.stdout)
        out[host] = (hostvars.get("ansible_python_interpreter", sys.executable), hostvars["bluefleet_environment"])
    return out


def run_payload(path, interpreter, environment, env, twin_log):
    """One run of a kept payload: (module CPU excluding the twin, twin CPU, wall)."""
    rows_before = len(twin_log.read_text().splitlines()) if twin_log.exists() else 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([interpreter, str(path)], env=dict(env, **environment), capture_output=True, text=True,
                          cwd=str(path.parent), check=False, timeout=600)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rows = twin_log.read_text().splitlines()[rows_before:] if twin_log.exists() else []
    twin = sum(float(row.split(" ", 2)[1]) for row in rows)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        result = {"failed": True, "msg": "no JSON: %s" % (proc.stdout + proc.stderr)[-2000:]}
    if proc.returncode != 0 or result.get("failed"):
        raise SystemExit("%s failed (rc=%d): %s" % (path, proc.returncode, result.get("msg")))
    return cpu - twin, twin, wall, len(rows)


def summary(values):
    return {"runs": len(values), "median": round(statistics.median(values), 4),
            "mean": round(statistics.mean(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def run_bench(args):
    fleet = fleet_bench()
    work = Path(tempfile.mkdtemp(prefix="bench-module-cost-"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH="%s%s%s" % (BIN, os.pathsep, os.environ.get("PATH", "")))
    # production payloads: no test callback adding bytecode (tests/integration/callback_plugins/ansiballz_cache.py)
    for name in ("BLUEFLEET_SIM_NODES", "BLUEFLEET_SIM_STATE", "ANSIBLE_CALLBACK_PLUGINS", "ANSIBLE_CALLBACKS_ENABLED"):
        env.pop(name, None)
    inventory = fleet.write_fleet(work, 1)
    subprocess.run([str(BIN / "bluefleet"), "sim", "init", "-i", str(inventory)], env=env, check=True,
                   capture_output=True, timeout=600)
    fleet.account_front_ends(inventory.parent / "state")
    image = work / "nic.bin"
    subprocess.run([str(BIN / "dpusim"), "make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version",
                    NIC_VERSION, "-o", str(image)], env=env, check=True, capture_output=True, timeout=300)
    checkouts = {"current": ROOT}
    if args.baseline:
        checkouts["baseline"] = args.baseline
    collections = {label: collections_dir(work, label, checkout) for label, checkout in checkouts.items()}
    payloads = {label: build_payloads(work, label, collections[label], inventory, env, image) for label in checkouts}
    hosts = host_environment(inventory, dict(env, ANSIBLE_COLLECTIONS_PATH=str(collections["current"])))
    twin_log = work / "twin.log"
    run_env = dict(env, BENCH_TWIN_CPU_LOG=str(twin_log))
    names = [FLOOR] + [name for name, _host, _module in PREFLIGHT] + list(UPGRADE)
    samples = {label: {name: {"cpu": [], "twin": [], "wall": [], "tool_calls": []} for name in names}
               for label in checkouts}
    load_before = os.getloadavg()
    for index in range(args.runs):
        for name in names:
            # alternate: both sides see the same load, and each goes first in every other round
            for label in list(checkouts)[:: 1 if index % 2 == 0 else -1]:
                host, path = payloads[label][name]
                interpreter, environment = hosts[host]
                cpu, twin, wall, calls = run_payload(path, interpreter, environment, run_env, twin_log)
                entry = samples[label][name]
                entry["cpu"].append(cpu)
                entry["twin"].append(twin)
                entry["wall"].append(wall)
                entry["tool_calls"].append(calls)
    cases = {}
    for name in names:
        cases[name] = {}
        for label in checkouts:
            entry = samples[label][name]
            cases[name][label] = {"module_cpu": summary(entry["cpu"]), "twin_cpu_median": round(
                statistics.median(entry["twin"]), 4), "wall_median": round(statistics.median(entry["wall"]), 4),
                "twin_tool_calls": entry["tool_calls"][0], "payload_bytes": payloads[label][name][1].stat().st_size}
        for label in checkouts:
            cases[name][label]["above_floor_median"] = round(
                cases[name][label]["module_cpu"]["median"] - cases[FLOOR][label]["module_cpu"]["median"], 4)
        if args.baseline:
            cases[name]["current_vs_baseline"] = round(
                cases[name]["current"]["module_cpu"]["median"] / cases[name]["baseline"]["module_cpu"]["median"], 3)
    upgrade = {label: round(sum(cases[name][label]["module_cpu"]["median"] for name in UPGRADE), 4)
               for label in checkouts}
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": args.runs, "checkouts": {label: str(path) for label, path in checkouts.items()},
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "cases": cases, "upgrade_module_cpu": upgrade, "workdir": str(work),
    }
    if args.baseline:
        result["upgrade_current_vs_baseline"] = round(upgrade["current"] / upgrade["baseline"], 3)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
        result["workdir"] = None
    return result


def table(result):
    labels = list(result["checkouts"])
    head = "%-42s" % "module run (CPU-s, twin excluded)"
    for label in labels:
        head += " %12s %6s %7s" % (label + " median", "min", "-floor")
    if "baseline" in labels:
        head += " %8s" % "cur/base"
    lines = ["module cost: %d runs of each payload, load %.1f -> %.1f (-floor: the median less the floor's)" % (
        result["runs"], result["loadavg_before"][0], result["loadavg_after"][0]), head]
    for name, case in result["cases"].items():
        line = "%-42s" % name
        for label in labels:
            line += " %12.3f %6.3f %7.3f" % (case[label]["module_cpu"]["median"], case[label]["module_cpu"]["min"],
                                            case[label]["above_floor_median"])
        if "current_vs_baseline" in case:
            line += " %8.2f" % case["current_vs_baseline"]
        lines.append(line)
    line = "%-42s" % "one upgrade (its 4 module runs, medians)"
    for label in labels:
        line += " %12.3f %6s %7s" % (result["upgrade_module_cpu"][label], "", "")
    if "upgrade_current_vs_baseline" in result:
        line += " %8.2f" % result["upgrade_current_vs_baseline"]
    lines.append(line)
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    result = run_bench(args)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
