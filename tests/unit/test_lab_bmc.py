"""The lab's twin BMCs (src/bluefleet/lab_bmc.py) without an engine: addressing, the inventory's
``bluefleet_bmc``, the password file and what the BMC container is started with. The containers themselves
are brought up by `bluefleet lab up` (tests/integration/test_lab.py)."""

from __future__ import annotations

import ipaddress
import stat

from bluefleet import lab_bmc, lab_wiring
from bluefleet.lab_wiring import LAB_BMC_PASSWORD, Topology, inventory


def test_one_bmc_per_dpu_on_a_management_subnet_of_its_own():
    for prefix in ("bf", "b3", "mol", "t"):
        topo = Topology(prefix, 3)
        mgmt = topo.mgmt_network
        assert not mgmt.overlaps(topo.fabric_network)
        assert not mgmt.overlaps(lab_wiring.VTEP_SUBNET) and not mgmt.overlaps(lab_wiring.HOST_OVERLAY_SUBNET)
        ips = [topo.bmc_ip(p) for p in topo.all_pairs()]
        assert len(set(ips)) == 3 and all(ipaddress.ip_address(ip) in mgmt for ip in ips)
        assert topo.mgmt_gateway not in ips
        assert [p.bmc for p in topo.all_pairs()] == [f"{prefix}-node{i}-bmc" for i in (1, 2, 3)]
    assert Topology("bf", 1).mgmt_subnet == "10.249.50.0/24"
    assert Topology("b3", 1).mgmt_subnet != Topology("bf", 1).mgmt_subnet


def test_inventory_names_each_dpu_bmc_with_a_pinned_certificate_and_no_password_in_clear():
    topo = Topology("t", 2)
    dpus = inventory(topo)["all"]["children"]["dpus"]
    assert set(dpus["hosts"]) == {"t-node1-dpu", "t-node2-dpu"}
    assert dpus["hosts"]["t-node1-dpu"] == lab_wiring.host_vars(topo)["t-node1-dpu"]  # Molecule's pairing vars
    bmcs = dpus["vars"]["bluefleet_lab_bmcs"]
    assert bmcs["t-node2-dpu"] == {"address": "https://%s" % topo.bmc_ip(topo.all_pairs()[1]),
                                   "certificate": "t-node2-bmc.crt"}
    bmc = dpus["vars"]["bluefleet_bmc"]
    assert bmc["password"] == LAB_BMC_PASSWORD and "lookup('ansible.builtin.password'" in LAB_BMC_PASSWORD
    assert "-bmc-password'" in LAB_BMC_PASSWORD
    assert bmc["validate_certs"] is True and "{{ inventory_dir }}/.state/" in bmc["ca_path"]
    assert "gpu_hosts" in inventory(topo)["all"]["children"]
    assert "vars" not in inventory(topo)["all"]["children"]["gpu_hosts"]


def test_a_bluefield2_lab_has_no_bmc():
    topo = Topology("t", 1, profile="bluefield2")
    assert "vars" not in inventory(topo)["all"]["children"]["dpus"]
    assert not lab_bmc.applies(topo)
    assert lab_bmc.bring_up(topo, "unused-image", __import__("pathlib").Path("/nonexistent")) == []


def test_password_is_made_once_mode_0600_and_kept(tmp_path):
    changes: list[str] = []
    path = lab_bmc.ensure_password(tmp_path / ".state", "t", changes)
    first = path.read_text()
    assert len(first.strip()) == 48 and first.strip().isalnum()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(changes) == 1 and first.strip() not in changes[0]
    again: list[str] = []
    assert lab_bmc.ensure_password(tmp_path / ".state", "t", again).read_text() == first and again == []
    (tmp_path / ".state" / "t-node1-bmc.crt").write_text("cert")
    (tmp_path / ".state" / "tt-node1-bmc.crt").write_text("another lab's")
    removed = lab_bmc.remove_files(tmp_path / ".state", "t")
    assert sorted(removed) == sorted([str(path), str(tmp_path / ".state" / "t-node1-bmc.crt")])
    assert (tmp_path / ".state" / "tt-node1-bmc.crt").exists()


def test_bmc_container_reads_the_password_from_the_file_never_from_its_command_line(tmp_path):
    topo = Topology("t", 1)
    pair = topo.all_pairs()[0]
    args = lab_bmc._run_args(topo, pair, "img:1", tmp_path)
    text = " ".join(args)
    assert "--password" not in text and "DPUSIM_BMC_PASSWORD=$(cat /etc/dpusim-bmc/t-bmc-password)" in text
    assert "--listen %s:443" % topo.bmc_ip(pair) in text and "--tls" in text
    assert "%s:%s" % (pair.volume, lab_wiring.CARD_MOUNT) in args and "--network" in args
    assert args[args.index("--network") + 1] == topo.mgmt and args[args.index("--ip") + 1] == topo.bmc_ip(pair)
    # a change of image, folder or command re-creates the container (its config label differs)
    labels = [a for a in args if a.startswith(lab_bmc.CONFIG_LABEL)]
    other = [a for a in lab_bmc._run_args(topo, pair, "img:2", tmp_path) if a.startswith(lab_bmc.CONFIG_LABEL)]
    assert labels and other and labels != other
