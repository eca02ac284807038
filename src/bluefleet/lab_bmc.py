"""The lab's BMCs: one twin BlueField-3 BMC per DPU on the lab's management network.

Per pair ``i`` (prefix ``P``)::

    P-node<i>-bmc   `dpusim bmc serve --tls` on P-mgmt (--internal), address = host address i of the
                    management subnet, port 443; it mounts the pair's card volume (the one card the host
                    and the DPU see), so its FirmwareInventory is the card's and a fault set with
                    `dpusim fault set bmc_...` in either container reaches it.

A container of its own, as the BMC is a chip of its own: it answers while the DPU's Arm OS is down and
the DPU's firewall does not filter it. The controller (where Ansible runs, the Docker host) reaches the
management network through its bridge, like an operator's out-of-band network.

Credentials and trust: ``lab up`` makes the lab's BMC password once (48 random letters/digits, mode 0600)
in ``.state/P-bmc-password`` next to the inventory; the BMC reads it from that file at start (it is in no
command line, environment or log), and the inventory's ``bluefleet_bmc.password`` reads it back with
Ansible's password lookup, as the lab's IPsec key is read. Each BMC makes its self-signed certificate at
start (as a fresh BMC does) and copies it to ``.state/P-node<i>-bmc.crt``; the inventory pins it
(``ca_path``, ``validate_certs: true``).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import ssl
import string
import time
import urllib.error
import urllib.request
from pathlib import Path

from bluefleet import lab_wiring
from bluefleet.lab_images import LabError, docker
from bluefleet.lab_wiring import CARD_MOUNT, LABEL, Pair, Topology, inspect_container

BMC_PORT = 443
BMC_USER = "root"
BMC_ROOT = "/var/lib/dpusim-bmc"  # the BMC container's own twin node root (the card is the pair's volume)
STATE_MOUNT = "/etc/dpusim-bmc"  # the inventory's .state/ folder: password in, certificate out
PASSWORD_CHARS = string.ascii_letters + string.digits
CONFIG_LABEL = "bluefleet.bmc-config"


def password_file(state_dir: Path, prefix: str) -> Path:
    return state_dir / f"{prefix}-bmc-password"


def cert_file(state_dir: Path, pair: Pair) -> Path:
    return state_dir / f"{pair.bmc}.crt"


def applies(topo: Topology) -> bool:
    """The twin models the BlueField-3 BMC only."""
    return topo.profile == "bluefield3"


def ensure_password(state_dir: Path, prefix: str, changes: list[str]) -> Path:
    """The lab's BMC password, made once; the same file Ansible's password lookup in the inventory reads."""
    path = password_file(state_dir, prefix)
    if path.exists() and path.read_text().strip():
        return path
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("".join(secrets.choice(PASSWORD_CHARS) for _ in range(48)) + "\n")
    changes.append(f"BMC password made in {path} (mode 0600)")
    return path


def ensure_mgmt(topo: Topology, changes: list[str]) -> None:
    lab_wiring.ensure_internal_network(
        topo, topo.mgmt, topo.mgmt_subnet, topo.mgmt_gateway, changes,
        other_subnet_fix=f"remove the lab (`bluefleet lab down --prefix {topo.prefix}`) and bring it up again",
        clash_message=f"the management subnet {topo.mgmt_subnet} of lab {topo.prefix} overlaps Docker network "
                      "{clash}: remove that network or use another --prefix",
        created=", the BMCs' management network")


def _command(topo: Topology, pair: Pair) -> str:
    ip = topo.bmc_ip(pair)
    return (f"set -e; dpusim init --root {BMC_ROOT} --profile {topo.profile} --role dpu --card-dir {CARD_MOUNT} "
            f">/dev/null; DPUSIM_BMC_PASSWORD=$(cat {STATE_MOUNT}/{topo.prefix}-bmc-password) "
            f"exec dpusim bmc serve --root {BMC_ROOT} --listen {ip}:{BMC_PORT} --user {BMC_USER} --tls "
            f"--cert-out {STATE_MOUNT}/{pair.bmc}.crt")


def _run_args(topo: Topology, pair: Pair, image: str, state_dir: Path) -> list[str]:
    command = _command(topo, pair)
    config = hashlib.sha256(json.dumps([image, str(state_dir.resolve()), command]).encode()).hexdigest()[:16]
    return ["run", "-d", "--name", pair.bmc, "--hostname", pair.bmc, "--label", f"{LABEL}={topo.prefix}",
            "--label", "bluefleet.role=bmc", "--label", f"{CONFIG_LABEL}={config}",
            "-v", f"{pair.volume}:{CARD_MOUNT}", "-v", f"{state_dir.resolve()}:{STATE_MOUNT}",
            "--network", topo.mgmt, "--ip", topo.bmc_ip(pair), image, "sh", "-c", command]


def ensure_bmc(topo: Topology, pair: Pair, image: str, state_dir: Path, changes: list[str]) -> bool:
    """Create / re-create / start the pair's BMC container; True when it (re)started."""
    args = _run_args(topo, pair, image, state_dir)
    config = next(a.split("=", 1)[1] for a in args if a.startswith(f"{CONFIG_LABEL}="))
    info = inspect_container(pair.bmc)
    if info is not None and (info["Config"].get("Labels") or {}).get(CONFIG_LABEL) != config:
        docker("rm", "-f", pair.bmc, timeout=60)
        changes.append(f"{pair.bmc}: removed (image, inventory folder or command changed)")
        info = None
    if info is None:
        docker(*args, timeout=120)
        changes.append(f"{pair.bmc}: created, Redfish at https://{topo.bmc_ip(pair)}")
        return True
    if not info["State"]["Running"]:
        docker("start", pair.bmc, timeout=60)
        changes.append(f"{pair.bmc}: started")
        return True
    return False


def probe(topo: Topology, pair: Pair, state_dir: Path, timeout: float = 5) -> str | None:
    """None when the BMC answers GET /redfish over TLS with the pinned certificate, else why not."""
    cert = cert_file(state_dir, pair)
    if not cert.exists():
        return f"no certificate {cert} yet"
    try:
        ctx = ssl.create_default_context(cafile=str(cert))
        url = f"https://{topo.bmc_ip(pair)}:{BMC_PORT}/redfish"
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:  # noqa: S310 (https URL we built)
            return None if resp.status == 200 else f"HTTP {resp.status}"
    except (OSError, ssl.SSLError, urllib.error.URLError) as exc:
        return str(getattr(exc, "reason", exc))


def wait_ready(topo: Topology, pair: Pair, state_dir: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    why = probe(topo, pair, state_dir)
    while why is not None and time.monotonic() < deadline:
        time.sleep(0.5)
        why = probe(topo, pair, state_dir)
    if why is not None:
        raise LabError(f"{pair.bmc} does not answer at https://{topo.bmc_ip(pair)}/redfish after {timeout:.0f} s "
                       f"({why}): see `docker logs {pair.bmc}`")


def bring_up(topo: Topology, dpu_image: str, state_dir: Path) -> list[str]:
    """Management network, password, one BMC per DPU; idempotent. The DPUs' twins must exist (their card
    volumes hold the card the BMC serves)."""
    changes: list[str] = []
    if not applies(topo):
        return changes
    ensure_password(state_dir, topo.prefix, changes)
    ensure_mgmt(topo, changes)
    for pair in topo.all_pairs():
        ensure_bmc(topo, pair, dpu_image, state_dir, changes)
    for pair in topo.all_pairs():
        wait_ready(topo, pair, state_dir)
    return changes


def firmware_version(topo: Topology, pair: Pair, state_dir: Path, timeout: float = 10) -> str:
    """The BMC's own firmware version (Managers/Bluefield_BMC), read with the lab's password."""
    import base64
    password = password_file(state_dir, topo.prefix).read_text().strip()
    ctx = ssl.create_default_context(cafile=str(cert_file(state_dir, pair)))
    req = urllib.request.Request(f"https://{topo.bmc_ip(pair)}:{BMC_PORT}/redfish/v1/Managers/Bluefield_BMC",
                                 headers={"Authorization": "Basic " + base64.b64encode(
                                     f"{BMC_USER}:{password}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:  # noqa: S310 (https URL we built)
        return str(json.load(resp).get("FirmwareVersion"))


def summary_row(topo: Topology, pair: Pair) -> tuple[list[str], bool]:
    """``bluefleet lab summary``'s row for the pair's BMC: container, role, state, network, Redfish, version.
    The password and certificate are read from the folder the container mounts (the inventory's .state/)."""
    info = inspect_container(pair.bmc)
    if info is None or not info["State"]["Running"]:
        return [pair.bmc, "bmc", "missing" if info is None else info["State"]["Status"], "-", "-", "-"], False
    mounts = [m["Source"] for m in info.get("Mounts") or [] if m.get("Destination") == STATE_MOUNT]
    state_dir = Path(mounts[0]) if mounts else Path("/nonexistent")
    why = probe(topo, pair, state_dir)
    version = "-"
    if why is None:
        try:
            version = "BMC " + firmware_version(topo, pair, state_dir)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            why = f"login failed ({getattr(exc, 'reason', exc)})"
    return [pair.bmc, "bmc", "running", f"{topo.mgmt} {topo.bmc_ip(pair)}",
            "Redfish answering" if why is None else f"Redfish: {why}", version], why is None


def remove_files(state_dir: Path, prefix: str) -> list[str]:
    """What ``lab down`` removes besides containers and networks: the password and the certificates."""
    removed = []
    for path in [password_file(state_dir, prefix), *sorted(state_dir.glob(f"{prefix}-node*-bmc.crt"))]:
        if path.exists():
            path.unlink()
            removed.append(str(path))
    return removed
