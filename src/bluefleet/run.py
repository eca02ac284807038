"""``bluefleet run``: site.yml (or one stage) through ansible-runner, then the conformance suite and the report.

    bluefleet run -i inventories/lab                       # site.yml, facts, suite, report
    bluefleet run -i inventories/sim --stage preflight     # playbooks/preflight.yml, its checks, the report
    bluefleet run -i INV --stage validate                  # the conformance suite alone (and the report)
    bluefleet run -i INV --check --limit 'node1*'          # check mode on some hosts
    bluefleet run -i INV --stage validate --checks 'not links' -k 'roce or nccl'   # a selection of checks

Everything lands in a run folder (default ``runs/<UTC timestamp>/``, ``--run-dir``): ``runner/``
(ansible-runner's artifacts: events, stdout, status), ``facts.json`` (dpu_info / gpu_info / ethtool -i
per host, for the version matrix), ``junit.xml`` and ``evidence.json`` (the suite), ``summary.json``,
and ``report.html`` / ``report.md`` / ``report.json``. The report path is printed last.

Exit codes: 0 all good; 1 a task or a check failed; 2 usage or preflight error (nothing ran);
3 hosts unreachable.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from bluefleet._collection import collection_root
from bluefleet.report_model import REDACTED, SECRET_TEXT, STAGES, redact
from bluefleet.sim import SimError, init_fleet, sim_sources

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
SUITE = "tests/validation"

# The read-only play that gathers what the version matrix shows. Modules and options as documented in
# plugins/modules/dpu_info.py (on a GPU host the same run reads the GPUs: gpu_filter, gpu_info's sections); `ethtool -i`
# on the card's first netdev gives the host driver.
FACTS_PLAY = """---
- name: Facts for the bluefleet report (read only)
  hosts: gpu_hosts:dpus
  gather_facts: false
  environment: "{{ bluefleet_environment | default({}) }}"
  tasks:
    - name: Read the cards, and the GPUs on GPU hosts
      bluefleet.dpu.dpu_info:
        filter: [firmware, dpu_os, tool_versions]
        gpu_filter: "{{ ['gpus', 'peermem'] if 'gpu_hosts' in group_names else [] }}"
        fs_root: "{{ preflight_fs_root | default(bluefleet_fs_root | default('/')) }}"
      register: bluefleet_report_dpu_info
      ignore_errors: true
    - name: Read the driver of the card's first netdev
      ansible.builtin.command:
        argv: [ethtool, -i, "{{ bluefleet_report_dpu_info.devices[0].netdevs[0] }}"]
      when: (bluefleet_report_dpu_info.devices | default([]) | length > 0)
            and (bluefleet_report_dpu_info.devices[0].netdevs | default([]) | length > 0)
      changed_when: false
      failed_when: false
      check_mode: false
    - name: Read the DPU's BMC over Redfish
      bluefleet.dpu.bmc_info:
        bmc: "{{ bluefleet_bmc }}"
      delegate_to: localhost
      when: "'dpus' in group_names and bluefleet_bmc is defined"
      ignore_errors: true
"""
FACT_TASKS = {"Read the cards, and the GPUs on GPU hosts": "dpu_info",
              "Read the driver of the card's first netdev": "ethtool_i", "Read the DPU's BMC over Redfish": "bmc_info"}


class UsageError(Exception):
    pass


def stages(root: Path) -> dict[str, str | None]:
    """Stage name -> playbook (relative to the project); ``site`` is site.yml, ``validate`` the suite alone."""
    found: dict[str, str | None] = {"site": "site.yml"}
    for path in sorted((root / "playbooks").glob("*.yml")):
        if path.stem != "validate":
            found[path.stem] = "playbooks/%s" % path.name
    found["validate"] = None
    return found


def ansible_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(root / "ansible.cfg")
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("ANSIBLE_FORCE_COLOR", "0")
    return env


def inventory_hosts(inventory: Path, env: dict[str, str], limit: str | None) -> dict[str, list[str]]:
    """host -> groups, from `ansible-inventory --list` (a bad inventory is a usage error)."""
    exe = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    cmd = [exe if os.path.exists(exe) else "ansible-inventory", "-i", str(inventory), "--list"]
    if limit:
        cmd += ["--limit", limit]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError("cannot read the inventory %s: %s" % (inventory, exc)) from exc
    if proc.returncode != 0:
        raise UsageError("the inventory %s does not parse: %s" % (inventory, proc.stderr.strip()[-800:]))
    data = json.loads(proc.stdout)
    hosts: dict[str, list[str]] = {}

    def walk(group: str, inherited: list[str]) -> None:
        body = data.get(group) or {}
        names = inherited + ([group] if group not in ("all", "ungrouped") else [])
        for host in body.get("hosts", []):
            hosts.setdefault(host, [])
            hosts[host] = sorted(set(hosts[host]) | set(names))
        for child in body.get("children", []):
            walk(child, names)

    walk("all", [])
    if not hosts:
        raise UsageError("the inventory %s%s selects no host: check -i and --limit" % (
            inventory, " with --limit %s" % limit if limit else ""))
    return hosts


class LiveView:
    """ansible-runner event handler: a status line on a TTY (rewritten in place, with a progress bar),
    one line per state change otherwise (CI logs)."""

    def __init__(self, stream: TextIO, hosts: int, stage: str, tty: bool | None = None,
                 names: set[str] | None = None):
        self.stream = stream
        self.names = names  # the inventory's hosts: localhost plays (stage 7) are not counted
        self.tty = stream.isatty() if tty is None else tty
        self.total = max(hosts, 1)
        self.stage = stage
        self.started = time.monotonic()
        self.play = ""
        self.batch = 1
        self.tasks_seen: set[str] = set()
        self.task = ""
        self.task_hosts: set[str] = set()
        self.done: set[str] = set()
        self.changed: set[str] = set()
        self.failed: set[str] = set()
        self.unreachable: set[str] = set()
        self.failures: dict[str, list[dict[str, Any]]] = {}
        self.preflight_failed: set[str] = set()

    def elapsed(self) -> str:
        return "%ds" % (time.monotonic() - self.started)

    def counts(self) -> str:
        return "hosts %d/%d done, %d changed, %d failed, %d unreachable" % (
            len(self.done), self.total, len(self.changed), len(self.failed), len(self.unreachable))

    def line(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def status(self) -> None:
        if not self.tty:
            return
        width = 20
        filled = int(width * len(self.task_hosts) / self.total)
        bar = "[" + "#" * filled + "." * (width - filled) + "]"
        self.stream.write("\r\033[K%s %s %s | %s | %s" % (self.stage, bar, self.elapsed(), self.counts(),
                                                         self.task[:50]))
        self.stream.flush()

    def __call__(self, event: dict) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        host = data.get("host")
        if kind == "playbook_on_play_start":
            self.play = data.get("play") or data.get("name") or ""
            self.batch, self.tasks_seen = 1, set()
            self.line("[%s] %s play: %s | %s" % (self.elapsed(), self.stage, self.play, self.counts()))
        elif kind == "playbook_on_task_start":
            self.task = data.get("task") or data.get("name") or ""
            self.task_hosts = set()
            uuid = data.get("task_uuid")
            if uuid and uuid in self.tasks_seen:  # a `serial` play runs its tasks again for the next batch
                self.batch += 1
                self.tasks_seen = set()
                self.line("[%s] %s play: %s (batch %d) | %s" % (self.elapsed(), self.stage, self.play, self.batch,
                                                               self.counts()))
            if uuid:
                self.tasks_seen.add(uuid)
        elif kind.startswith("runner_on_") and host and (self.names is None or host in self.names):
            self.task_hosts.add(host)
            self.done.add(host)
            res = data.get("res") or {}
            if kind == "runner_on_ok" and res.get("changed"):
                self.changed.add(host)
            elif kind == "runner_on_failed" and not data.get("ignore_errors"):
                self.failed.add(host)
                msg = failure_message(res)
                self.failures.setdefault(host, []).append({"task": data.get("task"), "msg": msg})
                if is_preflight(data):
                    self.preflight_failed.add(host)
                self.line("[%s] FAILED %s: %s: %s" % (self.elapsed(), host, data.get("task"), msg or ""))
            elif kind == "runner_on_unreachable":
                self.unreachable.add(host)
                msg = res.get("msg") if isinstance(res, dict) else None
                self.failures.setdefault(host, []).append({"task": data.get("task"), "msg": msg})
                self.line("[%s] UNREACHABLE %s: %s" % (self.elapsed(), host, str(msg or "")[:200]))
        elif kind == "playbook_on_stats":
            self.line("[%s] %s finished | %s" % (self.elapsed(), self.stage, self.counts()))
            return True
        self.status()
        return True


def failure_message(res: Any) -> str | None:
    """The whole message of a failed task; for a loop, each failed item's message after its label."""
    if not isinstance(res, dict):
        return None
    if "censored" in res:
        return "(output hidden: no_log)"
    items = [item for item in res.get("results") or [] if isinstance(item, dict) and item.get("failed")]
    if not items:
        return redact(res).get("msg")
    lines = []
    for item in items:
        label = redact(item.get("_ansible_item_label", item.get("item")))
        hidden = "censored" in item or item.get("_ansible_no_log")
        text = "(output hidden: no_log)" if hidden else redact(item).get("msg")
        lines.append("%s: %s" % (label, text))
    return "%d item(s) failed: %s" % (len(items), "; ".join(lines))


# Where a failure means "stopped before any change": the preflight role, each role's tasks/preflight.yml (input
# checks) and the checks that playbooks run before they touch a node (tasks named "..., checked before any node is
# touched").
PREFLIGHT_MARK = "checked before any node is touched"


def is_preflight(data: dict) -> bool:
    role = str(data.get("role") or "")
    path = str(data.get("task_path") or "")
    return (role.rsplit(".", 1)[-1] == "preflight" or "/roles/preflight/" in path or "/tasks/preflight.yml:" in path
            or PREFLIGHT_MARK in str(data.get("task") or ""))


def per_host_stats(stats: dict | None) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    names = {"ok": "ok", "changed": "changed", "failures": "failures", "dark": "unreachable",
             "skipped": "skipped", "rescued": "rescued", "ignored": "ignored"}
    for key, name in names.items():
        for host, count in ((stats or {}).get(key) or {}).items():
            out.setdefault(host, dict.fromkeys(names.values(), 0))[name] = count
    for host in ((stats or {}).get("processed") or {}):
        out.setdefault(host, dict.fromkeys(names.values(), 0))
    return out


def run_playbook(root: Path, private: Path, playbook: str, inventory: Path, env: dict, limit: str | None,
                 cmdline: list[str], handler) -> Any:
    import ansible_runner

    private.mkdir(parents=True, exist_ok=True)
    return ansible_runner.run(private_data_dir=str(private), project_dir=str(root), playbook=playbook,
                              inventory=str(inventory), limit=limit, cmdline=" ".join(cmdline) or None,
                              envvars=env, quiet=True, event_handler=handler, json_mode=False)


def gather_facts(root: Path, run_dir: Path, inventory: Path, env: dict, limit: str | None,
                 hosts: dict[str, list[str]]) -> dict[str, dict]:
    play = run_dir / "facts.yml"
    play.write_text(FACTS_PLAY, encoding="utf-8")
    facts: dict[str, dict] = {h: {"groups": g} for h, g in hosts.items() if {"gpu_hosts", "dpus"} & set(g)}

    def handler(event: dict) -> bool:
        data = event.get("event_data") or {}
        key = FACT_TASKS.get(data.get("task") or "")
        host = data.get("host")
        if key and host in facts and event.get("event") in ("runner_on_ok", "runner_on_failed"):
            res = data.get("res") or {}
            if event["event"] == "runner_on_failed":
                facts[host]["error"] = "%s: %s" % (data.get("task"), res.get("msg"))
            elif key == "ethtool_i":
                facts[host][key] = res.get("stdout") if res.get("rc") == 0 else None
            else:
                facts[host][key] = {k: v for k, v in res.items()
                                    if not k.startswith("_") and k not in ("invocation", "gpu_info")}
                if "gpu_info" in res:  # dpu_info's GPU read (gpu_filter), kept apart as gpu_info's result was
                    facts[host]["gpu_info"] = res["gpu_info"]
        elif event.get("event") == "runner_on_unreachable" and host in facts:
            facts[host]["error"] = "unreachable"
        return True

    run_playbook(root, run_dir / "runner-facts", str(play), inventory, env, limit, [], handler)
    facts = redact(facts)
    (run_dir / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return facts


def redact_suite_files(run_dir: Path) -> None:
    """The suite writes command output as it was printed: hide secrets in its files before anything
    (a CI artifact upload, the report) reads them."""
    evidence = run_dir / "evidence.json"
    if evidence.is_file():
        data = json.loads(evidence.read_text(encoding="utf-8"))
        evidence.write_text(json.dumps(redact(data), indent=1) + "\n", encoding="utf-8")
    for name in ("junit.xml", "validate.log"):
        path = run_dir / name
        if path.is_file():
            path.write_text(SECRET_TEXT.sub(lambda m: m.group(1) + REDACTED, path.read_text(encoding="utf-8")),
                            encoding="utf-8")


def suite_stages(stage: str) -> str | None:
    """The checks that judge what a stage did: the stage's own, or every check (site, validate, others)."""
    if stage in STAGES:
        return stage
    return {"upgrade": "firmware", "rollback": "firmware"}.get(stage)


class Suite:
    """The conformance suite as a child process: started, then waited for (the facts play runs meanwhile;
    both only read)."""

    def __init__(self, root: Path, run_dir: Path, inventory: Path, env: dict, limit: str | None, out: TextIO,
                 stage: str | None = None, select: tuple[str | None, str | None] = (None, None)):
        self.run_dir, self.out = run_dir, out
        self.cmd = [sys.executable, "-m", "pytest", str(root / SUITE), "--hosts=ansible://%s" % (limit or "all"),
                    "--ansible-inventory=%s" % inventory, "--junitxml=%s" % (run_dir / "junit.xml"),
                    "--bluefleet-evidence=%s" % (run_dir / "evidence.json"), "-p", "no:cacheprovider", "-q",
                    "--rootdir=%s" % root, "-o", "junit_family=xunit2"]
        if stage:
            self.cmd.append("--bluefleet-stages=%s" % stage)
        markers, names = select  # the check selection: pytest -m (marks: twin, links, stage) and -k (check names)
        if markers:
            self.cmd += ["-m", markers]
        if names:
            self.cmd += ["-k", names]
        out.write("validate: %s\n" % " ".join(self.cmd[1:]))
        out.flush()
        self.started = time.monotonic()
        self.log = open(run_dir / "validate.log", "w", encoding="utf-8")  # closed in wait()
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=str(root))

    def wait(self) -> int:
        rc = self.proc.wait()
        self.log.close()
        self.seconds = round(time.monotonic() - self.started, 1)
        redact_suite_files(self.run_dir)
        tail = (self.run_dir / "validate.log").read_text(encoding="utf-8").strip().splitlines()[-1:]
        self.out.write("validate: rc=%d %s\n" % (rc, tail[0] if tail else ""))
        return rc


def parse_args(argv: list[str], root: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bluefleet run", description=__doc__.split("\n\n")[0])
    parser.add_argument("-i", "--inventory", required=True, type=Path, help="inventory file or folder")
    parser.add_argument("--stage", default="site",
                        help="site (default), validate, or a playbook of playbooks/: %s" % ", ".join(stages(root)))
    parser.add_argument("--limit", default=None, help="Ansible host pattern")
    parser.add_argument("--check", action="store_true", help="check mode (--check --diff); the suite still runs")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], help="passed to ansible-playbook")
    parser.add_argument("--tags", default=None,
                        help="run only the plays/tasks with these tags (ansible-playbook --tags), e.g. "
                             "--stage fabric_benchmark --tags dividend")
    parser.add_argument("--run-dir", type=Path, default=None, help="run folder (default runs/<UTC timestamp>)")
    parser.add_argument("--previous", type=Path, default=None, help="run folder to compare with (drift)")
    parser.add_argument("--no-validate", action="store_true", help="skip the conformance suite")
    parser.add_argument("--checks", metavar="MARKEXPR", default=None,
                        help="run only the checks this pytest -m expression selects (marks: twin, links), e.g. "
                             "'not links'")
    parser.add_argument("-k", dest="check_names", metavar="EXPR", default=None,
                        help="run only the checks whose names this pytest -k expression selects")
    args = parser.parse_args(argv)  # SystemExit(2) on a usage error (argparse printed why), 0 for --help
    if not args.inventory.exists():
        raise UsageError("inventory %s does not exist: give an inventory file or folder (-i inventories/lab)"
                         % args.inventory)
    known = stages(root)
    if args.stage not in known:
        raise UsageError("unknown stage %r: one of %s" % (args.stage, ", ".join(known)))
    if args.stage == "validate" and args.no_validate:
        raise UsageError("--stage validate with --no-validate runs nothing")
    if args.previous is not None and not (args.previous / "report.json").is_file():
        raise UsageError("--previous %s holds no report.json: give an earlier run folder" % args.previous)
    if args.run_dir is not None and args.run_dir.exists() and any(args.run_dir.iterdir()):
        raise UsageError("--run-dir %s exists and is not empty: give a new folder" % args.run_dir)
    return args


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    root = collection_root()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = parse_args(argv, root)
        except SystemExit as exc:
            return EXIT_OK if exc.code == 0 else EXIT_USAGE
        inventory = args.inventory.resolve()
        if sim_sources(inventory):  # a simulated fleet: its twin roots are made here, never by an inventory read
            init_fleet(inventory)
        env = ansible_env(root)
        hosts = inventory_hosts(inventory, env, args.limit)
    except (UsageError, SimError) as exc:
        print("bluefleet run: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    stamp = datetime.now(UTC)
    run_dir = (args.run_dir or Path("runs") / stamp.strftime("%Y%m%dT%H%M%SZ")).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    playbook = stages(root)[args.stage]
    started = time.monotonic()
    summary: dict[str, Any] = {"format": "bluefleet-run/1", "started": stamp.isoformat(timespec="seconds"),
                               "stage": args.stage, "playbook": playbook, "inventory": str(inventory),
                               "limit": args.limit, "check": args.check, "hosts": hosts}
    out.write("bluefleet run: %s on %d host(s) of %s, run folder %s\n" % (
        playbook or "conformance suite", len(hosts), inventory, run_dir))
    status, rc_playbook, view = "not run", 0, None
    if playbook:
        cmdline = ["-e", "bluefleet_validate=false"]  # the suite runs below, with evidence
        for extra in args.extra_vars:
            cmdline += ["-e", extra]
        if args.tags:
            cmdline += ["--tags", args.tags]
        if args.check:
            cmdline += ["--check", "--diff"]
        view = LiveView(out, len(hosts), args.stage, names=set(hosts))
        phase = time.monotonic()
        result = run_playbook(root, run_dir / "runner", playbook, inventory, env, args.limit, cmdline, view)
        summary["seconds_playbook"] = round(time.monotonic() - phase, 1)
        status, rc_playbook = result.status, result.rc
        summary["stats"] = per_host_stats(result.stats)
        summary["task_failures"] = view.failures
    summary["status"] = status
    summary["suite_stages"] = None if args.no_validate else (suite_stages(args.stage) or "all")
    suite = None if args.no_validate else Suite(root, run_dir, inventory, env, args.limit, out,
                                                suite_stages(args.stage), (args.checks, args.check_names))
    phase = time.monotonic()
    try:
        gather_facts(root, run_dir, inventory, env, args.limit, hosts)
    except BaseException:
        if suite is not None:
            suite.proc.terminate()
            suite.wait()
        raise
    summary["seconds_facts"] = round(time.monotonic() - phase, 1)
    rc_suite = None
    if suite is not None:
        rc_suite = suite.wait()
        summary["seconds_suite"] = suite.seconds
    unreachable = any(s.get("unreachable") for s in (summary.get("stats") or {}).values())
    if unreachable:
        code = EXIT_UNREACHABLE
    elif view is not None and view.preflight_failed and not view.changed:
        code = EXIT_USAGE  # preflight or an input check stopped every host before any change
        summary["preflight_failed"] = sorted(view.preflight_failed)
    elif rc_playbook != 0 or (rc_suite not in (None, 0)):
        code = EXIT_FAILED
    else:
        code = EXIT_OK
    summary.update(exit_code=code, playbook_rc=rc_playbook, validate_rc=rc_suite,
                   finished=datetime.now(UTC).isoformat(timespec="seconds"),
                   seconds=round(time.monotonic() - started, 1))
    (run_dir / "summary.json").write_text(json.dumps(redact(summary), indent=1, sort_keys=True) + "\n",
                                          encoding="utf-8")
    from bluefleet.report import write_report

    paths = write_report(run_dir, args.previous)
    out.write(paths["md"].read_text(encoding="utf-8"))
    out.write("exit code %d (%s)\n" % (code, {0: "ok", 1: "failures", 2: "preflight: nothing changed",
                                                  3: "hosts unreachable"}[code]))
    out.write("%s\n" % paths["html"])
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
