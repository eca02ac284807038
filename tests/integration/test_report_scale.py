"""The report of a 1,000-host run: a synthetic run folder (500 GPU hosts + 500 DPUs, 40 checks each, every
cell with a command and its output, in the shapes tests/unit/bluefleet/report_fixture.py documents) is
reported; the time and size are measured and printed, and headless Chromium shows that the page stays usable:
the script runs over the whole matrix, 100 rows per page, the filter finds one pair among the thousand and a
deep link opens the last page.

The bound on the time is loose on purpose (this is no benchmark; bench/README.md has the figures): it catches
a report that became quadratic in the hosts, not a slow machine.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bluefleet import report

ROOT = Path(__file__).resolve().parents[2]
PAIRS = 500
CHECKS = 40


def make_big_run_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    hosts = {}
    for i in range(1, PAIRS + 1):
        hosts["n%04d" % i] = ["gpu_hosts"]
        hosts["n%04d-dpu" % i] = ["dpus"]
    stats = {h: {"ok": 30, "changed": 0, "failures": 0, "unreachable": 0, "skipped": 4, "rescued": 0, "ignored": 0}
             for h in hosts}
    summary = {"format": "bluefleet-run/1", "started": path.name, "finished": path.name, "seconds": 3600.0,
               "stage": "site", "playbook": "site.yml", "inventory": "/inv/fleet.yml", "limit": None,
               "check": False, "status": "failed", "exit_code": 1, "hosts": hosts, "stats": stats,
               "task_failures": {}}
    checks = []
    stages = ("preflight", "firmware", "offload", "services", "fabric", "zero_trust")
    for host in hosts:
        for c in range(CHECKS):
            failed = host == "n0437-dpu" and c == 7
            checks.append({"nodeid": "tests/validation/test_s%d.py::test_check_%02d[%s]" % (c % 6, c, host),
                           "check": "test_check_%02d" % c, "module": "test_s%d" % (c % 6), "stage": stages[c % 6],
                           "hosts": [host], "outcome": "failed" if failed else "passed",
                           "message": "AssertionError: %s: check %d failed" % (host, c) if failed else "",
                           "commands": [{"host": host, "command": "mlnx_qos -i p0", "rc": 0,
                                         "stdout": "DCBX mode: OS controlled\nPriority trust state: dscp\n" * 3,
                                         "stderr": ""}]})
    evidence = {"format": "bluefleet-evidence/1", "exitstatus": 1, "stages": list(stages),
                "inventory": "/inv/fleet.yml", "hosts": hosts, "not_applicable": [], "checks": checks}
    facts = {h: {"groups": g} for h, g in hosts.items()}
    for name, data in (("summary.json", summary), ("evidence.json", evidence), ("facts.json", facts)):
        (path / name).write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def big_report(tmp_path_factory):
    folder = make_big_run_folder(tmp_path_factory.mktemp("runs") / "20261203T100000Z")
    started = time.perf_counter()
    paths = report.write_report(folder)
    seconds = time.perf_counter() - started
    size = paths["html"].stat().st_size
    print("report of %d hosts x %d checks: %.2f s, report.html %.1f MB" % (2 * PAIRS, CHECKS, seconds, size / 1e6))
    return paths, seconds


def test_thousand_host_report_is_written_in_reasonable_time(big_report):
    paths, seconds = big_report
    assert seconds < 600, "reporting 1,000 hosts took %.1f s" % seconds
    model = json.loads(paths["json"].read_text())
    assert len(model["hosts"]) == 2 * PAIRS
    assert model["totals"] == {"passed": 2 * PAIRS * CHECKS - 1, "failed": 1}
    assert "n0437-dpu" in paths["md"].read_text()


def visible_rows(dom: str) -> list[str]:
    table = dom[dom.index('<table id="matrix"'):]
    table = table[:table.index("</table>")]
    return [m.group(1) for m in re.finditer(r'<tr data-host="([^"]+)" data-role="[^"]*"(?: class="([^"]*)")?>', table)
            if "hidden" not in (m.group(2) or "")]


def browse(url: str) -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        proc = subprocess.run(["bash", str(ROOT / "scripts" / "ensure-chromium.sh")], capture_output=True, text=True,
                              timeout=900, check=False)
        assert proc.returncode == 0, "headless Chromium is needed and could not be installed: %s" % proc.stderr
        chromium = proc.stdout.strip().splitlines()[-1]
    proc = subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                           "--hide-scrollbars", "--virtual-time-budget=20000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, "chromium failed (rc=%s): %s" % (proc.returncode, proc.stderr[-2000:])
    return proc.stdout


def test_thousand_host_page_is_paged_and_filterable(big_report):
    page = big_report[0]["html"].as_uri()
    dom = browse(page)
    shown = visible_rows(dom)
    assert len(shown) == 100 and shown[0] == "n0001" and shown[-1] == "n0100"  # gpu hosts first, by name
    assert 'id="shown">1000 of 1000 rows<' in dom and 'id="page">page 1 of 10<' in dom
    dom = browse(page + "#q=n0437")
    assert visible_rows(dom) == ["n0437", "n0437-dpu"] and 'id="page">page 1 of 1<' in dom
    dom = browse(page + "#status=failed")
    assert visible_rows(dom) == ["n0437-dpu"]
    dom = browse(page + "#page=10")
    shown = visible_rows(dom)
    assert len(shown) == 100 and shown[-1] == "n0500-dpu" and 'id="page">page 10 of 10<' in dom
