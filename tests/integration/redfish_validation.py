"""Run DMTF's redfish-service-validator against a Redfish service and read its failures.

``capture_server(folder)`` serves one capture of ../shared/corpus/redfish (GET only, Basic auth
accepted, the captured bodies as they are, 404 with the capture's own 404 body elsewhere): the
reference the twin is compared with. ``run_service_validator(url, logdir, csdl)`` runs the validator
offline (``--skipschema`` with the CSDL the BMC serves) and returns ``failures(log)``: the set of
``(resource, property, error kind)`` of every FAIL line, so that two reports can be compared.
"""

from __future__ import annotations

import csv
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

_VALIDATING = re.compile(r" - INFO - Validating (\S+?)\.\.\.$")
_FAIL = re.compile(r" - ERROR - FAIL - (?:(/\S*) \(.*?\): )?([A-Za-z ]+ Error): (.*)$")


def capture_uris(corpus: Path, folder: str) -> dict[str, Path]:
    out = {}
    with open(corpus / "PROVENANCE.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["file"].startswith(folder + "/") and row["file"].endswith(".json"):
                out[row["uri"].rstrip("/")] = corpus / row["file"]
    return out


def capture_server(corpus: Path, folder: str, not_found_body: dict) -> http.server.ThreadingHTTPServer:
    uris = capture_uris(corpus, folder)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_GET(self):
            path = self.path.split("?", 1)[0].rstrip("/")
            file = uris.get(path)
            if file is not None:
                body = file.read_bytes()
                code = 404 if b'"error"' in body[:20] and "ResourceNotFound" in body.decode(errors="replace") else 200
            else:
                code, body = 404, json.dumps(not_found_body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("OData-Version", "4.0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def validator_command() -> list[str] | None:
    exe = shutil.which("rf_service_validator") or str(Path(sys.executable).with_name("rf_service_validator"))
    return [exe] if Path(exe).exists() else None


def run_service_validator(url: str, logdir: Path, csdl: Path, user: str, password: str, timeout: int = 900
                          ) -> Path:
    cmd = validator_command()
    assert cmd, "rf_service_validator is not installed (pip install -e .[dev])"
    logdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd + ["--ip", url, "-u", user, "-p", password, "--authtype", "Basic",
                          "--schema_directory", str(csdl), "--skipschema", "--logdir", str(logdir)],
                   check=False, capture_output=True, timeout=timeout)
    logs = sorted(logdir.rglob("RedfishServiceValidatorDebug_*.log"))
    assert logs, "the validator wrote no debug log under %s" % logdir
    return logs[-1]


def failures(log: Path) -> set[tuple[str, str, str]]:
    found = set()
    resource = ""
    for line in log.read_text(errors="replace").splitlines():
        m = _VALIDATING.search(line)
        if m:
            resource = m.group(1).rstrip("/")
            continue
        m = _FAIL.search(line)
        if m:
            prop, kind, text = m.group(1) or "", m.group(2), m.group(3)
            # The message text carries values (dates, ids) that differ between any two BMCs: keep its
            # first sentence's wording without quoted values.
            found.add((resource, prop, kind + ": " + re.sub(r"'[^']*'", "'*'", text.split(". ")[0])))
    return found
