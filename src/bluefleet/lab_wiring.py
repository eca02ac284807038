"""The lab's containers, wired like the hardware; used by ``bluefleet lab up|wire|down`` and by
Molecule's ``prepare`` (which calls ``bluefleet lab wire``), so there is one copy of this logic.

Per pair ``i`` (prefix ``P``)::

    P-node<i> (GPU host, --network none)  ens1f0np0 <-- veth --> pf0hpf  P-node<i>-dpu (BlueField)
                                                                  p0 (renamed Docker uplink) -- P-fabric (--internal)
    volume P-node<i>-card mounted in both at /var/lib/dpusim-card: the one card both sides see
    (its state, the rshim/boot state), standing in for the PCIe + rshim link.

No ``--privileged`` (it cannot work on this engine): both get NET_ADMIN, the DPU ``/dev/net/tun``
(OVS netdev datapath, strongSwan kernel-libipsec). The veth is made from the Docker host by
container PID, which needs root here.

Addressing (written into the inventory, read by the ipsec / ovs / host_overlay roles): the fabric
network has a fixed subnet (``--fabric-subnet``, default 192.168.50.0/24 for the demo lab and a
prefix-derived /24 for any other (``default_fabric_subnet``), Docker's gateway on the
last usable address), DPU ``i`` has the fabric's host address ``i`` on ``p0`` (Docker assigns it;
``bluefleet_uplink_address``), the VTEP ``172.30.0.i/32`` (``bluefleet_vtep_address``), and GPU host
``i`` the overlay address ``10.10.0.i/24`` on ``ens1f0np0`` with MTU 1300
(``bluefleet_host_overlay_address`` / ``bluefleet_host_overlay_mtu``; lab-recipe.md section 3: the
VXLAN-in-ESP overhead over the fabric's 1500).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bluefleet.lab_images import LabError, docker, run

HOST_NETDEV = "ens1f0np0"
HOST_REPRESENTOR = "pf0hpf"
UPLINK = "p0"
CARD_MOUNT = "/var/lib/dpusim-card"
TWIN_ROOT = "/var/lib/dpusim"
RSHIM = "rshim0"
REAL_ETHTOOL = "/usr/sbin/ethtool"
LABEL = "bluefleet.lab"
DEFAULT_PREFIX = "bf"
DEFAULT_PAIRS = 2
DEFAULT_PROFILE = "bluefield3"
SYSTEMD_RUN_ARGS = ["--tmpfs", "/run", "--tmpfs", "/run/lock", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,15}$")
DEFAULT_FABRIC_SUBNET = "192.168.50.0/24"  # the default lab's (prefix bf); other prefixes get their own


def default_fabric_subnet(prefix: str) -> str:
    """The fabric subnet a lab gets when none is given: 192.168.50.0/24 for the default prefix, and for any
    other prefix a /24 of 192.168.51-249 picked from the prefix, so that the demo lab, the test lab and
    Molecule's can stand side by side (a clash is still caught before anything is created)."""
    if prefix == DEFAULT_PREFIX:
        return DEFAULT_FABRIC_SUBNET
    return f"192.168.{_third_octet(prefix)}.0/24"


def _third_octet(prefix: str) -> int:
    if prefix == DEFAULT_PREFIX:
        return 50
    return 51 + int(hashlib.sha256(prefix.encode()).hexdigest(), 16) % 199


def default_mgmt_subnet(prefix: str) -> str:
    """The BMCs' management network (lab_bmc.py): 10.249.<n>.0/24, n as the fabric's third octet."""
    return f"10.249.{_third_octet(prefix)}.0/24"
VTEP_SUBNET = ipaddress.ip_network("172.30.0.0/24")
HOST_OVERLAY_SUBNET = ipaddress.ip_network("10.10.0.0/24")
HOST_OVERLAY_MTU = 1300


@dataclass(frozen=True)
class Pair:
    prefix: str
    index: int

    @property
    def host(self) -> str:
        return f"{self.prefix}-node{self.index}"

    @property
    def dpu(self) -> str:
        return f"{self.prefix}-node{self.index}-dpu"

    @property
    def volume(self) -> str:
        return f"{self.prefix}-node{self.index}-card"

    @property
    def bmc(self) -> str:
        return f"{self.prefix}-node{self.index}-bmc"


@dataclass(frozen=True)
class Topology:
    prefix: str = DEFAULT_PREFIX
    pairs: int = DEFAULT_PAIRS
    profile: str = DEFAULT_PROFILE
    fabric_subnet: str | None = None  # None: default_fabric_subnet(prefix)

    def __post_init__(self) -> None:
        if not _PREFIX_RE.match(self.prefix):
            raise LabError(f"lab prefix {self.prefix!r} is not usable: use 1-16 lower-case letters/digits "
                           "starting with a letter")
        if self.fabric_subnet is None:
            object.__setattr__(self, "fabric_subnet", default_fabric_subnet(self.prefix))
        if not 1 <= self.pairs <= 200:
            raise LabError(f"--pairs {self.pairs} is out of range: use 1 to 200")
        try:
            net = ipaddress.ip_network(self.fabric_subnet)
        except ValueError as exc:
            raise LabError(f"--fabric-subnet {self.fabric_subnet!r} is not an IPv4 network ({exc}): "
                           "give one like 192.168.50.0/24 (host bits zero)") from None
        if net.version != 4 or net.num_addresses - 2 < self.pairs + 1:
            raise LabError(f"--fabric-subnet {self.fabric_subnet} has no room for {self.pairs} DPU(s) and Docker's "
                           "gateway: give a larger IPv4 network")
        for other in (VTEP_SUBNET, HOST_OVERLAY_SUBNET):
            if net.overlaps(other):
                raise LabError(f"--fabric-subnet {self.fabric_subnet} overlaps {other} (VTEPs / host overlay): "
                               "pick a fabric subnet outside it")

    @property
    def fabric_network(self) -> ipaddress.IPv4Network:
        return ipaddress.ip_network(self.fabric_subnet)  # type: ignore[return-value]

    @property
    def fabric_gateway(self) -> str:
        """Docker would take the first address (DPU 1's); the last usable one is the gateway."""
        return str(self.fabric_network.broadcast_address - 1)

    def uplink_ip(self, pair: Pair) -> str:
        return str(self.fabric_network.network_address + pair.index)

    @property
    def fabric(self) -> str:
        return f"{self.prefix}-fabric"

    @property
    def mgmt(self) -> str:
        return f"{self.prefix}-mgmt"

    @property
    def mgmt_subnet(self) -> str:
        return default_mgmt_subnet(self.prefix)

    @property
    def mgmt_network(self) -> ipaddress.IPv4Network:
        return ipaddress.ip_network(self.mgmt_subnet)  # type: ignore[return-value]

    @property
    def mgmt_gateway(self) -> str:
        return str(self.mgmt_network.broadcast_address - 1)

    def bmc_ip(self, pair: Pair) -> str:
        """DPU i's BMC is the management network's host address i (lab_bmc.py)."""
        return str(self.mgmt_network.network_address + pair.index)

    def all_pairs(self) -> list[Pair]:
        return [Pair(self.prefix, i) for i in range(1, self.pairs + 1)]


# ------------------------------------------------------------------ inventory
# What differs between a container with the twin and a real machine: the twin keeps /dev/rshimN
# and /sys files under its root, and a machine's reboot / power cycle is the twin's command.
# molecule/default/molecule.yml carries the same values (tests/integration/test_lab.py checks).
TWIN_VARS: dict[str, object] = {
    "preflight_fs_root": TWIN_ROOT,
    "firmware_power_cycle_method": "command",
    "firmware_power_cycle_command": ["dpusim", "power-cycle"],
    "firmware_reboot_command": ["dpusim", "reboot"],
}

# How Ansible reaches a lab container: `docker exec`, each module fed to the container's Python on stdin
# (pipelining: one exec a module instead of six: find the home folder, make a temporary folder, copy the module
# in, make it executable, run it, remove the folder; the docker connection offers pipelining but leaves it to this
# variable). Measured: 20 `command` tasks on one lab container 12.5 -> 5.7 CPU-s of the machine's (dockerd and
# runc included). A task that runs in the background (async) still copies its module.
# molecule/default/molecule.yml carries the same values.
CONNECTION_VARS: dict[str, object] = {
    "ansible_python_interpreter": "/usr/bin/python3",
    "ansible_pipelining": True,
}

# The lab's IPsec pre-shared key: made once per lab by Ansible's password lookup (48 random letters/digits,
# file mode 0600) next to the inventory, under .state/ (git-ignored for inventories/lab), and read back on
# every run, so both DPUs and every later run see the same key. A real inventory vaults ipsec_psk instead.
LAB_PSK = ("{{ lookup('ansible.builtin.password', inventory_dir ~ '/.state/' ~ bluefleet_lab_prefix ~ "
           "'-ipsec-psk', length=48, chars=['ascii_letters', 'digits']) }}")


# The lab's BMC password: made by `lab up` (lab_bmc.ensure_password) in the same folder, read back here.
LAB_BMC_PASSWORD = ("{{ lookup('ansible.builtin.password', inventory_dir ~ '/.state/' ~ bluefleet_lab_prefix ~ "
                    "'-bmc-password', length=48, chars=['ascii_letters', 'digits']) }}")


def host_vars(topo: Topology) -> dict[str, dict[str, object]]:
    """Pairing and addressing variables, as DESIGN.md names them (also the source of molecule/default's
    host_vars)."""
    out: dict[str, dict[str, object]] = {}
    plen = topo.fabric_network.prefixlen
    for pair in topo.all_pairs():
        out[pair.host] = {"bluefleet_dpus": [pair.dpu],
                          "bluefleet_host_overlay_address": f"{HOST_OVERLAY_SUBNET.network_address + pair.index}/"
                                                            f"{HOST_OVERLAY_SUBNET.prefixlen}",
                          "bluefleet_host_overlay_mtu": HOST_OVERLAY_MTU}
        out[pair.dpu] = {"bluefleet_host": pair.host, "bluefleet_rshim": RSHIM,
                         "bluefleet_uplink_address": f"{topo.uplink_ip(pair)}/{plen}",
                         "bluefleet_vtep_address": f"{VTEP_SUBNET.network_address + pair.index}/32"}
    return out


def inventory(topo: Topology) -> dict[str, object]:
    hv = host_vars(topo)
    pairs = topo.all_pairs()
    return {
        "all": {
            "vars": {
                "ansible_connection": "community.docker.docker",
                **CONNECTION_VARS,
                "bluefleet_lab_prefix": topo.prefix,
                "ipsec_psk": LAB_PSK,
                **TWIN_VARS,
            },
            "children": {
                "gpu_hosts": {"hosts": {p.host: hv[p.host] for p in pairs}},
                "dpus": {"hosts": {p.dpu: hv[p.dpu] for p in pairs}, **bmc_group_vars(topo)},
            },
        }
    }


def bmc_group_vars(topo: Topology) -> dict[str, object]:
    """``bluefleet_bmc`` for every DPU of the lab (its twin BMC, lab_bmc.py), as the dpus group's vars: the
    per-host pairing variables stay what Molecule's scenario shares (it has no BMCs)."""
    if topo.profile != "bluefield3":  # the twin models the BlueField-3 BMC only
        return {}
    return {"vars": {
        "bluefleet_lab_bmcs": {p.dpu: {"address": f"https://{topo.bmc_ip(p)}", "certificate": f"{p.bmc}.crt"}
                               for p in topo.all_pairs()},
        "bluefleet_bmc": {
            "address": "{{ bluefleet_lab_bmcs[inventory_hostname].address }}",
            "username": "root",
            "password": LAB_BMC_PASSWORD,
            "validate_certs": True,
            "ca_path": "{{ inventory_dir }}/.state/{{ bluefleet_lab_bmcs[inventory_hostname].certificate }}",
        },
    }}


def write_inventory(topo: Topology, path: Path) -> None:
    header = (f"# Generated by `bluefleet lab up --prefix {topo.prefix} --pairs {topo.pairs} "
              f"--fabric-subnet {topo.fabric_subnet}`; do not edit, "
              "it is rewritten on every run.\n# JSON is YAML: Ansible's yaml inventory plugin reads this file.\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(header + json.dumps(inventory(topo), indent=2) + "\n")
    tmp.replace(path)


# ------------------------------------------------------------------ docker helpers
def inspect_container(name: str) -> dict | None:
    proc = docker("container", "inspect", name, check=False, timeout=30)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)[0]


def exec_in(container: str, argv: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    return run(["docker", "exec", container, *argv], timeout=timeout, check=check,
               what="in {}: {}".format(container, " ".join(argv)))


def _running_pid(name: str) -> int:
    info = inspect_container(name)
    if info is None:
        raise LabError(f"container {name} does not exist: run `bluefleet lab up` (or `molecule create`) first")
    if not info["State"]["Running"]:
        status = info["State"]["Status"]
        raise LabError(f"container {name} is not running ({status}): run `bluefleet lab up` again")
    return int(info["State"]["Pid"])


def _netns(pid: int, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(["nsenter", "-t", str(pid), "-n", *argv], timeout=30, check=check)


def _links(pid: int) -> dict[str, dict]:
    out = _netns(pid, "ip", "-j", "link", "show").stdout
    return {link["ifname"]: link for link in json.loads(out or "[]")}


# ------------------------------------------------------------------ wiring
def _wire_veth(pair: Pair, hpid: int, dpid: int, changes: list[str]) -> None:
    hlinks, dlinks = _links(hpid), _links(dpid)
    have_h, have_d = HOST_NETDEV in hlinks, HOST_REPRESENTOR in dlinks
    if have_h and have_d:
        return
    # Half a link (an interrupted earlier run): remove what is left, then make the pair.
    if have_h:
        _netns(hpid, "ip", "link", "del", HOST_NETDEV)
    if have_d:
        _netns(dpid, "ip", "link", "del", HOST_REPRESENTOR)
    run(["ip", "link", "add", HOST_NETDEV, "netns", str(hpid), "type", "veth",
         "peer", "name", HOST_REPRESENTOR, "netns", str(dpid)], timeout=30,
        what=f"creating veth {pair.host}:{HOST_NETDEV} <-> {pair.dpu}:{HOST_REPRESENTOR}")
    changes.append(f"{pair.host}: veth {HOST_NETDEV} <-> {pair.dpu}:{HOST_REPRESENTOR}")


def _wire_uplink(topo: Topology, pair: Pair, dpid: int, changes: list[str]) -> None:
    links = _links(dpid)
    if UPLINK in links:
        return
    info = inspect_container(pair.dpu) or {}
    net = info.get("NetworkSettings", {}).get("Networks", {}).get(topo.fabric)
    if not net:
        raise LabError(f"{pair.dpu} is not attached to the fabric network {topo.fabric}: remove the lab "
                       f"(`bluefleet lab down --prefix {topo.prefix}`) and bring it up again")
    mac = net["MacAddress"].lower()
    names = [n for n, link in links.items() if link.get("address", "").lower() == mac]
    if not names:
        raise LabError(f"{pair.dpu}: no interface with the fabric MAC {mac}")
    old = names[0]
    _netns(dpid, "ip", "link", "set", old, "down")
    _netns(dpid, "ip", "link", "set", old, "name", UPLINK)
    changes.append(f"{pair.dpu}: fabric interface {old} renamed {UPLINK}")


def _check_uplink_address(topo: Topology, pair: Pair, dpid: int) -> None:
    """The inventory says DPU i is fabric host i: Docker must have given p0 exactly that address."""
    want = topo.uplink_ip(pair)
    data = json.loads(_netns(dpid, "ip", "-j", "-4", "addr", "show", "dev", UPLINK).stdout or "[]")
    have = [a["local"] for link in data for a in link.get("addr_info", [])]
    if want not in have:
        raise LabError(f"{pair.dpu}: {UPLINK} has {', '.join(have) or 'no IPv4 address'}, expected {want} "
                       f"(fabric {topo.fabric_subnet}): create the DPU with `--ip {want}` (Molecule: "
                       "networks: ipv4_address) or run `bluefleet lab down` and `up` again")


def _links_up(hpid: int, dpid: int) -> None:
    for pid, names in ((hpid, [HOST_NETDEV]), (dpid, [HOST_REPRESENTOR, UPLINK])):
        links = _links(pid)
        for name in names:
            if "UP" not in links[name].get("flags", []):
                _netns(pid, "ip", "link", "set", name, "up")


def _host_checksum_offload_off(pair: Pair, changes: list[str]) -> None:
    # Lab artefact, not a toolkit setting: veth hands CHECKSUM_PARTIAL packets to OVS's userspace
    # datapath, which forwards them with bad TCP checksums (lab-recipe.md §1); the sender turns
    # tx checksumming off. The kernel's ethtool by absolute path: the twin's `ethtool` front-end,
    # first on PATH, answers for the card's netdevs from twin state and would not touch the veth.
    out = exec_in(pair.host, [REAL_ETHTOOL, "-k", HOST_NETDEV]).stdout
    if re.search(r"^tx-checksumming: on", out, re.M):
        exec_in(pair.host, [REAL_ETHTOOL, "-K", HOST_NETDEV, "tx", "off"])
        changes.append(f"{pair.host}: {HOST_NETDEV} tx checksum offload off")


# Lab artefact, not a toolkit setting: the lab kernel has no ESP (INET_ESP unset); strongSwan's libipsec reads
# protocol 50 from a raw socket, and when that socket's queue overflows under load the kernel answers the ESP
# packet with ICMP "protocol 50 unreachable" (seen on the fabric during iperf3). A BlueField's kernel handles
# ESP itself, so the lab drops those ICMP errors in a table of its own (the firewall role leaves it alone).
LAB_NFT_TABLE = "bluefleet_lab"
LAB_NFT_RULES = (f"table inet {LAB_NFT_TABLE} {{\n"
                 "  chain output {\n"
                 "    type filter hook output priority 0; policy accept;\n"
                 "    icmp type destination-unreachable icmp code prot-unreachable drop\n"
                 "  }\n"
                 "}\n")


def _dpu_lab_nft(pair: Pair, changes: list[str]) -> None:
    if exec_in(pair.dpu, ["nft", "list", "table", "inet", LAB_NFT_TABLE], check=False).returncode == 0:
        return
    run(["docker", "exec", "-i", pair.dpu, "nft", "-f", "-"], timeout=30, input_text=LAB_NFT_RULES,
        what=f"in {pair.dpu}: nft table {LAB_NFT_TABLE}")
    changes.append(f"{pair.dpu}: nft table {LAB_NFT_TABLE} (drops ICMP protocol-unreachable answers to ESP)")


def wait_systemd(container: str, timeout: int = 90) -> str:
    """Wait until systemd (PID 1 in the lab images) has finished booting; return its state."""
    proc = exec_in(container, ["timeout", str(timeout), "systemctl", "is-system-running", "--wait"],
                   timeout=timeout + 15, check=False)
    state = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "unknown"
    if state not in ("running", "degraded"):
        raise LabError(f"{container}: systemd did not finish booting (state {state!r}): "
                       f"see `docker exec {container} systemctl --failed`")
    return state


def _init_twin(container: str, role: str, profile: str, changes: list[str]) -> None:
    # `dpusim env` only (re)writes the tool front-ends; cheap and idempotent.
    exec_in(container, ["dpusim", "env", "--root", TWIN_ROOT])
    if exec_in(container, ["dpusim", "state"], check=False).returncode == 0:
        return
    exec_in(container, ["dpusim", "init", "--profile", profile, "--role", role, "--card-dir", CARD_MOUNT])
    changes.append(f"{container}: twin initialised ({profile}, role {role}, card {CARD_MOUNT})")


def _record_netdevs(container: str, pid: int, names: list[str]) -> None:
    """Tell the twin what Docker and the veths gave its card netdevs (MAC, IPv4): the twin never reads the
    machine it runs on, so the lab, which made these interfaces, records them in the twin's root."""
    data = json.loads(_netns(pid, "ip", "-j", "addr", "show").stdout or "[]")
    links = {link["ifname"]: link for link in data}
    for name in names:
        link = links.get(name)
        if link is None:
            continue
        argv = ["dpusim", "netdev", "set", name, "--mac", link["address"], "--flush-ipv4"]
        argv += ["--up"] if "UP" in link.get("flags", []) else ["--down"]
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet":
                argv += ["--ipv4", "%s/%s" % (addr["local"], addr["prefixlen"])]
        exec_in(container, argv)


def wire(topo: Topology) -> list[str]:
    """Wire and initialise existing containers; idempotent. Returns what it changed."""
    changes: list[str] = []
    for pair in topo.all_pairs():
        hpid, dpid = _running_pid(pair.host), _running_pid(pair.dpu)
        _wire_veth(pair, hpid, dpid, changes)
        _wire_uplink(topo, pair, dpid, changes)
        _links_up(hpid, dpid)
        _check_uplink_address(topo, pair, dpid)
    for pair in topo.all_pairs():
        _host_checksum_offload_off(pair, changes)
        _dpu_lab_nft(pair, changes)
        for name in (pair.host, pair.dpu):
            wait_systemd(name)
        _init_twin(pair.host, "host", topo.profile, changes)
        _init_twin(pair.dpu, "dpu", topo.profile, changes)
        _record_netdevs(pair.host, _running_pid(pair.host), [HOST_NETDEV])
        _record_netdevs(pair.dpu, _running_pid(pair.dpu), [HOST_REPRESENTOR, UPLINK])
    return changes


# ------------------------------------------------------------------ containers
def _run_args(topo: Topology, pair: Pair, role: str, image: str) -> list[str]:
    name = pair.host if role == "host" else pair.dpu
    args = ["run", "-d", "--name", name, "--hostname", name, "--label", f"{LABEL}={topo.prefix}",
            "--label", f"bluefleet.role={role}", "--cap-add", "NET_ADMIN", *SYSTEMD_RUN_ARGS,
            "-v", f"{pair.volume}:{CARD_MOUNT}"]
    if role == "host":
        # /dev/net/tun: the offload-dividend comparison tunnel (strongSwan's userspace ESP) runs on the host
        args += ["--device", "/dev/net/tun", "--network", "none"]
    else:
        args += ["--device", "/dev/net/tun", "--network", topo.fabric, "--ip", topo.uplink_ip(pair)]
    return [*args, image]


def ensure_container(topo: Topology, pair: Pair, role: str, image: str, changes: list[str]) -> None:
    name = pair.host if role == "host" else pair.dpu
    info = inspect_container(name)
    if info is not None and info["Config"]["Image"] != image:
        docker("rm", "-f", name, timeout=60)
        changes.append("{}: removed (image {}, want {})".format(name, info["Config"]["Image"], image))
        info = None
    if info is None:
        docker(*_run_args(topo, pair, role, image), timeout=120)
        changes.append(f"{name}: created")
    elif not info["State"]["Running"]:
        docker("start", name, timeout=60)
        changes.append(f"{name}: started")


def fabric_subnets(name: str) -> list[str] | None:
    """The IPAM subnets of Docker network ``name`` (None when it does not exist)."""
    proc = docker("network", "inspect", name, check=False, timeout=30)
    if proc.returncode != 0:
        return None
    configs = (json.loads(proc.stdout)[0].get("IPAM") or {}).get("Config") or []
    return [c["Subnet"] for c in configs if c.get("Subnet")]


def subnet_clash(net: ipaddress.IPv4Network) -> str | None:
    """'NAME (SUBNET)' of a Docker network whose subnet overlaps ``net``, else None."""
    for other in docker("network", "ls", "--format", "{{.Name}}", timeout=30).stdout.split():
        for subnet in fabric_subnets(other) or []:
            try:
                if ipaddress.ip_network(subnet).overlaps(net):
                    return f"{other} ({subnet})"
            except ValueError:
                continue
    return None


def ensure_internal_network(topo: Topology, name: str, subnet: str, gateway: str, changes: list[str], *,
                            other_subnet_fix: str, clash_message: str, created: str) -> None:
    """The lab's internal Docker network ``name`` on ``subnet``: kept when it exists with that subnet, refused
    (``other_subnet_fix`` says what to do) when it exists with another, refused (``clash_message``, ``{clash}``
    the other network) when another Docker network overlaps it, else created."""
    have = fabric_subnets(name)
    if have is not None:
        if subnet not in have:
            raise LabError(f"network {name} exists with subnet {', '.join(have) or 'none'}, not {subnet}: "
                           + other_subnet_fix)
        return
    clash = subnet_clash(ipaddress.ip_network(subnet))
    if clash:
        raise LabError(clash_message.format(clash=clash))
    docker("network", "create", "--internal", "--subnet", subnet, "--gateway", gateway,
           "--label", f"{LABEL}={topo.prefix}", name, timeout=60)
    changes.append(f"network {name} created ({subnet}{created})")


def ensure_fabric(topo: Topology, changes: list[str]) -> None:
    ensure_internal_network(
        topo, topo.fabric, topo.fabric_subnet, topo.fabric_gateway, changes,
        other_subnet_fix=f"remove the lab (`bluefleet lab down --prefix {topo.prefix}`) or give its subnet with "
                         "--fabric-subnet",
        clash_message=f"--fabric-subnet {topo.fabric_subnet} overlaps Docker network {{clash}}: pick a free one, "
                      "e.g. --fabric-subnet 192.168.61.0/24",
        created="")


def ensure_volume(topo: Topology, pair: Pair, changes: list[str]) -> None:
    if docker("volume", "inspect", pair.volume, check=False, timeout=30).returncode == 0:
        return
    docker("volume", "create", "--label", f"{LABEL}={topo.prefix}", pair.volume, timeout=60)
    changes.append(f"volume {pair.volume} created")


def lab_resources(prefix: str) -> dict[str, list[str]]:
    """Every container, network and volume of the lab ``prefix`` (by name, so Molecule's count too)."""
    cre = re.compile(rf"^{re.escape(prefix)}-node\d+(-dpu|-bmc)?$")
    vre = re.compile(rf"^{re.escape(prefix)}-node\d+-card$")
    containers = [n for n in docker("ps", "-a", "--format", "{{.Names}}", timeout=30).stdout.split() if cre.match(n)]
    networks = [n for n in docker("network", "ls", "--format", "{{.Name}}", timeout=30).stdout.split()
                if n in (f"{prefix}-fabric", f"{prefix}-mgmt")]
    volumes = [n for n in docker("volume", "ls", "--format", "{{.Name}}", timeout=30).stdout.split() if vre.match(n)]
    return {"containers": sorted(containers), "networks": networks, "volumes": sorted(volumes)}


def teardown(prefix: str) -> list[str]:
    res = lab_resources(prefix)
    removed: list[str] = []
    if res["containers"]:
        docker("rm", "-f", "-v", *res["containers"], timeout=300)
        removed += res["containers"]
    for net in res["networks"]:
        docker("network", "rm", net, timeout=60)
        removed.append(net)
    if res["volumes"]:
        docker("volume", "rm", "-f", *res["volumes"], timeout=120)
        removed += res["volumes"]
    return removed


def _remove_extra_pairs(topo: Topology, changes: list[str]) -> None:
    """`up --pairs 1` after `up --pairs 2`: the lab shrinks to what was asked."""
    wanted = {n for p in topo.all_pairs() for n in (p.host, p.dpu, p.volume, p.bmc)}
    res = lab_resources(topo.prefix)
    extra = [c for c in res["containers"] if c not in wanted]
    if extra:
        docker("rm", "-f", "-v", *extra, timeout=300)
    extra_volumes = [v for v in res["volumes"] if v not in wanted]
    if extra_volumes:
        docker("volume", "rm", "-f", *extra_volumes, timeout=120)
    changes += [f"{name}: removed (beyond --pairs {topo.pairs})" for name in extra + extra_volumes]


def bring_up(topo: Topology, gpu_host_image: str, dpu_image: str) -> list[str]:
    """Create what is missing, wire, initialise the twin. On an error, a lab that did not exist before
    this call is removed again (an interrupt leaves it for the next run to finish)."""
    existed = any(lab_resources(topo.prefix).values())
    changes: list[str] = []
    try:
        ensure_fabric(topo, changes)
        _remove_extra_pairs(topo, changes)
        for pair in topo.all_pairs():
            ensure_volume(topo, pair, changes)
            ensure_container(topo, pair, "host", gpu_host_image, changes)
            ensure_container(topo, pair, "dpu", dpu_image, changes)
        changes += wire(topo)
    except LabError:
        if not existed:
            teardown(topo.prefix)
        raise
    return changes
