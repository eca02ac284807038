"""bluefleet report: fleet matrix, version matrix, drift, redaction, the three files, exit codes."""

from __future__ import annotations

import json
import re

import pytest
from report_fixture import ETHTOOL_I, HOSTS, PASSWORD, PSK, make_run_folder

from bluefleet import report
from bluefleet.report_model import REDACTED, build_model, ethtool_driver, redact, version_matrix


@pytest.fixture
def runs(tmp_path):
    return tmp_path / "runs"


def test_matrix_has_every_host_and_check_grouped_by_stage(runs):
    model = build_model(make_run_folder(runs / "20261202T100000Z"))
    names = [h["name"] for h in model["hosts"]]
    assert names == ["node1", "node2", "node1-dpu", "node2-dpu", "(fleet)"]  # GPU hosts, DPUs, then the fleet row
    assert [c["id"] for c in model["checks"]] == [
        "playbook", "test_mst_shows_card", "test_pair_sees_one_card", "test_selection_has_hosts",
        "test_roce_trust[pf0hpf]"]
    assert [c["stage"] for c in model["checks"]] == ["playbook", "preflight", "preflight", "preflight", "fabric"]
    fabric = next(c for c in model["checks"] if c["stage"] == "fabric")
    assert fabric["fix"].startswith("playbooks/fabric.yml")
    # a pair check is a cell on both of its rows; a host-less check is on the fleet row
    assert model["cells"]["node1"]["test_pair_sees_one_card"]["status"] == "passed"
    assert model["cells"]["node1-dpu"]["test_pair_sees_one_card"]["status"] == "passed"
    assert "test_pair_sees_one_card" not in model["cells"]["node2"]
    assert model["cells"]["(fleet)"]["test_selection_has_hosts"]["status"] == "passed"
    assert model["cells"]["node1"]["playbook"]["status"] == "changed"
    assert model["cells"]["node2"]["playbook"]["status"] == "passed"
    assert "localhost" not in model["cells"]  # stage 7's controller play is not a fleet row
    assert model["totals"] == {"passed": 8}  # checks: 4 mst + 2 roce + 1 pair (on two rows) + 1 fleet


def test_failing_cell_carries_message_and_commands(runs):
    model = build_model(make_run_folder(runs / "r1", failing="node2-dpu"))
    cell = model["cells"]["node2-dpu"]["test_roce_trust[pf0hpf]"]
    assert cell["status"] == "failed"
    assert "pf0hpf trust is pcp, expected dscp" in cell["message"]
    assert [c["command"] for c in cell["commands"]] == ["mlnx_qos -i pf0hpf", "swanctl --list-conns"]
    assert model["cells"]["node1-dpu"]["test_roce_trust[pf0hpf]"]["status"] == "passed"
    assert model["totals"] == {"passed": 7, "failed": 1}


def test_unreachable_host_is_its_own_status(runs):
    model = build_model(make_run_folder(runs / "r1", unreachable="node2"))
    cell = model["cells"]["node2"]["playbook"]
    assert cell["status"] == "unreachable"
    assert "Failed to connect" in cell["message"]


def test_ethtool_driver_reads_the_corpus_layout():
    fields = ethtool_driver(ETHTOOL_I)
    assert fields["driver"] == "mlx5_core"
    assert fields["version"] == "5.14.0-427.50.1.el9_4.aarch64"
    assert fields["expansion-rom-version"] == ""
    assert ethtool_driver(None) == {}


def test_version_matrix_values_and_no_mismatch_when_uniform(runs):
    facts = json.loads((make_run_folder(runs / "r1") / "facts.json").read_text())
    matrix = version_matrix(facts)
    node1 = matrix["rows"]["node1"]
    assert node1["host driver (mlx5_core / DOCA-OFED)"]["value"] == "5.14.0-427.50.1.el9_4.aarch64"
    assert node1["GPU driver"]["value"] == "550.127.08"
    assert node1["nvidia-peermem"]["value"] == "1.1-0"
    assert node1["MFT"]["value"] == "4.30.0-139"
    assert "BFB (DPU OS)" not in node1 and "GPU driver" not in matrix["rows"]["node1-dpu"]
    assert matrix["rows"]["node1-dpu"]["DOCA on Arm"]["value"] == "2.9.1"
    assert not any(c["mismatch"] for row in matrix["rows"].values() for c in row.values())


def test_version_mismatch_within_a_group_and_pending_firmware(runs):
    folder = make_run_folder(runs / "r1", gpu_driver={"node2": "535.129.03"}, running={"node1-dpu": "32.41.1000"})
    matrix = version_matrix(json.loads((folder / "facts.json").read_text()))
    rows = matrix["rows"]
    # two GPU hosts disagree: both values differ from "the most common" only when one is the odd one out;
    # with a tie the first-counted value wins, so exactly one of the two is flagged
    flagged = [h for h in ("node1", "node2") if rows[h]["GPU driver"]["mismatch"]]
    assert len(flagged) == 1
    assert "runs" in rows[flagged[0]]["GPU driver"]["why"]
    dpu = rows["node1-dpu"]
    assert dpu["NIC firmware flashed"]["mismatch"] and dpu["NIC firmware running"]["mismatch"]
    assert "reset is pending" in dpu["NIC firmware running"]["why"]
    assert not rows["node2-dpu"]["NIC firmware flashed"]["mismatch"] or "runs" in rows["node2-dpu"][
        "NIC firmware running"]["why"]


def test_drift_against_the_newest_earlier_run(runs):
    before = make_run_folder(runs / "20261202T100000Z")
    assert report.main([str(before)]) == 0
    older = make_run_folder(runs / "20261201T100000Z", failing="node1-dpu")
    assert report.main([str(older)]) == 0
    after = make_run_folder(runs / "20261202T110000Z", failing="node2-dpu", running={"node2-dpu": "32.41.1000"})
    paths = report.write_report(after)
    model = json.loads(paths["json"].read_text())
    assert model["drift"]["previous"] == str(before)  # the newest earlier one, not the oldest
    assert model["drift"]["cells"] == [{"host": "node2-dpu", "check": "test_roce_trust[pf0hpf]",
                                        "before": "passed", "after": "failed"}]
    assert model["drift"]["versions"] == [{"host": "node2-dpu", "column": "NIC firmware running",
                                           "before": "32.43.1014", "after": "32.41.1000"}]
    md = paths["md"].read_text()
    assert "node2-dpu `test_roce_trust[pf0hpf]`: passed -> failed" in md
    html = paths["html"].read_text()
    assert 'id="drift-list"' in html and "32.41.1000" in html


def test_no_previous_run_means_no_drift(runs):
    model = build_model(make_run_folder(runs / "only"))
    assert model["drift"] == {"previous": None, "cells": [], "versions": [], "hosts_added": [], "hosts_removed": []}


def test_hosts_added_and_removed(runs, tmp_path):
    first = make_run_folder(runs / "a")
    report.write_report(first)
    second = make_run_folder(runs / "b")
    facts = json.loads((second / "facts.json").read_text())
    evidence = json.loads((second / "evidence.json").read_text())
    summary = json.loads((second / "summary.json").read_text())
    for data in (facts, summary["stats"], summary["hosts"], evidence["hosts"]):
        data.pop("node2", None)
    evidence["checks"] = [c for c in evidence["checks"] if "node2" not in c["hosts"]]
    facts["node3"] = {"groups": ["gpu_hosts"], **{k: v for k, v in facts["node1"].items() if k != "groups"}}
    summary["hosts"]["node3"] = ["gpu_hosts"]
    for name, data in (("facts.json", facts), ("evidence.json", evidence), ("summary.json", summary)):
        (second / name).write_text(json.dumps(data))
    model = build_model(second)
    assert model["drift"]["hosts_added"] == ["node3"]
    assert model["drift"]["hosts_removed"] == ["node2"]


def test_redact_by_name_text_and_no_log():
    assert redact({"ipsec_psk": "x", "admin_password": "y", "bfb_hash": "z", "name": "n"}) == {
        "ipsec_psk": REDACTED, "admin_password": REDACTED, "bfb_hash": REDACTED, "name": "n"}
    assert redact("conn a\n  secret = abc\n  psk: 'q w'\n") == "conn a\n  secret = %s\n  psk: %s\n" % (
        REDACTED, REDACTED)
    censored = {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified "
                            "for this result", "changed": True}
    assert redact({"res": censored})["res"] == {"censored": redact(censored)["censored"]}
    assert redact({"res": {"_ansible_no_log": True, "stdout": PSK}})["res"].get("stdout") is None
    assert redact({"empty_password": ""}) == {"empty_password": ""}  # nothing to hide, shown as empty


def test_no_secret_reaches_any_report_file(runs):
    paths = report.write_report(make_run_folder(runs / "r1", failing="node1-dpu"))
    for path in paths.values():
        text = path.read_text()
        assert PSK not in text, path
        assert PASSWORD not in text, path
        assert REDACTED in text, path


def test_html_is_self_contained_and_escapes_output(runs):
    paths = report.write_report(make_run_folder(runs / "r1", failing="node1-dpu"))
    html = paths["html"].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page must not load anything"
    assert html.count("<script") == 2 and html.count("</script>") == 2  # command output cannot close it
    for host in HOSTS:
        assert 'data-host="%s"' % host in html
    for check in ("test_mst_shows_card", "test_roce_trust[pf0hpf]", "test_pair_sees_one_card"):
        assert 'data-check="%s"' % check in html
    data = json.loads(re.search(r'<script type="application/json" id="evidence-data">(.*?)</script>', html,
                                re.S).group(1))
    cell = data["node1-dpu|test_roce_trust[pf0hpf]"]
    assert cell["status"] == "failed"
    assert cell["commands"][0]["command"] == "mlnx_qos -i pf0hpf"
    assert "Priority trust state: pcp" in cell["commands"][0]["stdout"]
    assert 'class="cell s-failed"' in html
    assert "<b>x</b>" not in html.replace(r"<\/script><b>x<\/b>", "")  # output is data, never markup


def test_markdown_summary_for_ci(runs):
    paths = report.write_report(make_run_folder(runs / "r1", failing="node2-dpu", gpu_driver={"node2": "1"}))
    md = paths["md"].read_text()
    assert md.startswith("## bluefleet run: exit code 1")
    assert "| node2-dpu | test_roce_trust[pf0hpf] | failed |" in md
    assert "### Version mismatches" in md and "GPU driver" in md
    assert str(paths["html"]) in md


def test_main_exit_codes_and_output(runs, tmp_path, capsys):
    folder = make_run_folder(runs / "r1")
    assert report.main([str(folder), "--markdown"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == str(folder / "report.html")
    assert any(line.startswith("## bluefleet run") for line in out)
    assert report.main([str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert report.main([str(tmp_path / "empty")]) == 2
    assert "neither summary.json nor evidence.json" in capsys.readouterr().err
    assert report.main([str(folder), "--previous", str(tmp_path / "empty")]) == 2
    assert "holds no report.json" in capsys.readouterr().err
    (folder / "facts.json").write_text("{not json")
    assert report.main([str(folder)]) == 2
    assert "cannot read the facts" in capsys.readouterr().err
    assert report.main([]) == 2


def test_suite_that_stopped_early_is_said(runs):
    folder = make_run_folder(runs / "r1")
    (folder / "evidence.json").unlink()
    summary = json.loads((folder / "summary.json").read_text())
    summary.update(validate_rc=4, exit_code=1)
    (folder / "summary.json").write_text(json.dumps(summary))
    paths = report.write_report(folder)
    assert "stopped before its checks (rc=4): see validate.log" in paths["html"].read_text()
    assert "stopped before its checks, rc=4" in paths["md"].read_text()
    assert list(json.loads(paths["json"].read_text())["cells"]["node1"]) == ["playbook"]  # no check cells


def test_not_applicable_is_counted_and_shown_as_na_in_every_format(runs):
    paths = report.write_report(make_run_folder(runs / "r1", not_applicable="node2-dpu"))
    model = json.loads(paths["json"].read_text())
    cell = model["cells"]["node2-dpu"]["test_hbn_routes_present"]
    assert cell["status"] == "not_applicable" and "does not ask for DOCA HBN" in cell["message"]
    assert model["cells"]["node1-dpu"]["test_hbn_routes_present"]["status"] == "passed"
    assert model["totals"] == {"passed": 9, "not_applicable": 1}  # N/A is never counted as passed
    assert model["not_applicable"] == [{"host": "node2-dpu", "check": "test_hbn_routes_present",
                                        "reason": "node2-dpu does not ask for DOCA HBN (doca_services_list)"}]
    html = paths["html"].read_text()
    assert re.search(r'<td class="cell s-not_applicable" data-key="node2-dpu\|test_hbn_routes_present"[^>]*>'
                     r'<button type="button" title="N/A: node2-dpu does not ask for DOCA HBN[^"]*">N/A</button>', html)
    assert ".s-not_applicable{background:#d9d9d9" in html  # grey
    assert '<span class="s-not_applicable">1 N/A</span>' in html
    md = paths["md"].read_text()
    assert "checks: 1 N/A, 9 passed" in md
    assert "| node2-dpu | test_hbn_routes_present | node2-dpu does not ask for DOCA HBN (doca_services_list) |" in md


def test_older_evidence_with_a_not_applicable_skip_is_na(runs):
    folder = make_run_folder(runs / "r1", not_applicable="node1-dpu")
    evidence = json.loads((folder / "evidence.json").read_text())
    for check in evidence["checks"]:
        if check["outcome"] == "not_applicable":
            check["outcome"] = "skipped"
    (folder / "evidence.json").write_text(json.dumps(evidence))
    assert build_model(folder)["cells"]["node1-dpu"]["test_hbn_routes_present"]["status"] == "not_applicable"


def test_version_matrix_shows_the_bmc_components_of_dpus(runs):
    folder = make_run_folder(runs / "r1")
    facts = json.loads((folder / "facts.json").read_text())
    erot = {"Bluefield_FW_ERoT": "00.02.0182.0000_n02"}
    facts["node1-dpu"]["bmc_info"] = {"bmc_version": "BF-24.10-33", "firmware": erot}
    facts["node2-dpu"]["bmc_info"] = {"bmc_version": "BF-24.10-10", "firmware": erot}
    rows = version_matrix(facts)["rows"]
    assert rows["node1-dpu"]["BMC firmware"]["value"] == "BF-24.10-33"
    assert rows["node1-dpu"]["ERoT firmware"]["value"] == "00.02.0182.0000_n02"
    assert "BMC firmware" not in rows["node1"]  # a GPU host has no BlueField BMC column
    assert [h for h in ("node1-dpu", "node2-dpu") if rows[h]["BMC firmware"]["mismatch"]]  # the two DPUs disagree
    assert not rows["node1-dpu"]["ERoT firmware"]["mismatch"]


def test_counts_agree_with_junit_a_pair_check_counts_once(runs):
    """issue 16: the summary said 193 checks where JUnit said 181: each pair check was counted on both rows."""
    import xml.etree.ElementTree as ET

    folder = make_run_folder(runs / "r1", failing="node2-dpu")
    evidence = json.loads((folder / "evidence.json").read_text())
    pair = next(r for r in evidence["checks"] if len(r["hosts"]) == 2)
    pair["outcome"], pair["message"] = "failed", "node1-dpu is not paired with node1"
    (folder / "evidence.json").write_text(json.dumps(evidence))
    # the JUnit file pytest would write for this evidence: one testcase per node id
    suite = ET.Element("testsuite")
    for record in evidence["checks"]:
        case = ET.SubElement(suite, "testcase", name=record["nodeid"])
        if record["outcome"] == "failed":
            ET.SubElement(case, "failure", message=record["message"])
    junit = {"tests": len(suite), "failures": len(suite.findall("testcase/failure"))}
    paths = report.write_report(folder)
    model = json.loads(paths["json"].read_text())
    assert sum(model["totals"].values()) == junit["tests"] == 8
    assert model["totals"]["failed"] == junit["failures"] == 2
    # the pair check is still a failed cell on both of its rows
    assert model["cells"]["node1"]["test_pair_sees_one_card"]["status"] == "failed"
    assert model["cells"]["node1-dpu"]["test_pair_sees_one_card"]["status"] == "failed"
    assert "checks: 2 failed, 6 passed" in paths["md"].read_text()
    assert '<span class="s-failed">2 failed</span><span class="s-passed">6 passed</span>' in paths["html"].read_text()
