"""The dpusim command line, state errors and locking, faults, time scale, capture and replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bluefleet import capture
from dpusim import clock, state, tools

PY = sys.executable


def sh(script: str, cwd: Path, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    full = dict(os.environ, DPUSIM_TIME_SCALE="0", **(env or {}))
    full.pop("DPUSIM_ROOT", None)
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
                          check=False)


def dpusim_cmd() -> str:
    return "%s -m dpusim.cli" % PY


def test_done_criteria_end_to_end_in_a_shell(tmp_path):
    """The issue's "done when": env, init, tools in the real layout, set -> Next Boot -> reset, foreign PSID."""
    script = f"""
set -e
eval "$({dpusim_cmd()} env --root R)"
test "$DPUSIM_ROOT" = "$PWD/R"
{dpusim_cmd()} init --profile bluefield3 --role dpu
mst status -v
mlxconfig -d /dev/mst/mt41692_pciconf0 -y set SRIOV_EN=0
mlxconfig -d 03:00.0 -e q SRIOV_EN
mlxfwreset -d 03:00.0 -l 3 -y reset || echo "reset rc=$?"
mlxconfig -d 03:00.0 -e q SRIOV_EN
{dpusim_cmd()} make-image --kind nic-fw --profile bluefield3 --version 32.43.1014 --psid MT_0000000884 -o f.bin
flint -d 03:00.0 -i f.bin -y burn || echo "burn rc=$?"
"""
    res = sh(script, tmp_path)
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    assert "BlueField3(rev:1)       /dev/mst/mt41692_pciconf0     03:00.0   mlx5_0" in out
    setline, first, second = [x for x in out.splitlines() if x.strip().lstrip("*").strip().startswith("SRIOV_EN")]
    assert setline.split()[-2:] == ["True(1)", "False(0)"]
    assert first.split()[-3:] == ["True(1)", "True(1)", "False(0)"]
    assert second.split()[-3:] == ["True(1)", "False(0)", "False(0)"]
    # run in the BlueField's own Arm OS, level 3 restarts that OS: the session that ran it ends (ssh's exit status)
    assert "reset rc=255" in out and "Connection to R closed by remote host." in res.stderr
    assert "-E- PSID mismatch. The PSID on flash (MT_0000000998) differs from the PSID in the given image " \
           "(MT_0000000884).\nburn rc=1" in out
    assert (tmp_path / "R" / "bin" / "mlxconfig").stat().st_mode & 0o111
    assert (tmp_path / "R" / "bin" / "mlxconfig").read_text().startswith("#!" + sys.executable + "\n")


def test_env_writes_a_front_end_per_tool(tmp_path):
    res = sh(f"{dpusim_cmd()} env --root R", tmp_path)
    assert res.returncode == 0
    assert res.stdout.splitlines() == ["export PATH=%s:$PATH" % (tmp_path / "R" / "bin"),
                                       "export DPUSIM_ROOT=%s" % (tmp_path / "R")]
    written = sorted(p.name for p in (tmp_path / "R" / "bin").iterdir() if not p.name.startswith("."))
    assert written == sorted(tools.names())
    for name in ("mst", "mlxconfig", "mstconfig", "flint", "mstflint", "mlxfwmanager", "mlxfwreset", "mlxprivhost",
                 "bfb-install", "bfver", "bfvcheck", "mlxbf-bootctl", "mlxup"):
        assert name in written


def test_clear_errors_without_root_or_init(tmp_path):
    res = sh(f"{dpusim_cmd()} state", tmp_path)
    assert res.returncode == 1 and "DPUSIM_ROOT is not set" in res.stderr and "dpusim env" in res.stderr
    res = sh(f"DPUSIM_ROOT={tmp_path}/empty {PY} -m dpusim.tool mlxconfig q", tmp_path)
    assert res.returncode == 1 and "not initialised" in res.stderr and "dpusim init" in res.stderr
    res = sh(f"{dpusim_cmd()} --root X init --profile bluefield9", tmp_path)
    assert res.returncode == 2 and "invalid choice" in res.stderr
    res = sh(f"{dpusim_cmd()} --root X init --profile connectx7 --role dpu", tmp_path)
    assert res.returncode == 1 and "not a BlueField" in res.stderr
    res = sh(f"{dpusim_cmd()} init --root Y --profile connectx7 && {dpusim_cmd()} state --root Y | head -c 1", tmp_path)
    assert res.returncode == 0 and res.stdout.endswith("{") and res.stderr == ""


def test_state_json_and_several_cards(twin):
    t = twin("bluefield3", "connectx7")
    rc, out, _ = t.cli("state")
    data = json.loads(out)
    assert rc == 0 and [c["profile"] for c in data["cards"]] == ["bluefield3", "connectx7"]
    _, out, _ = t.run("mst", "status", "-v")
    assert "/dev/mst/mt41692_pciconf0 " in out and "/dev/mst/mt4129_pciconf1 " in out
    assert "net-ens2f0np0" in out and "mlx5_2" in out
    _, out, _ = t.run("mlxfwmanager", "--query")
    assert "Device #1:" in out and "Device #2:" in out


def _bump(root: str, n: int) -> None:
    for _ in range(n):
        with state.open_node(root) as node:
            node.runtime["count"] = node.runtime.get("count", 0) + 1
            with_card = node.cards[0].data
            with_card["bumps"] = with_card.get("bumps", 0) + 1


def test_concurrent_writers_lose_nothing(twin, tmp_path):
    pair = tmp_path / "pair"
    host = twin("bluefield3", card_dir=pair, name="h")
    dpu = twin("bluefield3", role="dpu", card_dir=pair, name="d")
    code = "import sys; from tests.unit.dpusim.test_cli_faults_replay import _bump; _bump(sys.argv[1], 25)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[3]),
                                                        str(Path(__file__).resolve().parents[3] / "src")]))
    procs = [subprocess.Popen([PY, "-c", code, str(r)], env=env) for r in (host.root, dpu.root, host.root, dpu.root)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    assert host.node().runtime["count"] == 50 and dpu.node().runtime["count"] == 50
    assert host.card().data["bumps"] == 100, "both roots write one card.json"
    assert not [p for p in pair.iterdir() if p.name.startswith(".card.json.")], "no temporary files left"


def test_fault_garbage_and_hang_apply_by_tool_name(twin):
    t = twin("bluefield3")
    t.cli("fault", "set", "garbage_output", "--tool", "flint")
    rc, out, _ = t.run("flint", "-d", "e2:00.0", "q")
    assert rc == 0 and "FW Version" not in out and "0xDEADBEEF" in out
    assert "FW Version" in t.run("mstflint", "-d", "e2:00.0", "q")[1], "only the named tool is affected"
    assert "Reset-levels:" in t.run("mlxfwreset", "-d", "e2:00.0", "q")[1], "other tools answer normally"
    t.cli("fault", "set", "tool_hang", "--tool", "mst", "--seconds", "0.3")
    start = time.monotonic()
    rc, out, _ = t.run("mst", "status")
    assert rc == 124 and out == "" and time.monotonic() - start >= 0.3
    rc, out, _ = t.cli("fault", "list")
    assert "on  garbage_output" in out and "on  tool_hang" in out and "off device_missing" in out
    t.cli("fault", "clear")
    assert "FW Version" in t.run("flint", "-d", "e2:00.0", "q")[1]
    assert t.cli("fault", "set", "no_such_fault")[0] == 1


def test_fault_device_missing(twin):
    t = twin("connectx7")
    t.cli("fault", "set", "device_missing")
    _, out, _ = t.run("mst", "status", "-v")
    assert "ConnectX7" not in out and out.startswith("MST modules:")
    rc, out, _ = t.run("mlxconfig", "-d", "37:00.0", "q")
    assert rc == 1 and "-E- Failed to open device: 37:00.0" in out
    rc, out, _ = t.run("mlxfwmanager", "--query")
    assert rc == 1 and "No devices found" in out


def test_time_scale(monkeypatch):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0.5")
    assert clock.duration("bfb_install") == 300.0
    monkeypatch.delenv("DPUSIM_TIME_SCALE")
    assert clock.scale() == clock.DEFAULT_SCALE
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "fast")
    with pytest.raises(ValueError, match="DPUSIM_TIME_SCALE='fast' is not a number"):
        clock.scale()


def test_bfb_install_takes_scaled_time(twin, tmp_path, monkeypatch):
    from dpusim import images

    host = twin("bluefield3")
    bfb = images.make_image("bfb", "bluefield3", "2.9.2-31_25.02", tmp_path / "b.bfb")
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0.001")
    start = time.monotonic()
    assert host.run("bfb-install", "--rshim", "rshim0", "--bfb", str(bfb))[0] == 0
    took = time.monotonic() - start
    push = images.BUNDLE_SIZE / (host.card().profile["rshim_push_mib_s"] * (1 << 20))
    assert 122 < push < 123, "1.41GiB at the BlueField-3 rate: 0:02:02 as in the corpus capture"
    expected = (push + clock.DURATIONS["bfb_install"] * 31 / 40) * 0.001
    assert expected * 0.9 <= took < expected + 2.0


def test_capture_then_replay(twin, tmp_path):
    """bluefleet capture against the twin's tools, then replay answers identically and refuses the rest."""
    t = twin("bluefield3", role="dpu")
    res = sh(f"{dpusim_cmd()} env --root {t.root} >/dev/null", tmp_path)
    assert res.returncode == 0
    bindir = t.root / "bin"
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), DPUSIM_ROOT=str(t.root))
    old = dict(os.environ)
    try:
        os.environ.update(env)
        manifest = capture.run_capture(tmp_path / "cap", capture.command_list(["03:00.0"], []), timeout=30)
    finally:
        os.environ.clear()
        os.environ.update(old)
    argvs = [c["argv"] for c in manifest["commands"]]
    assert ["mst", "status", "-v"] in argvs and ["mlxconfig", "-d", "03:00.0", "-e", "q"] in argvs
    assert ["bfver"] in argvs
    live = {tuple(a): t.run(*a) for a in argvs if a[0] in tools.names()}
    replay_root = tmp_path / "replayed"
    rc, out, err = t.cli("--root", str(replay_root), "replay", str(tmp_path / "cap"))
    assert rc == 0, err
    t.root = replay_root
    for argv, (rc, out, _err) in live.items():
        assert t.run(*argv)[:2] == (rc, out), argv
    rc, out, err = t.run("mlxconfig", "-d", "03:00.0", "-y", "set", "SRIOV_EN=0")
    assert rc == 3 and out == "" and "'mlxconfig -d 03:00.0 -y set SRIOV_EN=0' is not in the capture" in err
    assert t.cli("replay", "--off")[0] == 0
    rc, _, err = t.run("mst", "status")
    assert rc == 1 and "not initialised" in err


def test_replay_rejects_a_directory_without_manifest(twin, tmp_path):
    t = twin("bluefield3")
    rc, _, err = t.cli("replay", str(tmp_path))
    assert rc == 1 and "has no manifest.json" in err and "bluefleet capture" in err


def test_capture_cli_reports_nothing_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert capture.main([str(tmp_path / "c"), "--device", "00:00.0", "--netdev", "eth9"]) == 1
    data = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert data["commands"] == [] and {"argv": ["mst", "status", "-v"], "reason": "not installed"} in data["skipped"]


def test_passthrough_skips_the_twin_bin(tmp_path, monkeypatch):
    from dpusim.tools import _common as tool

    own = tmp_path / "R" / "bin"
    own.mkdir(parents=True)
    (own / "true").write_text("#!/bin/sh\nexit 5\n")
    (own / "true").chmod(0o755)
    monkeypatch.setenv("DPUSIM_ROOT", str(tmp_path / "R"))
    monkeypatch.setenv("PATH", "%s:%s" % (own, os.environ["PATH"]))
    found = tool.real_binary("true")
    assert found is not None and Path(found).parent != own
    assert tool.passthrough("true", []) == 0
    assert tool.passthrough("no-such-binary-xyz", []) == 127
