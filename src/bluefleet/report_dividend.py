"""The report's "offload dividend" section: host CPU per GB through the DPU and through the host itself.

``playbooks/fabric_benchmark.yml`` (tag ``dividend``) runs ``bluefleet.dpu.offload_dividend`` on both ends of
each pair of GPU hosts, once per path. Their results are in the run's ansible-runner events
(``runner/artifacts/*/job_events/*.json``); a result is recognised by its keys (``measurable``, ``pair``,
``path``, ``role``), so the receiving end's result, which reaches the events through ``async_status``,
counts too. Per pair and path the two ends' host CPU-seconds are added (the arithmetic is the collection's,
``domain/_dividend``); the fleet total sums the pairs measured on both paths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bluefleet._collection import ensure_importable

KEYS = ("measurable", "pair", "path", "role")


def _results(run_dir: Path) -> list[dict]:
    found = []
    for path in sorted(run_dir.glob("runner/artifacts/*/job_events/*.json")):
        try:
            event = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if event.get("event") != "runner_on_ok":
            continue
        res = (event.get("event_data") or {}).get("res") or {}
        if all(k in res for k in KEYS) and res.get("pair"):
            found.append(dict(res, host=(event.get("event_data") or {}).get("host")))
    return found


def dividend_section(run_dir: Path) -> dict[str, Any] | None:
    """``{"pairs": [...], "fleet": {...} or None}``, or None when the run measured no dividend."""
    results = _results(Path(run_dir))
    if not results:
        return None
    ensure_importable()
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _dividend

    by_pair: dict[str, dict] = {}
    for res in results:
        pair = by_pair.setdefault(res["pair"], {"pair": res["pair"], "dpu": None, "host": None, "reasons": [],
                                                "measured_at": None, "source": None, "ends": {}})
        if not res["measurable"]:
            pair["reasons"].append("%s: %s" % (res["host"], res.get("reason")))
            continue
        pair["ends"].setdefault(res["path"], {})[res["role"]] = res
    for pair in by_pair.values():
        for path, ends in pair.pop("ends").items():
            client, server = ends.get("client"), ends.get("server")
            if not client or not server:
                pair["reasons"].append("%s path: only the %s end reported" % (path, "sending" if client else
                                                                              "receiving"))
                continue
            pair[path] = _dividend.path_figures(client["cpu"]["host_cpu_s"], server["cpu"]["host_cpu_s"],
                                                client["transfer"]["bytes"], client["transfer"]["seconds"])
            pair[path]["source"] = client["cpu"]["source"]
            pair["measured_at"] = pair["measured_at"] or client.get("measured_at")
        pair["ratio"] = _dividend.ratio(pair["dpu"], pair["host"]) if pair["dpu"] and pair["host"] else None
        if pair["dpu"] is None and not pair["reasons"]:
            pair["reasons"].append("not measured")
    pairs = sorted(by_pair.values(), key=lambda p: p["pair"])
    return {"pairs": pairs, "fleet": _dividend.fleet_total(pairs)}


def _fig(path: dict | None, key: str) -> str:
    return "n/a" if not path or path.get(key) is None else "%g" % path[key]


def markdown(section: dict | None) -> list[str]:
    if not section:
        return []
    lines = ["### Offload dividend (host CPU per GB, both ends of each pair)", "",
             "| pair | DPU path CPU-s/GB | DPU path Gb/s | host path CPU-s/GB | host path Gb/s | ratio | measured |",
             "|---|---|---|---|---|---|---|"]
    for p in section["pairs"]:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            p["pair"], _fig(p["dpu"], "cpu_s_per_gb"), _fig(p["dpu"], "throughput_gbps"),
            _fig(p["host"], "cpu_s_per_gb"), _fig(p["host"], "throughput_gbps"),
            "n/a" if p["ratio"] is None else "%gx" % p["ratio"],
            p["measured_at"] or "not measured: " + "; ".join(p["reasons"])))
    fleet = section["fleet"]
    if fleet:
        lines += ["", "fleet (%d pair(s)): %g CPU-s/GB through the DPU, %g through the host, ratio %s, %g host "
                  "CPU-s saved per GB" % (fleet["pairs"], fleet["dpu"]["cpu_s_per_gb"], fleet["host"]["cpu_s_per_gb"],
                                          "n/a" if fleet["ratio"] is None else "%gx" % fleet["ratio"],
                                          fleet["saved_cpu_s_per_gb"])]
    return lines + [""]


def html(section: dict | None, escape) -> str:
    if not section:
        return ""
    rows = []
    for p in section["pairs"]:
        rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            escape(p["pair"]), _fig(p["dpu"], "cpu_s_per_gb"), _fig(p["dpu"], "throughput_gbps"),
            _fig(p["host"], "cpu_s_per_gb"), _fig(p["host"], "throughput_gbps"),
            "n/a" if p["ratio"] is None else "%gx" % p["ratio"],
            escape(p["measured_at"] or "not measured: " + "; ".join(p["reasons"]))))
    fleet = section["fleet"]
    total = ("<p id=\"dividend-fleet\">fleet (%d pair(s)): %g CPU-s/GB through the DPU, %g through the host, "
             "ratio %s</p>" % (fleet["pairs"], fleet["dpu"]["cpu_s_per_gb"], fleet["host"]["cpu_s_per_gb"],
                               "n/a" if fleet["ratio"] is None else "%gx" % fleet["ratio"]) if fleet else "")
    return ('<h2 id="dividend">Offload dividend</h2><table id="dividend-pairs"><thead><tr><th>pair</th>'
            "<th>DPU path CPU-s/GB</th><th>DPU path Gb/s</th><th>host path CPU-s/GB</th><th>host path Gb/s</th>"
            "<th>ratio</th><th>measured</th></tr></thead><tbody>%s</tbody></table>%s" % ("".join(rows), total))
