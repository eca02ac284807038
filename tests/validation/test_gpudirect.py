"""Conformance, stage fabric: GPUDirect RDMA and NCCL on GPU hosts.

- PCIe ACS is off (ACS Control 0) on every PCI bridge with ACS (``lspci -D -vvv``), and the boot-time unit that
  turns it off again exists, on every GPU host that has GPUs;
- nvidia_peermem is loaded, registered (``/sys/kernel/mm/memory_peers/nv_mem/version``) and loaded at boot
  (``/etc/modules-load.d/nvidia-peermem.conf``) on every GPU host that has GPUs;
- ``/etc/nccl.conf`` exists and agrees with the NIC: NCCL_IB_TC carries the DSCP of the ToS RDMA-CM uses on each
  NIC it names (``cma_roce_tos``), NCCL_IB_GID_INDEX is a RoCE v2 GID of each of them (``show_gids``), every NIC it
  names exists, and the shell profile exports the same values;
- where the inventory sets ``gpu_host_ats`` (true/false), the card's Next Boot ``ATS_ENABLED`` (``mlxconfig q``)
  matches it (a firmware reset activates it: playbooks/firmware.yml). Where no selected GPU host sets it, the check
  is marked not applicable (deselected and reported as such by conftest) rather than passing silently.

Files are read under the node's files root, /sys under its card root (tests/fleet_roots.py).
"""

from __future__ import annotations

import shlex

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lspci import parse_lspci
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import parse_mlxconfig_query, split_value
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import parse_show_gids
from fleet_roots import card_path, files_path
from gpu_inventory import skip_if_declared_gpu_less

pytestmark = pytest.mark.stage("fabric")

FIX_PEERMEM = "fix: gpu_host_peermem / playbooks/fabric.yml --tags gpudirect"
FIX_NCCL = "fix: nccl_* variables and bluefleet_roce / playbooks/fabric.yml --tags nccl"


def _require_gpus(node) -> None:
    """GPUDirect checks apply to a GPU host with GPUs. Declared GPU-less (bluefleet_gpus: 0): not applicable.
    Otherwise nvidia-smi must list the GPUs: a driver that does not answer (rc 9 "couldn't communicate with the
    NVIDIA driver") or no GPU found fails the check with the tool's own words, never passes it."""
    skip_if_declared_gpu_less(node)
    res = node.read("nvidia-smi")
    said = (res.stderr.strip() or res.stdout.strip())[-300:]
    assert res.rc == 0 and "No devices were found" not in res.stdout + res.stderr, (
        f"{node.name}: `nvidia-smi` failed (rc={res.rc}): {said}; a host of gpu_hosts needs its NVIDIA driver "
        "answering for GPUDirect RDMA; fix: install / load the NVIDIA driver (nvidia-smi must list the GPUs), or "
        "declare the host GPU-less with bluefleet_gpus: 0 in the inventory")


def _read(node, path: str):
    res = node.read("cat %s" % shlex.quote(files_path(node, path)))
    return res.stdout if res.rc == 0 else None


def _settings(text: str, export: bool = False) -> dict[str, str]:
    out = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if export:
            line = line.removeprefix("export ")
        name, _sep, value = line.partition("=")
        out[name.strip()] = " ".join(shlex.split(value)) if export else value.strip()
    return out


def _nccl_conf(node) -> dict[str, str]:
    text = _read(node, "/etc/nccl.conf")
    assert text is not None, f"{node.name}: {files_path(node, '/etc/nccl.conf')} is missing, expected the NCCL " \
                             f"settings; {FIX_NCCL}"
    return _settings(text)


def _hcas(node, conf: dict[str, str]) -> list[tuple[str, int]]:
    value = conf.get("NCCL_IB_HCA", "")
    assert value, f"{node.name}: NCCL_IB_HCA is not set in nccl.conf, expected the NICs closest to the GPUs; {FIX_NCCL}"
    out = []
    for item in value.lstrip("^=").split(","):
        dev, _sep, port = item.partition(":")
        out.append((dev, int(port or 1)))
    return out


def test_peermem_loaded_and_registered(gpu_host):
    _require_gpus(gpu_host)
    lsmod = gpu_host.read("lsmod")
    assert lsmod.rc == 0, f"{gpu_host.name}: lsmod failed: {lsmod.stderr}"
    loaded = any(line.split()[:1] == ["nvidia_peermem"] for line in lsmod.stdout.splitlines())
    assert loaded, f"{gpu_host.name}: nvidia_peermem is not loaded, expected loaded; {FIX_PEERMEM}"
    sysfs = card_path(gpu_host, "/sys/kernel/mm/memory_peers/nv_mem/version")
    registered = gpu_host.read("cat %s" % shlex.quote(sysfs)).rc == 0
    assert registered, (
        f"{gpu_host.name}: nvidia_peermem is loaded but {sysfs} "
        f"is missing (NCCL says 'GPU Direct RDMA Disabled'), expected registered; rebuild the NVIDIA driver against "
        f"the running OFED, then {FIX_PEERMEM}")


def test_peermem_loaded_at_boot(gpu_host):
    _require_gpus(gpu_host)
    text = _read(gpu_host, "/etc/modules-load.d/nvidia-peermem.conf") or ""
    listed = [line.split("#", 1)[0].strip().replace("-", "_") for line in text.splitlines()]
    assert "nvidia_peermem" in listed, (
        f"{gpu_host.name}: /etc/modules-load.d/nvidia-peermem.conf does not list nvidia_peermem, expected it loaded "
        f"at boot; fix: gpu_host_peermem_persist / playbooks/fabric.yml --tags gpudirect")


def test_acs_off_on_the_bridges(gpu_host):
    _require_gpus(gpu_host)
    res = gpu_host.read("lspci -D -vvv")
    assert res.rc == 0, f"{gpu_host.name}: lspci -D -vvv failed: {res.stderr}"
    bridges = [d for d in parse_lspci(res.stdout)["devices"]
               if d["class"] == "PCI bridge" and d.get("acs") and d["acs"].get("ctl_word") is not None]
    on = {d["slot"]: "%04x" % d["acs"]["ctl_word"] for d in bridges if d["acs"]["ctl_word"]}
    assert not on, (f"{gpu_host.name}: PCIe ACS is on for bridges {on}, expected ACS Control 0000 on the bridges "
                    f"between GPUs and NICs; fix: gpu_host_acs_disable / playbooks/fabric.yml --tags acs")
    unit = _read(gpu_host, "/etc/systemd/system/bluefleet-pci-acs.service") or ""
    missing = [d["slot"] for d in bridges if f"-s {d['slot']} ECAP_ACS+6.w=0000" not in unit]
    assert not missing, (f"{gpu_host.name}: the boot-time unit bluefleet-pci-acs.service does not turn ACS off on "
                         f"{missing}, expected every bridge (ACS comes back on at reboot); "
                         f"fix: playbooks/fabric.yml --tags acs")


def test_nccl_tc_matches_the_nic_tos(gpu_host):
    conf = _nccl_conf(gpu_host)
    assert conf.get("NCCL_IB_TC", "").isdigit(), \
        f"{gpu_host.name}: NCCL_IB_TC is {conf.get('NCCL_IB_TC')!r}, expected DSCP << 2; {FIX_NCCL}"
    tc = int(conf["NCCL_IB_TC"])
    for dev, port in _hcas(gpu_host, conf):
        res = gpu_host.read(f"cma_roce_tos -d {shlex.quote(dev)} -p {port}")
        assert res.rc == 0 and res.stdout.strip().isdigit(), \
            f"{gpu_host.name}: cma_roce_tos -d {dev} -p {port} failed ({res.stdout}{res.stderr}); {FIX_NCCL}"
        tos = int(res.stdout.strip())
        assert tc >> 2 == tos >> 2, (
            f"{gpu_host.name}: NCCL_IB_TC {tc} carries DSCP {tc >> 2} but {dev} port {port} uses ToS {tos} "
            f"(DSCP {tos >> 2}), expected the same DSCP; fix: bluefleet_roce_dscp / playbooks/fabric.yml")


def test_nccl_gid_index_is_a_roce_v2_gid(gpu_host):
    conf = _nccl_conf(gpu_host)
    index = conf.get("NCCL_IB_GID_INDEX", "")
    assert index.isdigit(), f"{gpu_host.name}: NCCL_IB_GID_INDEX is {index!r}, expected a GID index; {FIX_NCCL}"
    for dev, port in _hcas(gpu_host, conf):
        res = gpu_host.read(f"show_gids {shlex.quote(dev)} {port}")
        assert res.rc == 0, f"{gpu_host.name}: show_gids {dev} {port} failed: {res.stderr}; {FIX_NCCL}"
        gids = [g for g in parse_show_gids(res.stdout)["gids"] if g["dev"] == dev and g["port"] == port]
        assert gids, f"{gpu_host.name}: NCCL_IB_HCA names {dev}, which has no GID (not a RoCE NIC here); {FIX_NCCL}"
        entry = next((g for g in gids if g["index"] == int(index)), None)
        v2 = [g["index"] for g in gids if g["ver"] == "v2"]
        assert entry is not None and entry["ver"] == "v2", (
            f"{gpu_host.name}: NCCL_IB_GID_INDEX {index} on {dev} port {port} is "
            f"{'absent' if entry is None else entry['ver']}, expected a RoCE v2 GID (v2 indexes: {v2}); "
            f"fix: bluefleet_roce_address / playbooks/fabric.yml")


def test_nccl_profile_matches_the_conf(gpu_host):
    conf = _nccl_conf(gpu_host)
    text = _read(gpu_host, "/etc/profile.d/nccl.sh")
    assert text is not None, \
        f"{gpu_host.name}: /etc/profile.d/nccl.sh is missing, expected the NCCL exports; {FIX_NCCL}"
    exported = _settings(text, export=True)
    assert exported == conf, (f"{gpu_host.name}: /etc/profile.d/nccl.sh exports {exported}, expected the values of "
                              f"/etc/nccl.conf {conf}; {FIX_NCCL}")


FIX_ATS = "fix: gpu_host_ats / playbooks/fabric.yml --tags gpudirect"


def _ats_wanted(hostvars) -> bool | None:
    value = hostvars.get("gpu_host_ats")
    if value is None or isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on", "y", "t")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """test_ats_as_configured has nothing to check where no GPU host sets ``gpu_host_ats``: then it carries the
    conftest's not-applicable mark (deselected and listed in the summary) instead of passing on every host.

    A mark on the test function reaches every item made from it (the fixture ``gpu_host`` is still parametrized
    by conftest); a host without the variable in an inventory where another host has it is not applicable (N/A:
    nothing configured, nothing to compare)."""
    if metafunc.function.__name__ != "test_ats_as_configured":
        return
    from testinfra.utils.ansible_runner import AnsibleRunner

    runner = AnsibleRunner.get_runner(metafunc.config.option.ansible_inventory)
    if not any(_ats_wanted(runner.get_variables(h)) is not None for h in runner.get_hosts("gpu_hosts")):
        pytest.mark.bluefleet_not_applicable(metafunc.function)


def test_ats_as_configured(gpu_host):
    want = _ats_wanted(gpu_host.vars)
    if want is None:
        pytest.skip(f"not applicable: {gpu_host.name} does not set gpu_host_ats (ATS is left as the card has it)")
    device = str(gpu_host.vars.get("gpu_host_ats_device") or "")
    cmd = ("mlxconfig -d %s q ATS_ENABLED" % shlex.quote(device)) if device else "mlxconfig q ATS_ENABLED"
    res = gpu_host.run(cmd)
    assert res.rc == 0, f"{gpu_host.name}: {cmd} failed ({res.stdout}{res.stderr}); {FIX_ATS}"
    devices = parse_mlxconfig_query(res.stdout)["devices"]
    assert len(devices) == 1, (f"{gpu_host.name}: {cmd} shows {len(devices)} cards, expected one; set "
                               f"gpu_host_ats_device to the card for ATS; {FIX_ATS}")
    entry = devices[0]["params"].get("ATS_ENABLED")
    assert entry is not None, (f"{gpu_host.name}: {devices[0].get('device')} does not show ATS_ENABLED, expected "
                               f"{want} (firmware without ATS: leave gpu_host_ats unset); {FIX_ATS}")
    found = split_value(entry["next_boot"])[1]
    assert found == int(want), (f"{gpu_host.name}: {devices[0].get('device')} ATS_ENABLED (next boot) is "
                                f"{entry['next_boot']}, expected {'True(1)' if want else 'False(0)'}; {FIX_ATS}")
