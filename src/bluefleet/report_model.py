"""The data behind ``bluefleet report``: fleet matrix, version matrix, drift, redaction.

A run folder (written by ``bluefleet run``) holds:

- ``summary.json``: the playbook run (stage, status, per-host stats, failed tasks, exit code);
- ``evidence.json``: the conformance suite's checks (``tests/validation/conftest.py``,
  ``--bluefleet-evidence``): stage, hosts, outcome, message and the commands each check ran;
- ``facts.json``: per host the results of ``dpu_info`` / ``gpu_info`` and ``ethtool -i``;
- ``junit.xml`` and ``runner/`` (ansible-runner's artifacts) for CI tools.

``build_model`` turns them into one JSON-able dict (``report.json``); the renderers only read it.
Every value that reaches the model goes through ``redact`` first.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

FORMAT = "bluefleet-report/1"
STAGES = ("preflight", "firmware", "offload", "services", "fabric", "zero_trust")
PLAYBOOK_CHECK = "playbook"  # the column that shows how the playbook itself went on each host
FLEET_ROW = "(fleet)"  # checks that are about the whole selection, not one host
REDACTED = "********"

# Variable names that carry secrets (IPsec PSKs, passwords, hashes, keys, tokens).
SECRET_NAME = re.compile(r"password|passwd|passphrase|psk|secret|key|hash|token", re.IGNORECASE)
# `name = value` / `name: value` in command output whose name says secret.
SECRET_TEXT = re.compile(
    r"(?im)(\b[\w.-]*(?:password|passwd|passphrase|psk|secret|key|hash|token)[\w.-]*\b[ \t]*[:=][ \t]*)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;}\"'<>]+)")

# not_applicable: the check does not apply to that host (``pytest.skip("not applicable: WHY")`` in the suite); the
# cell carries WHY as its message, is counted apart and is never shown as passed.
STATUS_ORDER = ("error", "failed", "unreachable", "skipped", "not_applicable", "changed", "passed", "absent")
NOT_APPLICABLE = "not_applicable"
NA_PREFIX = "not applicable: "


def redact(value: Any, name: str = "") -> Any:
    """A copy of ``value`` with secrets replaced: values of keys named like a secret, `key = value`
    lines in text, and results Ansible censored for ``no_log``."""
    if name and SECRET_NAME.search(name) and value not in (None, "", [], {}):
        return REDACTED
    if isinstance(value, dict):
        if value.get("_ansible_no_log") or "censored" in value:
            return {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified"}
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        # SECRET_TEXT needs one of SECRET_NAME's words: the cheap search first (most output has none)
        return SECRET_TEXT.sub(lambda m: m.group(1) + REDACTED, value) if SECRET_NAME.search(value) else value
    return value


def load_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ReportError("%s: cannot read %s (%s); re-run `bluefleet run` to write it again"
                          % (path, what, exc)) from exc


class ReportError(Exception):
    """A run folder that cannot be reported (the message says which file and what to do)."""


def _worst(a: str, b: str) -> str:
    return a if STATUS_ORDER.index(a) <= STATUS_ORDER.index(b) else b


def _role(groups: list[str]) -> str:
    if "dpus" in groups:
        return "dpu"
    if "gpu_hosts" in groups:
        return "gpu_host"
    return "other"


def _fix_for(stage: str | None) -> str:
    if stage in STAGES:
        return "playbooks/%s.yml (bluefleet run --stage %s)" % (stage, stage)
    return "see the check's message"


# --- fleet matrix -------------------------------------------------------------------------------


def _outcome(record: dict) -> str:
    status = record.get("outcome") or "error"
    if status == "skipped" and (record.get("message") or "").startswith(NA_PREFIX):  # evidence of an older suite
        status = NOT_APPLICABLE
    return status


def check_totals(evidence: dict | None) -> dict[str, int]:
    """Outcomes counted once per check the suite ran (one per pytest node id), as JUnit and pytest count them.

    A pair check is one check shown on two rows (the GPU host's and its DPU's); counting cells counted it twice."""
    totals: Counter = Counter()
    seen: set[str] = set()
    for record in (evidence or {}).get("checks") or []:
        nodeid = record.get("nodeid") or record.get("check") or "?"
        if nodeid in seen:  # pytest reports one outcome per node id (a teardown error is part of it)
            continue
        seen.add(nodeid)
        totals[_outcome(record)] += 1
    return dict(totals)


def _matrix(summary: dict, evidence: dict | None, facts: dict) -> tuple[list, list, dict]:
    """(hosts, checks, cells): one row per host, one column per check, cells[host][check]."""
    # Rows: the hosts the playbook ran on, those with facts, those a check ran on. The inventory maps only
    # name the groups (an inventory may hold hosts outside gpu_hosts / dpus that nothing ran on).
    known: dict[str, list[str]] = {}
    for source in (facts or {}, (evidence or {}).get("hosts") or {}, summary.get("hosts") or {}):
        for host, value in source.items():
            host_groups = value.get("groups") if isinstance(value, dict) else value
            if host_groups and host not in known:
                known[host] = [g for g in host_groups if g not in ("all", "ungrouped")]
    groups: dict[str, list[str]] = {}
    inventory = summary.get("hosts")  # the inventory's hosts: not localhost of the controller's plays
    for host in list(facts or {}) + list(summary.get("stats") or {}):
        if not inventory or host in inventory:
            groups.setdefault(host, known.get(host, []))

    checks: dict[str, dict] = {}
    cells: dict[str, dict[str, dict]] = {}

    def put(host: str, check: str, cell: dict) -> None:
        row = cells.setdefault(host, {})
        if check in row:  # two records for one host and check (e.g. a pair check on both sides)
            old = row[check]
            old["status"] = _worst(old["status"], cell["status"])
            old["message"] = "\n".join(x for x in (old["message"], cell["message"]) if x)
            old["commands"] += [c for c in cell["commands"] if c not in old["commands"]]
            old["nodeids"] += cell["nodeids"]
        else:
            row[check] = cell

    stage = summary.get("stage") or "site"
    if summary.get("stats") is not None:
        checks[PLAYBOOK_CHECK] = {"id": PLAYBOOK_CHECK, "stage": "playbook", "module": summary.get("playbook", ""),
                                  "fix": "the failed task's message; re-run `bluefleet run --stage %s`" % stage}
        failures = summary.get("task_failures") or {}
        for host, st in (summary.get("stats") or {}).items():
            if host not in groups:
                continue
            if st.get("unreachable"):
                status = "unreachable"
            elif st.get("failures"):
                status = "failed"
            elif st.get("changed"):
                status = "changed"
            else:
                status = "passed"
            msg = "ok=%s changed=%s failed=%s unreachable=%s skipped=%s" % tuple(
                st.get(k, 0) for k in ("ok", "changed", "failures", "unreachable", "skipped"))
            tasks = failures.get(host) or []
            lines = [msg] + ["%s: %s" % (t.get("task"), t.get("msg")) for t in tasks]
            put(host, PLAYBOOK_CHECK, {"status": status, "message": "\n".join(lines), "commands": [],
                                       "nodeids": [], "stage": "playbook"})

    for record in (evidence or {}).get("checks") or []:
        check = record.get("check") or record.get("nodeid") or "?"
        rec_stage = record.get("stage")
        checks.setdefault(check, {"id": check, "stage": rec_stage or "other", "module": record.get("module", ""),
                                  "fix": _fix_for(rec_stage)})
        hosts = record.get("hosts") or [FLEET_ROW]
        for host in hosts:
            commands = list(record.get("commands") or [])
            message = record.get("message") or ""
            status = _outcome(record)
            put(host, check, {"status": status, "message": message,
                              "commands": commands, "nodeids": [record.get("nodeid")], "stage": rec_stage})
            if host != FLEET_ROW:
                groups.setdefault(host, known.get(host, []))

    order = {s: i for i, s in enumerate(("playbook",) + STAGES)}
    check_list = sorted(checks.values(), key=lambda c: (order.get(c["stage"], len(order)), c["module"], c["id"]))
    role_order = {"gpu_host": 0, "dpu": 1, "other": 2}
    host_list = [{"name": h, "groups": groups[h], "role": _role(groups[h])} for h in groups]
    host_list.sort(key=lambda h: (role_order[h["role"]], h["name"]))
    if FLEET_ROW in cells:
        host_list.append({"name": FLEET_ROW, "groups": [], "role": "fleet"})
    return host_list, check_list, cells


# --- version matrix -----------------------------------------------------------------------------

# (column, which group it applies to, how to read it from a host's facts)
VERSION_COLUMNS = (
    ("host driver (mlx5_core / DOCA-OFED)", "gpu_hosts"),
    ("NIC firmware flashed", None),
    ("NIC firmware running", None),
    ("PSID", None),
    ("BFB (DPU OS)", "dpus"),
    ("DOCA on Arm", "dpus"),
    ("MFT", None),
    ("BMC firmware", "dpus"),
    ("ERoT firmware", "dpus"),
    ("nvidia-peermem", "gpu_hosts"),
    ("GPU driver", "gpu_hosts"),
    ("CUDA", "gpu_hosts"),
)


def ethtool_driver(text: str | None) -> dict[str, str]:
    """`ethtool -i IF` as key -> value. Layout: one `key: value` per line
    (corpus: ethtool/bf3-host-ethtool-i-rhel94-aarch64.txt; `expansion-rom-version: ` may end in a space)."""
    fields: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith(" "):
            fields[key.strip()] = value.strip()
    return fields


def _mft(tool_versions: dict) -> str | None:
    text = (tool_versions or {}).get("mst") or (tool_versions or {}).get("flint")
    if not text:
        return None
    match = re.search(r"mft\s+([\w.-]+)", text)
    return match.group(1) if match else text


def host_versions(info: dict) -> dict[str, Any]:
    """The version matrix row of one host from its facts.json entry."""
    dpu_info = info.get("dpu_info") or {}
    gpu_info = info.get("gpu_info") or {}
    devices = dpu_info.get("devices") or []
    card = devices[0] if devices else {}
    firmware = card.get("firmware") or {}
    dpu_os = dpu_info.get("dpu_os") or {}
    gpus = gpu_info.get("gpus") or {}
    peermem = gpu_info.get("peermem") or {}
    driver = ethtool_driver(info.get("ethtool_i"))
    bmc = info.get("bmc_info") or {}
    peer = None
    if peermem:
        peer = peermem.get("version") or ("loaded" if peermem.get("loaded") else "not loaded")
    return {
        "host driver (mlx5_core / DOCA-OFED)": driver.get("version"),
        "NIC firmware flashed": firmware.get("flashed"),
        "NIC firmware running": firmware.get("running"),
        "PSID": card.get("psid") or firmware.get("psid"),
        "BFB (DPU OS)": dpu_os.get("release") or dpu_os.get("bundle_version"),
        "DOCA on Arm": dpu_os.get("doca_version"),
        "MFT": _mft(dpu_info.get("tool_versions") or {}),
        "BMC firmware": bmc.get("bmc_version"),
        "ERoT firmware": (bmc.get("firmware") or {}).get("Bluefield_FW_ERoT"),
        "nvidia-peermem": peer,
        "GPU driver": gpus.get("driver_version"),
        "CUDA": gpus.get("cuda_version"),
    }


def version_matrix(facts: dict) -> dict:
    """Rows per host; a value is flagged when hosts of the same group disagree (those not equal to the
    most common value) or when a card's running firmware is not the flashed one (reset pending)."""
    rows: dict[str, dict[str, dict]] = {}
    groups: dict[str, str] = {}
    for host, info in sorted((facts or {}).items()):
        host_groups = info.get("groups") or []
        group = "dpus" if "dpus" in host_groups else "gpu_hosts" if "gpu_hosts" in host_groups else "other"
        groups[host] = group
        values = host_versions(info)
        rows[host] = {}
        for column, applies in VERSION_COLUMNS:
            if applies and applies != group:
                continue
            rows[host][column] = {"value": values[column], "mismatch": False, "why": ""}
        if info.get("error"):
            rows[host]["error"] = {"value": info["error"], "mismatch": True, "why": "facts could not be gathered"}
    for column, _applies in VERSION_COLUMNS:
        for group in set(groups.values()):
            members = [h for h in rows if groups[h] == group and column in rows[h]
                       and rows[h][column]["value"] is not None]
            counts = Counter(str(rows[h][column]["value"]) for h in members)
            if len(counts) > 1:
                common = counts.most_common(1)[0][0]
                for h in members:
                    if str(rows[h][column]["value"]) != common:
                        rows[h][column].update(mismatch=True, why="%s runs %s; most %s run %s" % (
                            h, rows[h][column]["value"], group, common))
    for row in rows.values():
        flashed, running = row.get("NIC firmware flashed"), row.get("NIC firmware running")
        if flashed and running and flashed["value"] and running["value"] and flashed["value"] != running["value"]:
            why = "flashed %s but running %s: a firmware reset is pending (playbooks/upgrade.yml)" % (
                flashed["value"], running["value"])
            for cell in (flashed, running):
                cell["mismatch"] = True
                cell["why"] = (cell["why"] + "; " if cell["why"] else "") + why
    columns = [c for c, _ in VERSION_COLUMNS if any(c in r for r in rows.values())]
    return {"columns": columns, "rows": rows}


# --- drift --------------------------------------------------------------------------------------


def previous_run(run_dir: Path) -> Path | None:
    """The newest sibling run folder, older than this one by name (UTC timestamps sort), with a report."""
    candidates = sorted(p for p in run_dir.parent.iterdir()
                        if p.is_dir() and p.name < run_dir.name and (p / "report.json").is_file())
    return candidates[-1] if candidates else None


def drift(model: dict, previous: dict | None, previous_dir: str | None) -> dict:
    out: dict[str, Any] = {"previous": previous_dir, "cells": [], "versions": [], "hosts_added": [],
                           "hosts_removed": []}
    if not previous:
        return out
    before_hosts = {h["name"] for h in previous.get("hosts", [])}
    after_hosts = {h["name"] for h in model["hosts"]}
    out["hosts_added"] = sorted(after_hosts - before_hosts)
    out["hosts_removed"] = sorted(before_hosts - after_hosts)
    before_cells = previous.get("cells", {})
    for host in sorted(after_hosts & before_hosts):
        now, then = model["cells"].get(host, {}), before_cells.get(host, {})
        for check in sorted(set(now) | set(then)):
            a = then.get(check, {}).get("status", "absent")
            b = now.get(check, {}).get("status", "absent")
            # a check that ran in only one of the two runs (another --stage) is not drift
            if a != b and check != PLAYBOOK_CHECK and "absent" not in (a, b):
                out["cells"].append({"host": host, "check": check, "before": a, "after": b})
    before_v = (previous.get("versions") or {}).get("rows", {})
    for host, row in sorted(model["versions"]["rows"].items()):
        for column, cell in row.items():
            old = before_v.get(host, {}).get(column)
            if old is not None and old.get("value") != cell.get("value"):
                out["versions"].append({"host": host, "column": column, "before": old.get("value"),
                                        "after": cell.get("value")})
    return out


# --- everything ---------------------------------------------------------------------------------


def build_model(run_dir: Path, previous_dir: Path | None = None) -> dict:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError("%s is not a folder: give a run folder written by `bluefleet run` (runs/<timestamp>)"
                          % run_dir)
    summary = load_json(run_dir / "summary.json", "the run summary")
    evidence = load_json(run_dir / "evidence.json", "the conformance suite's evidence")
    facts = load_json(run_dir / "facts.json", "the facts") or {}
    if summary is None and evidence is None:
        raise ReportError("%s holds neither summary.json nor evidence.json: it is not a run folder of "
                          "`bluefleet run`" % run_dir)
    summary = redact(summary or {})
    evidence = redact(evidence) if evidence is not None else None
    facts = redact(facts)
    hosts, checks, cells = _matrix(summary, evidence, facts)
    totals = check_totals(evidence)
    model = {
        "format": FORMAT,
        "run": {k: summary.get(k) for k in ("started", "finished", "seconds", "stage", "playbook", "inventory",
                                           "limit", "check", "status", "exit_code", "validate_rc")},
        "run_dir": str(run_dir),
        "suite": {"ran": evidence is not None, "exitstatus": (evidence or {}).get("exitstatus"),
                  "not_applicable": (evidence or {}).get("not_applicable", [])},
        "stages": ["playbook", *STAGES, "other"],
        "hosts": hosts,
        "checks": checks,
        "cells": cells,
        "totals": totals,
        "not_applicable": [{"host": h, "check": c, "reason": cell["message"].removeprefix(NA_PREFIX)}
                           for h, row in cells.items() for c, cell in sorted(row.items())
                           if cell["status"] == NOT_APPLICABLE],
        "versions": version_matrix(facts),
    }
    if previous_dir is None:
        previous_dir = previous_run(run_dir)
    previous = load_json(Path(previous_dir) / "report.json", "the previous report") if previous_dir else None
    model["drift"] = drift(model, previous, str(previous_dir) if previous_dir else None)
    from bluefleet.report_dividend import dividend_section

    model["dividend"] = redact(dividend_section(run_dir))
    return model
