"""Conformance, stage fabric: the NCCL all-reduce through the RoCE NIC reaches the bus bandwidth the inventory asks.

On every GPU host that sets ``bluefleet_nccl_net_min_busbw`` (GB/s), ``all_reduce_perf`` (nccl-tests) runs on all
its GPUs with ``NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1``: NCCL may use neither NVLink/PCIe P2P nor shared memory, so
every ring hop goes through its network transport, the NICs of ``NCCL_IB_HCA`` in ``/etc/nccl.conf`` (NCCL env
docs, NCCL_SHM_DISABLE). That path is the one multi-node training takes; its bus bandwidth at the largest message
must reach the threshold. Below it, the check names what it finds of the factors that cost bandwidth there, each
with its fix, read with the machine's own tools:

- nvidia_peermem not loaded or not registered (GPUDirect RDMA off: NCCL stages through host memory);
- PCIe ACS on a bridge (``lspci -D -vvv``; P2P redirected through the root complex, NCCL troubleshooting guide);
- ``NCCL_IB_GID_INDEX`` not a RoCE v2 GID of the NIC (``show_gids``; v1 has no DSCP, the traffic leaves PFC);
- PFC off on the priority the traffic gets (``mlnx_qos``: DSCP of ``NCCL_IB_TC`` through dscp2prio);
- NIC-GPU affinity: GPUs farther from the NIC (``nvidia-smi topo -m``) than ``NCCL_NET_GDR_LEVEL`` allows for
  GPUDirect RDMA.

A host without the variable: not applicable (nothing to hold the run to); declared GPU-less (``bluefleet_gpus:
0``): not applicable. The run takes seconds on real GPUs (-b 8M -e 128M); it sends traffic only through this host's
own NIC.
"""

from __future__ import annotations

import shlex

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lsmod import parse_lsmod
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lspci import parse_lspci
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlnx_qos import parse_mlnx_qos
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nccl import parse_all_reduce
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nvidia_smi import parse_nvidia_smi, parse_topo
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import parse_show_gids
from fleet_roots import card_path, files_path
from gpu_inventory import skip_if_declared_gpu_less

pytestmark = pytest.mark.stage("fabric")

MIN_VAR = "bluefleet_nccl_net_min_busbw"
NET_ENV = "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")  # NCCL_NET_GDR_LEVEL words, nearest first (NCCL env docs)
SMI_TO_GDR = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}
FIX_PEERMEM = "fix: gpu_host_peermem / playbooks/fabric.yml --tags gpudirect"
FIX_ACS = "fix: gpu_host_acs_disable / playbooks/fabric.yml --tags acs"
FIX_NCCL = "fix: nccl_* variables and bluefleet_roce / playbooks/fabric.yml --tags nccl"
FIX_PFC = "fix: bluefleet_roce_priority / playbooks/fabric.yml --tags roce"


def _threshold(node) -> float:
    value = node.vars.get(MIN_VAR)
    if value is None or str(value).strip() in ("", "0"):
        pytest.skip(f"not applicable: {node.name} does not set {MIN_VAR} (no bus bandwidth to hold the NCCL "
                    "all-reduce through the NIC to)")
    try:
        minimum = float(value)
    except (TypeError, ValueError):
        minimum = -1.0
    assert minimum > 0, f"{node.name}: {MIN_VAR} is {value!r}, expected GB/s (a number > 0); fix: the inventory"
    return minimum


def _gpu_count(node) -> int:
    skip_if_declared_gpu_less(node)
    res = node.read("nvidia-smi")
    said = (res.stderr.strip() or res.stdout.strip())[-300:]
    assert res.rc == 0, (f"{node.name}: `nvidia-smi` failed (rc={res.rc}): {said}; the all-reduce needs the GPUs; "
                         "fix: install / load the NVIDIA driver, or declare the host GPU-less (bluefleet_gpus: 0)")
    count = len(parse_nvidia_smi(res.stdout)["gpus"])
    assert count, f"{node.name}: nvidia-smi lists no GPU; fix: the NVIDIA driver, or bluefleet_gpus: 0"
    return count


def _nccl_conf(node) -> dict[str, str]:
    path = files_path(node, "/etc/nccl.conf")
    res = node.read("cat %s" % shlex.quote(path))
    assert res.rc == 0, f"{node.name}: {path} is missing, expected the NCCL settings; {FIX_NCCL}"
    out = {}
    for raw in res.stdout.splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            name, _sep, value = line.partition("=")
            out[name.strip()] = value.strip()
    return out


def _hcas(conf: dict[str, str]) -> list[tuple[str, int]]:
    out = []
    for item in conf.get("NCCL_IB_HCA", "").lstrip("^=").split(","):
        dev, _sep, port = item.partition(":")
        if dev.strip():
            out.append((dev.strip(), int(port or 1)))
    return out


def _peermem(node) -> list[str]:
    lsmod = node.read("lsmod")
    loaded = lsmod.rc == 0 and "nvidia_peermem" in parse_lsmod(lsmod.stdout)["modules"]
    sysfs = card_path(node, "/sys/kernel/mm/memory_peers/nv_mem/version")
    if not loaded:
        return [f"GPUDirect RDMA: nvidia_peermem is not loaded (NCCL stages through host memory); {FIX_PEERMEM}"]
    if node.read("cat %s" % shlex.quote(sysfs)).rc != 0:
        return [f"GPUDirect RDMA: nvidia_peermem is loaded but not registered ({sysfs} missing); {FIX_PEERMEM}"]
    return []


def _acs(node) -> list[str]:
    res = node.read("lspci -D -vvv")
    if res.rc != 0:
        return [f"PCIe ACS: lspci -D -vvv failed ({res.stderr.strip()[-200:]}), ACS not read"]
    on = {d["slot"]: "%04x" % d["acs"]["ctl_word"] for d in parse_lspci(res.stdout)["devices"]
          if d["class"] == "PCI bridge" and d.get("acs") and d["acs"].get("ctl_word")}
    return [f"PCIe ACS is on for bridges {on} (P2P redirected through the root complex); {FIX_ACS}"] if on else []


def _gid_and_pfc(node, conf: dict[str, str]) -> list[str]:
    out = []
    index = conf.get("NCCL_IB_GID_INDEX", "")
    tc = int(conf["NCCL_IB_TC"]) if conf.get("NCCL_IB_TC", "").isdigit() else 0
    for dev, port in _hcas(conf):
        res = node.read(f"show_gids {shlex.quote(dev)} {port}")
        gids = [g for g in parse_show_gids(res.stdout)["gids"] if g["dev"] == dev and g["port"] == port] \
            if res.rc == 0 else []
        entry = next((g for g in gids if index.isdigit() and g["index"] == int(index)), None)
        if entry is None or entry["ver"] != "v2":
            out.append(f"GID index: NCCL_IB_GID_INDEX {index or '(unset)'} on {dev} port {port} is "
                       f"{'absent' if entry is None else 'RoCE ' + entry['ver']}, expected a RoCE v2 GID (v1 "
                       f"carries no DSCP: the traffic lands on priority 0); {FIX_NCCL}")
        netdev = next((g["netdev"] for g in gids if g.get("netdev")), None)
        if netdev is None:
            continue
        qos_res = node.read(f"mlnx_qos -i {shlex.quote(netdev)}")
        if qos_res.rc != 0:
            out.append(f"PFC: mlnx_qos -i {netdev} failed ({qos_res.stderr.strip()[-200:]}), PFC not read")
            continue
        qos = parse_mlnx_qos(qos_res.stdout)
        dscp = tc >> 2 if entry is not None and entry["ver"] == "v2" else 0
        prio = (qos["dscp2prio"].get(str(dscp), 0) if qos["trust"] == "dscp" else 0)
        enabled = qos["pfc"].get("enabled") or [0] * 8
        if not enabled[prio]:
            out.append(f"PFC is off on priority {prio} of {netdev}, the priority NCCL's traffic gets (NCCL_IB_TC "
                       f"{tc}, DSCP {dscp}, trust {qos['trust']}): lossy, retransmissions; {FIX_PFC}")
    return out


def _affinity(node, conf: dict[str, str]) -> list[str]:
    level = (conf.get("NCCL_NET_GDR_LEVEL") or "PXB").upper()
    if level not in GDR_LEVELS:
        return [f"NIC-GPU affinity: NCCL_NET_GDR_LEVEL {level} is not one of {', '.join(GDR_LEVELS)}; {FIX_NCCL}"]
    res = node.read("nvidia-smi topo -m")
    if res.rc != 0:
        return [f"NIC-GPU affinity: nvidia-smi topo -m failed ({res.stdout.strip()[-200:]}), affinity not read"]
    topo = parse_topo(res.stdout)
    nic_names = {dev: nic for nic, dev in topo["nics"].items()}
    far = {}
    for dev, _port in _hcas(conf):
        nic = nic_names.get(dev)
        for gpu in (d for d in topo["devices"] if d.startswith("GPU")):
            word = topo["matrix"].get(gpu, {}).get(nic, "")
            if word in SMI_TO_GDR and GDR_LEVELS.index(SMI_TO_GDR[word]) > GDR_LEVELS.index(level):
                far.setdefault(f"{word} from {dev}", []).append(gpu)
    if far:
        return [f"NIC-GPU affinity: {far} are farther than NCCL_NET_GDR_LEVEL {level} (GPUDirect RDMA off for them); "
                f"fix: nccl_gdr_level (empty derives it from the topology) / playbooks/fabric.yml --tags nccl"]
    return []


def test_nccl_allreduce_through_the_nic(gpu_host):
    minimum = _threshold(gpu_host)
    gpus = _gpu_count(gpu_host)
    conf = _nccl_conf(gpu_host)
    cmd = f"env {NET_ENV} all_reduce_perf -b 8M -e 128M -f 2 -g {gpus}"
    res = gpu_host.run(cmd)
    result = parse_all_reduce(res.stdout) if res.rc == 0 else {"rows": [], "errors": []}
    assert res.rc == 0 and result["rows"] and not result["errors"], (
        f"{gpu_host.name}: `{cmd}` failed (rc={res.rc}): {(res.stderr.strip() or res.stdout.strip())[-300:]}; "
        f"found: {'; '.join(_gid_and_pfc(gpu_host, conf)) or 'no GID or PFC problem'}; {FIX_NCCL}")
    last = max(result["rows"], key=lambda r: r["size"])
    findings = [] if last["busbw"] >= minimum else (
        _peermem(gpu_host) + _acs(gpu_host) + _gid_and_pfc(gpu_host, conf) + _affinity(gpu_host, conf))
    assert last["busbw"] >= minimum, (
        f"{gpu_host.name}: NCCL all-reduce through the NIC ({cmd}) reaches {last['busbw']:.2f} GB/s bus bandwidth at "
        f"{last['size']} B, expected at least {minimum:g} ({MIN_VAR}); found: "
        + ("; ".join(findings) if findings else "none of peermem, ACS, GID index, PFC, NIC-GPU affinity is off; "
           "fix: run it with NCCL_DEBUG=INFO and compare ib_write_bw (playbooks/fabric_benchmark.yml)"))
