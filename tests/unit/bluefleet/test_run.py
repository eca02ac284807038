"""bluefleet run without a playbook: usage errors (exit 2 before anything runs), the live view, stats."""

from __future__ import annotations

import io
import json

import pytest

from bluefleet import run
from bluefleet._collection import collection_root

ROOT = collection_root()

# Event shapes as ansible-runner 2.4 writes them to artifacts/<ident>/job_events/*.json (the keys the
# live view reads; captured from a run of playbooks/preflight.yml against the sim, values shortened).
PLAY = {"event": "playbook_on_play_start",
        "event_data": {"playbook": "playbooks/preflight.yml", "play": "Preflight and facts on GPU hosts and DPUs",
                       "play_pattern": "gpu_hosts:dpus", "name": "Preflight and facts on GPU hosts and DPUs"}}
TASK = {"event": "playbook_on_task_start",
        "event_data": {"play": "Preflight and facts on GPU hosts and DPUs", "task": "Read the cards",
                       "task_uuid": "02fc0000-0001-a71a-426f-000000000015",
                       "task_action": "bluefleet.dpu.dpu_info", "name": "Read the cards"}}


def result(kind: str, host: str, res: dict, **extra) -> dict:
    return {"event": kind, "event_data": {"play": PLAY["event_data"]["play"], "task": "Read the cards",
                                          "host": host, "remote_addr": host, "res": res, **extra}}


STATS = {"event": "playbook_on_stats",
         "event_data": {"changed": {"sim01": 1}, "dark": {"sim02": 1}, "failures": {"sim01-dpu": 1}, "ignored": {},
                        "ok": {"sim01": 8, "sim01-dpu": 5}, "processed": {"sim01": 1, "sim02": 1, "sim01-dpu": 1},
                        "rescued": {}, "skipped": {"sim01": 1}}}


def test_usage_errors_exit_2_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run.main([]) == 2
    assert "required: -i/--inventory" in capsys.readouterr().err
    assert run.main(["-i", str(tmp_path / "nope.yml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    h1:\n")
    assert run.main(["-i", str(inv), "--stage", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown stage 'bogus'" in err and "preflight" in err and "validate" in err
    assert run.main(["-i", str(inv), "--previous", str(tmp_path)]) == 2
    assert "holds no report.json" in capsys.readouterr().err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    assert run.main(["-i", str(inv), "--run-dir", str(busy)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert run.main(["-i", str(inv), "--stage", "validate", "--no-validate"]) == 2
    assert not (tmp_path / "runs").exists()  # nothing ran, no run folder


def test_inventory_that_selects_nothing_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    h1:\n")
    assert run.main(["-i", str(inv), "--limit", "no-such-host"]) == 2
    assert "selects no host" in capsys.readouterr().err
    bad = tmp_path / "bad.yml"
    bad.write_text("plugin: no.such.plugin\n")
    assert run.main(["-i", str(bad)]) == 2
    assert "inventory" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_help_exits_0(capsys):
    assert run.main(["--help"]) == 0
    assert "--stage" in capsys.readouterr().out


def test_stages_are_the_playbooks():
    stages = run.stages(ROOT)
    assert stages["site"] == "site.yml"
    assert stages["preflight"] == "playbooks/preflight.yml"
    assert stages["validate"] is None  # the suite alone
    assert all((ROOT / p).is_file() for p in stages.values() if p)


def test_inventory_hosts_reads_groups(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    gpu_hosts:\n      hosts:\n        n1:\n    dpus:\n      hosts:\n"
                   "        n1-dpu:\n")
    hosts = run.inventory_hosts(inv, run.ansible_env(ROOT), None)
    assert hosts == {"n1": ["gpu_hosts"], "n1-dpu": ["dpus"]}
    assert run.inventory_hosts(inv, run.ansible_env(ROOT), "n1-dpu") == {"n1-dpu": ["dpus"]}


def test_live_view_plain_lines_for_ci():
    out = io.StringIO()
    view = run.LiveView(out, hosts=3, stage="preflight", tty=False)
    for event in (PLAY, TASK, result("runner_on_ok", "sim01", {"changed": True}),
                  result("runner_on_failed", "sim01-dpu", {"msg": "mst failed; psk = abc123"}),
                  result("runner_on_failed", "sim01", {"msg": "ignored"}, ignore_errors=True),
                  result("runner_on_failed", "sim01", {"censored": "the output has been hidden"}),
                  result("runner_on_unreachable", "sim02", {"msg": "Failed to connect to the host via ssh"}),
                  TASK, STATS):  # the same task again: the next batch of a serial play
        assert view(event) is True  # keep every event in the artifacts
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("preflight play: Preflight and facts on GPU hosts and DPUs | "
                             "hosts 0/3 done, 0 changed, 0 failed, 0 unreachable")
    assert "FAILED sim01-dpu: Read the cards: mst failed; psk = ********" in lines[1]
    assert "abc123" not in out.getvalue()
    assert "FAILED sim01: Read the cards: (output hidden: no_log)" in lines[2]
    assert "UNREACHABLE sim02: Failed to connect" in lines[3]
    assert lines[4].endswith("preflight play: Preflight and facts on GPU hosts and DPUs (batch 2) | "
                             "hosts 3/3 done, 1 changed, 2 failed, 1 unreachable")
    assert lines[5].endswith("preflight finished | hosts 3/3 done, 1 changed, 2 failed, 1 unreachable")
    assert "\r" not in out.getvalue()
    assert view.failures["sim01-dpu"] == [{"task": "Read the cards", "msg": "mst failed; psk = ********"}]
    assert view.failures["sim02"][0]["msg"].startswith("Failed to connect")


def test_live_view_status_line_and_bar_on_a_tty():
    out = io.StringIO()
    view = run.LiveView(out, hosts=2, stage="site", tty=True)
    view(PLAY)
    view(TASK)
    view(result("runner_on_ok", "a", {"changed": False}))
    text = out.getvalue()
    last = text.split("\r")[-1]
    assert "[##########..........]" in last  # 1 of 2 hosts done with the current task
    assert "hosts 1/2 done, 0 changed, 0 failed, 0 unreachable" in last
    assert "Read the cards" in last


def test_per_host_stats_from_runner_stats():
    stats = run.per_host_stats(STATS["event_data"])
    assert stats["sim02"]["unreachable"] == 1 and stats["sim02"]["ok"] == 0
    assert stats["sim01-dpu"]["failures"] == 1
    assert stats["sim01"] == {"ok": 8, "changed": 1, "failures": 0, "unreachable": 0, "skipped": 1,
                              "rescued": 0, "ignored": 0}
    assert run.per_host_stats(None) == {}


def test_facts_play_is_valid_yaml_with_named_tasks():
    import yaml

    plays = yaml.safe_load(run.FACTS_PLAY)
    assert [t["name"] for t in plays[0]["tasks"]] == list(run.FACT_TASKS)
    assert json.dumps(plays)  # plain data


@pytest.mark.parametrize("argv", [["-i"], ["--stage", "preflight"]])
def test_argparse_errors_are_exit_2(argv, capsys):
    assert run.main(argv) == 2


def test_suite_files_are_redacted_in_place(tmp_path):
    (tmp_path / "evidence.json").write_text(json.dumps({"checks": [{"commands": [
        {"command": "swanctl --list-conns", "stdout": "secret = abc123\n", "stderr": ""}]}]}))
    (tmp_path / "junit.xml").write_text('<testsuite><testcase><failure message="psk: abc123">psk = abc123'
                                        "</failure></testcase></testsuite>")
    (tmp_path / "validate.log").write_text("E   password=abc123\n1 failed\n")
    run.redact_suite_files(tmp_path)
    for name in ("evidence.json", "junit.xml", "validate.log"):
        text = (tmp_path / name).read_text()
        assert "abc123" not in text and "********" in text, name
    assert "<testsuite><testcase><failure" in (tmp_path / "junit.xml").read_text()  # still XML


def test_live_view_counts_inventory_hosts_only():
    out = io.StringIO()
    view = run.LiveView(out, hosts=1, stage="site", tty=False, names={"a"})
    view(result("runner_on_ok", "a", {}))
    view(result("runner_on_skipped", "localhost", {}))  # stage 7 runs on the controller
    view(STATS)
    assert out.getvalue().splitlines()[-1].endswith("hosts 1/1 done, 0 changed, 0 failed, 0 unreachable")


def test_check_selection_reaches_the_suite(tmp_path, monkeypatch):
    """--checks (pytest -m) and -k pass a check selection to the conformance suite, e.g. -m 'not twin'."""
    inv = tmp_path / "hosts.yml"
    inv.write_text("all: {}\n")
    args = run.parse_args(["-i", str(inv), "--stage", "validate", "--checks", "not twin", "-k", "roce"], ROOT)
    assert (args.checks, args.check_names) == ("not twin", "roce")
    seen = {}

    class Popen:
        def __init__(self, cmd, **kwargs):
            seen["cmd"] = cmd

    monkeypatch.setattr(run.subprocess, "Popen", Popen)
    run.Suite(ROOT, tmp_path, inv, {}, None, io.StringIO(), None, (args.checks, args.check_names)).log.close()
    cmd = seen["cmd"]
    assert cmd[:3] == [run.sys.executable, "-m", "pytest"] and cmd[-4:] == ["-m", "not twin", "-k", "roce"]
    run.Suite(ROOT, tmp_path, inv, {}, None, io.StringIO()).log.close()
    assert seen["cmd"].count("-m") == 1 and "-k" not in seen["cmd"]  # no selection: every check
