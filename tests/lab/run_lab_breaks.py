"""Apply each break of ``LAB_BREAKS`` to a converged container lab, the way an operator would, and prove the checks.

    python tests/lab/run_lab_breaks.py --inventory INVENTORY [--only CHECK_ID ...]

For every row (tests/lab/lab_breaks.py): run the break's commands with ``docker exec`` in the first pair's GPU host
or DPU container, run only that row's checks of tests/validation against the whole inventory, and require that
exactly the expected checks fail (on that host), each message naming the host, what was found and the fix; then
undo the break and require that the same checks pass again. The undo also runs when a step fails, so the lab is
left as it was found. A row marked ``pending`` is listed as NOT PROVEN with its reason (not run) and is a problem:
the runner fails, so CI shows a break that is still to prove.
Exit status 0 when every row holds, 1 otherwise (each problem printed).

Molecule's verify runs it after the suite passed (molecule/default/verify.yml), in the lab CI already builds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lab_breaks import LAB_BREAKS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _inventory(path: str) -> tuple[dict, dict]:
    out = subprocess.run([str(BIN / "ansible-inventory"), "-i", path, "--list"], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    data = json.loads(out)
    return data, data.get("_meta", {}).get("hostvars", {})


def _pair(data: dict, hostvars: dict) -> dict:
    hosts = sorted(data.get("gpu_hosts", {}).get("hosts", []))
    dpus = sorted(data.get("dpus", {}).get("hosts", []))
    if not hosts or len(dpus) < 2:
        raise SystemExit("run_lab_breaks: the inventory needs gpu_hosts and two dpus (a paired lab)")
    host = hosts[0]
    dpu = (hostvars[host].get("bluefleet_dpus") or [None])[0]
    if dpu not in dpus:
        raise SystemExit(f"run_lab_breaks: {host} names no DPU of the inventory in bluefleet_dpus")
    peer = next(d for d in dpus if d != dpu)
    peer_host = next((h for h in hosts if h != host), host)
    addresses = {}
    for key, var in (("peer_vtep", "bluefleet_vtep_address"), ("peer_uplink", "bluefleet_uplink_address")):
        addresses[key] = str(hostvars[peer].get(var, "")).split("/", 1)[0]
        if not addresses[key]:
            raise SystemExit(f"run_lab_breaks: {peer} has no {var} in the inventory (a paired lab writes it)")
    return {"host": host, "dpu": dpu, "peer": peer, "peer_host": peer_host, **addresses,
            "container": {name: hostvars[name].get("ansible_host", name) for name in (host, dpu)}}


def _exec(container: str, argv: list[str]) -> None:
    proc = subprocess.run(["docker", "exec", container, *argv], capture_output=True, text=True, timeout=120,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"docker exec {container} {' '.join(argv)}: rc {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()[-300:]}")


def _suite(inventory: str, checks: list[str], workdir: Path) -> dict[str, dict]:
    evidence = workdir / "evidence.json"
    evidence.unlink(missing_ok=True)
    names = " or ".join(sorted({c.split("::", 1)[1] for c in checks}))
    files = sorted({str(ROOT / "tests" / "validation" / c.split("::", 1)[0]) for c in checks})
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files, "-k", names,
                    "--hosts=ansible://all", f"--ansible-inventory={inventory}", f"--bluefleet-evidence={evidence}"],
                   cwd=str(ROOT), capture_output=True, text=True, timeout=600, check=False)
    data = json.loads(evidence.read_text()) if evidence.is_file() else {}
    return {r["nodeid"].split("tests/validation/", 1)[-1]: r for r in data.get("checks", [])}


def prove(check: str, row: dict, pair: dict, inventory: str, workdir: Path) -> list[str]:
    """The problems of one row (empty: the row holds)."""
    node = pair[row["side"] if row["side"] == "host" else "dpu"]
    container = pair["container"][node]

    def fill(text):
        for key in ("peer_host", "peer_vtep", "peer_uplink", "host", "dpu", "peer"):
            text = text.replace("{%s}" % key, pair[key])
        return text

    def argv(cmd):
        return [fill(a) for a in cmd]

    problems = []
    expected = {fill(key): words for key, words in row["fails"].items()}
    checks = sorted({key.split("[", 1)[0] for key in row["fails"]})
    try:
        for cmd in row["break"]:
            _exec(container, argv(cmd))
        records = _suite(inventory, checks, workdir)
        failed = {k: r for k, r in records.items() if r["outcome"] in ("failed", "error")}
        if sorted(failed) != sorted(expected):
            problems.append(f"{check}: after the break ({row['text']}) failed {sorted(failed)}, expected "
                            f"{sorted(expected)}")
        for key, words in expected.items():
            message = failed.get(key, {}).get("message", "")
            host = key.rsplit("[", 1)[1].rstrip("]")
            # words: one finding, or a tuple of findings of which the message names one (where the lab's network
            # decides which the check meets first, lab_breaks.py says why)
            findings = words if isinstance(words, tuple) else (words,)
            for wants, what in (((host,), "the host"), (findings, "what was found"), (("fix",), "the fix")):
                if not any(want.lower() in message.lower() for want in wants):
                    problems.append(f"{key}: the message does not name {what} ({' or '.join(map(repr, wants))}): "
                                    f"{message[-400:]}")
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        problems.append(f"{check}: {exc}")
    finally:
        for cmd in row["undo"]:
            try:
                _exec(container, argv(cmd))
            except RuntimeError as exc:
                problems.append(f"{check}: undo: {exc}")
    records = _suite(inventory, checks, workdir)
    bad = {k: r["outcome"] for k, r in records.items() if r["outcome"] not in ("passed", "not_applicable")}
    if bad or not records:
        # with each check's own message: what the re-check found is what tells a flaky lab from a broken undo
        why = "; ".join(f"{k}: {records[k].get('message', '')[-600:]}" for k in bad)
        problems.append(f"{check}: after the undo the checks do not pass again: {bad or 'nothing ran'}"
                        + (f" ({why})" if why else ""))
    return problems


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--only", nargs="*", default=None, help="check ids of LAB_BREAKS (default: all)")
    opts = parser.parse_args(args)
    data, hostvars = _inventory(opts.inventory)
    pair = _pair(data, hostvars)
    rows = {k: v for k, v in LAB_BREAKS.items() if opts.only is None or k in opts.only}
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for check, row in rows.items():
            if row.get("pending"):
                print(f"NOT PROVEN {check}: {row['text']}: {row['pending']}", flush=True)
                problems.append(f"{check}: not proven in the lab: {row['pending']}")
                continue
            found = prove(check, row, pair, opts.inventory, Path(tmp))
            print(("FAIL " if found else "ok   ") + f"{check}: {row['text']}", flush=True)
            problems += found
    for line in problems:
        print("  " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
