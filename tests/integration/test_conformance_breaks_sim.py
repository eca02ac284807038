"""The conformance suite (tests/validation) proves what it claims.

- Break one thing: ``BREAKS`` maps every check of the suite to a hand-made break on one node of a sim fleet (a
  tool call or a file edit as an operator would make it, or an inventory value that disagrees with the machine)
  and to the exact checks (per host) it must fail. One test converges one fleet, applies every break (each on its
  own node, or on a node whose other breaks touch other checks), runs the suite once and asserts that exactly the
  expected checks fail, each message naming the host, what was found and the fix, and that every other check
  passes (or is N/A where ``EXPECTED_NA`` says why). Checks that need a node's own network namespace (``links``)
  cannot run against local-connection twins: their rows are in ``LAB_BREAKS`` (the break, applied in the lab).
- Coverage: the suite is collected (``--collect-only``) and every check must have a row, so no check can be added
  without its proof.
- No silent pass: every check function asserts on every path it can leave by (an ``assert``, a ``raise``,
  ``pytest.skip("not applicable: ...")`` or a helper of its module that does so on every path); a bare
  ``return`` or a loop that may run zero times before the end is a check that can paint a green cell for
  something nobody looked at. Read from the source (AST), no fleet needed.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ansible_env, make_sim_inventory, run_playbook, twin_tool
from lab.lab_breaks import LAB_BREAKS

ROOT = Path(__file__).resolve().parents[2]
PAIRS = 7  # a node per NCCL factor (peermem, ACS, GID index, PFC, ToS, affinity): their breaks all fail the one
# all-reduce check of their host
HBN_DIGEST = "sha256:" + "5d0c3f2a9b7e41c8" * 4  # the digest the inventory pins doca-hbn to on sim02-dpu
OTHER_DIGEST = "sha256:" + "e3b0c44298fc1c14" * 4  # what an edit outside bluefleet puts in its manifest
SUITE = ROOT / "tests" / "validation"
CHECK_FILES = sorted(SUITE.glob("test_*.py"))

ASSERTS, ESCAPES, FALLS = "asserts", "escapes", "falls"  # every path asserts / a path returns unasserted / falls off
_PYTEST_STOPS = {"skip", "fail", "xfail", "exit"}


class _Flow:
    """Does a statement list assert on every path? Conservative: a loop may run zero times, a branch that does not
    assert lets the path through, a ``return`` whose value calls no asserting helper escapes."""

    def __init__(self, asserting: set[str]):
        self.asserting = asserting

    def _calls_assert(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Lambda):
                continue
            if isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Name) and func.id in self.asserting:
                    return True
                if (isinstance(func, ast.Attribute) and func.attr in _PYTEST_STOPS
                        and isinstance(func.value, ast.Name) and func.value.id == "pytest"):
                    return True
        return False

    def block(self, stmts: list[ast.stmt]) -> str:
        for stmt in stmts:
            result = self.stmt(stmt)
            if result != FALLS:
                return result
        return FALLS

    def stmt(self, stmt: ast.stmt) -> str:
        if isinstance(stmt, ast.Assert | ast.Raise):
            return ASSERTS
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return FALLS
        if isinstance(stmt, ast.Return):
            return ASSERTS if self._calls_assert(stmt.value) else ESCAPES
        if isinstance(stmt, ast.If):
            if self._calls_assert(stmt.test):
                return ASSERTS
            results = {self.block(stmt.body), self.block(stmt.orelse)}
            if ESCAPES in results:
                return ESCAPES
            return ASSERTS if results == {ASSERTS} else FALLS
        if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            head = stmt.iter if isinstance(stmt, ast.For | ast.AsyncFor) else stmt.test
            if self._calls_assert(head):
                return ASSERTS
            if isinstance(stmt, ast.For) and isinstance(head, ast.Tuple | ast.List) and head.elts:
                return self.block(stmt.body)  # a literal, non-empty sequence: the body runs
            return ESCAPES if ESCAPES in (self.block(stmt.body), self.block(stmt.orelse)) else FALLS
        if isinstance(stmt, ast.With | ast.AsyncWith):
            if any(self._calls_assert(item.context_expr) for item in stmt.items):
                return ASSERTS
            return self.block(stmt.body)
        if isinstance(stmt, ast.Try):
            body = self.block(stmt.body + stmt.orelse)
            handlers = [self.block(h.body) for h in stmt.handlers]
            final = self.block(stmt.finalbody)
            if final == ASSERTS:
                return ASSERTS
            if ESCAPES in [body, *handlers, final]:
                return ESCAPES
            return ASSERTS if body == ASSERTS and all(h == ASSERTS for h in handlers) else FALLS
        return ASSERTS if self._calls_assert(stmt) else FALLS


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def unasserted_paths(source: str) -> dict[str, str]:
    """Check function name -> how it can end without asserting (``escapes`` or ``falls``)."""
    funcs = _functions(ast.parse(source))
    asserting: set[str] = set()
    while True:  # helpers of the module that assert on every path, to a fixed point
        flow = _Flow(asserting)
        more = {name for name, fn in funcs.items()
                if not name.startswith("test_") and flow.block(fn.body) == ASSERTS} - asserting
        if not more:
            break
        asserting |= more
    flow = _Flow(asserting)
    out = {}
    for name, fn in funcs.items():
        if name.startswith("test_"):
            result = flow.block(fn.body)
            if result != ASSERTS:
                out[name] = result
    return out


def test_the_silent_pass_detector_sees_returns_and_empty_loops():
    sample = '''
import pytest

def _ok(node):
    assert node

def _maybe(node):
    if node:
        return 1
    assert node

def test_bare_return(node):
    if not node:
        return
    assert node

def test_loop_only(nodes):
    for n in nodes:
        assert n

def test_helper(node):
    _ok(node)

def test_helper_that_can_return(node):
    _maybe(node)

def test_not_applicable(node):
    if not node:
        pytest.skip("not applicable: x")
    for n in node:
        assert n
    assert node

def test_try(node):
    try:
        value = int(node)
    except ValueError:
        raise AssertionError("bad") from None
    assert value
'''
    assert unasserted_paths(sample) == {"test_bare_return": ESCAPES, "test_loop_only": FALLS,
                                        "test_helper_that_can_return": FALLS}


@pytest.mark.parametrize("path", CHECK_FILES, ids=[p.name for p in CHECK_FILES])
def test_no_check_can_end_without_asserting(path):
    found = unasserted_paths(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(ROOT)}: check(s) that can end without asserting (a green cell for "
                       f"something nobody checked): {found}; fix: assert, or pytest.skip('not applicable: <why>') "
                       "where the check does not apply to the host")


# ---- the break table ---------------------------------------------------------------------------------------------
def _services_default() -> list[dict]:
    return yaml.safe_load((ROOT / "roles/doca_services/defaults/main.yml").read_text())["doca_services_list"]


def _hbn_pinned_by_digest() -> list[dict]:
    out = []
    for entry in _services_default():
        svc = dict(entry)
        if svc["name"] == "hbn":
            svc.pop("version")
            svc["image"] = "nvcr.io/nvidia/doca/doca_hbn@" + HBN_DIGEST
        out.append(svc)
    return out


# The NCCL all-reduce through the NIC must reach 20 GB/s on every GPU host: 80 % of the twin's 200 Gb/s port (25 GB/s;
# a converged twin host measures 24.2), so any one factor of the model (x0.6 lossy, x0.5 staged, x0.3 ACS) fails it.
NCCL_NET_MIN = {"bluefleet_nccl_net_min_busbw": 20}

# Inventory values the fleet is converged with (what an operator's inventory says), per host.
CONVERGE_VARS = {
    **{f"sim{i:02d}": dict(NCCL_NET_MIN) for i in range(1, PAIRS + 1)},
    # ATS asked on sim01 only: the ATS check is N/A on the other GPU hosts
    "sim01": {"gpu_host_ats": True, **NCCL_NET_MIN},
    # the host's MTU differs from its DPU's 9000: each end conforms
    "sim03": {"bluefleet_roce_mtu": 4200, **NCCL_NET_MIN},
    "sim02-dpu": {"doca_services_list": _hbn_pinned_by_digest()},
    "sim03-dpu": {"doca_services_list": [s for s in _services_default() if s["name"] != "snap"],
                  "doca_services_absent": ["snap"]},
}


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, f"{path}: {old!r} not found, the break cannot be made"
    path.write_text(text.replace(old, new))


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _tool(*argv):
    def apply(root: Path, state: Path) -> None:
        proc = twin_tool(root, *argv)
        assert proc.returncode == 0, f"{' '.join(argv)} on {root.name}: {proc.stdout}{proc.stderr}"
    return apply


def _file(rel, old=None, new=None, text=None, remove=False):
    def apply(root: Path, state: Path) -> None:
        if remove:
            (root / rel).unlink()
        elif text is not None:
            _write(root, rel, text(state) if callable(text) else text)
        else:
            _edit(root, rel, old, new)
    return apply


NCCL_NET = "test_fabric_benchmark.py::test_nccl_allreduce_through_the_nic[{}]"

# One row per break: the node, what is done to it (the way an operator breaks it), inventory values set after the
# converge (an inventory that no longer agrees with the machine), the checks that must fail (module::check[host])
# and words each of their messages must hold (what was found).
BREAKS = [
    {"node": "sim01-dpu", "do": [_tool("mlnx_qos", "-i", "p0", "--trust", "pcp")],
     "fails": {"test_fabric_qos.py::test_roce_trust_dscp[sim01-dpu]": "p0 trust is pcp, expected dscp"}},
    {"node": "sim02-dpu", "do": [_tool("mlnx_qos", "-i", "p0", "--pfc", "0,0,0,0,0,0,0,0")],
     "fails": {"test_fabric_qos.py::test_roce_pfc_on_priority[sim02-dpu]": "PFC is on priorities [], expected [3]"}},
    {"node": "sim02", "do": [_file("sys/class/net/ens1f0np0/ecn/roce_np/enable/3", text="0\n")],
     "fails": {"test_fabric_qos.py::test_roce_ecn_on_priority[sim02]": "ECN is off on priority 3"}},
    {"node": "sim03-dpu", "do": [_tool("cma_roce_mode", "-d", "mlx5_0", "-p", "1", "-m", "1")],
     "fails": {"test_fabric_qos.py::test_roce_mode_v2[sim03-dpu]": "RoCE mode is v1, expected v2"}},
    {"node": "sim01-dpu", "do": [_tool("cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "0")],
     "fails": {"test_fabric_qos.py::test_roce_tos[sim01-dpu]": "RoCE ToS is 0, expected 104"}},
    {"node": "sim01", "do": [_file("sys/class/net/ens1f0np0/mtu", text="1500\n")],  # `ip link set ... mtu 1500`
     "fails": {"test_fabric_qos.py::test_roce_mtu[sim01]": "MTU is 1500, expected 9000"}},
    {"node": "sim03", "do": [],  # CONVERGE_VARS: bluefleet_roce_mtu 4200 on the host, 9000 on its DPU
     "fails": {"test_fabric_qos.py::test_roce_link_ends_agree[sim03+sim03-dpu]": "mtu differs on the link"}},
    {"node": "sim04", "vars": {"bluefleet_roce_address": "10.99.0.9"},  # an address no RoCE netdev holds
     "fails": {"test_fabric_qos.py::test_roce_gid_index[sim04]": "no RoCE v2 GID holds 10.99.0.9"}},
    {"node": "sim02", "do": [_file("etc/bluefleet/roce-qos.env", remove=True)],
     "fails": {"test_fabric_qos.py::test_roce_boot_unit[sim02]": "roce-qos.env is missing"}},
    {"node": "sim01", "do": [_tool("modprobe", "-r", "nvidia_peermem")],
     "fails": {"test_gpudirect.py::test_peermem_loaded_and_registered[sim01]": "nvidia_peermem is not loaded",
               NCCL_NET.format("sim01"): "GPUDirect RDMA: nvidia_peermem is not loaded"}},
    {"node": "sim01", "do": [_file("etc/modules-load.d/nvidia-peermem.conf", remove=True)],
     "fails": {"test_gpudirect.py::test_peermem_loaded_at_boot[sim01]": "does not list nvidia_peermem"}},
    {"node": "sim05", "do": [_tool("setpci", "-s", "0000:17:00.0", "ECAP_ACS+6.w=005d")],
     "fails": {"test_gpudirect.py::test_acs_off_on_the_bridges[sim05]": "PCIe ACS is on for bridges",
               NCCL_NET.format("sim05"): "PCIe ACS is on for bridges {'0000:17:00.0': '005d'}"}},
    {"node": "sim02", "do": [_tool("dpusim", "fault", "set", "gpu_driver_down")],  # nvidia-smi: rc 9
     "fails": {f"test_gpudirect.py::{name}[sim02]": "couldn't communicate with the NVIDIA driver"
               for name in ("test_peermem_loaded_and_registered", "test_peermem_loaded_at_boot",
                            "test_acs_off_on_the_bridges")}
     | {NCCL_NET.format("sim02"): "couldn't communicate with the NVIDIA driver"}},
    # NCCL's traffic class carries DSCP 40, which dscp2prio maps to priority 5, where PFC is off: lossy
    {"node": "sim06", "do": [_file("etc/nccl.conf", "NCCL_IB_TC=104", "NCCL_IB_TC=160"),
                             _file("etc/profile.d/nccl.sh", "NCCL_IB_TC=104", "NCCL_IB_TC=160")],
     "fails": {"test_gpudirect.py::test_nccl_tc_matches_the_nic_tos[sim06]": "NCCL_IB_TC 160 carries DSCP 40",
               NCCL_NET.format("sim06"): "PFC is off on priority 5 of ens1f0np0"}},
    {"node": "sim03", "do": [_file("etc/nccl.conf", "NCCL_IB_GID_INDEX=1", "NCCL_IB_GID_INDEX=0"),
                             _file("etc/profile.d/nccl.sh", "NCCL_IB_GID_INDEX=1", "NCCL_IB_GID_INDEX=0")],
     "fails": {"test_gpudirect.py::test_nccl_gid_index_is_a_roce_v2_gid[sim03]": "NCCL_IB_GID_INDEX 0 on mlx5_0",
               NCCL_NET.format("sim03"): "GID index: NCCL_IB_GID_INDEX 0 on mlx5_0 port 1 is RoCE v1"}},
    # PFC switched off on the host's port (`mlnx_qos --pfc` by hand): the RoCE priority 3 is lossy
    {"node": "sim07", "do": [_tool("mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,0,0,0,0,0")],
     "fails": {"test_fabric_qos.py::test_roce_pfc_on_priority[sim07]": "PFC is on priorities [], expected [3]",
               NCCL_NET.format("sim07"): "PFC is off on priority 3 of ens1f0np0"}},
    # GPUDirect RDMA only up to PIX, but the twin's GPUs are NODE / SYS from the card: NIC-GPU affinity
    {"node": "sim04", "do": [_file("etc/nccl.conf", "NCCL_NET_GDR_LEVEL=SYS", "NCCL_NET_GDR_LEVEL=PIX"),
                             _file("etc/profile.d/nccl.sh", "NCCL_NET_GDR_LEVEL=SYS", "NCCL_NET_GDR_LEVEL=PIX")],
     "fails": {NCCL_NET.format("sim04"): "are farther than NCCL_NET_GDR_LEVEL PIX (GPUDirect RDMA off for them)"}},
    {"node": "sim01", "do": [_file("etc/profile.d/nccl.sh", "NCCL_IB_TC=104", "NCCL_IB_TC=96")],
     "fails": {"test_gpudirect.py::test_nccl_profile_matches_the_conf[sim01]": "/etc/profile.d/nccl.sh exports"}},
    # the host is restricted (stage 6): its card's configuration changes from the DPU's Arm side
    {"node": "sim01-dpu", "do": [_tool("mlxconfig", "-d", "/dev/mst/mt41692_pciconf0", "-y", "set",
                                       "ATS_ENABLED=0")],
     "fails": {"test_gpudirect.py::test_ats_as_configured[sim01]": "ATS_ENABLED (next boot) is False(0)"}},
    {"node": "sim02-dpu", "do": [_tool("devlink", "dev", "eswitch", "set", "pci/0000:03:00.0", "mode", "legacy")],
     "fails": {"test_switchdev.py::test_eswitch_mode[sim02-dpu]": "is legacy, expected switchdev",
               "test_switchdev.py::test_switchdev_has_representors[sim02-dpu]": "has no host PF representor"}},
    {"node": "sim03-dpu", "do": [_file("etc/mellanox/mlnx-bf.conf", 'IPSEC_FULL_OFFLOAD="yes"',
                                       'IPSEC_FULL_OFFLOAD="no"')],
     "fails": {"test_switchdev.py::test_ipsec_full_offload_set_and_in_effect[sim03-dpu]":
               "IPSEC_FULL_OFFLOAD in"}},
    {"node": "sim01-dpu", "do": [_file("etc/swanctl/conf.d/bluefleet.conf", text="connections {\n}\n")],
     "fails": {"test_ipsec.py::test_swanctl_configuration_rendered[sim01-dpu]": "exists although no DPU has"}},
    {"node": "sim01-dpu", "do": [_file("etc/nftables.d/bluefleet-firewall.nft", text="# emptied by hand\n")],
     "fails": {"test_firewall.py::test_ruleset_present[sim01-dpu]": "does not define table netdev"}},
    {"node": "sim02-dpu", "do": [_file("etc/kubelet.d/doca_hbn.yaml", HBN_DIGEST, OTHER_DIGEST)],
     "fails": {"test_services.py::test_services_run_at_their_pinned_version[sim02-dpu]":
               f"runs image digest {OTHER_DIGEST}, expected the pinned {HBN_DIGEST}"}},
    {"node": "sim02-dpu", "do": [_tool("dpusim", "kubelet", "crash", "doca-firefly")],
     "fails": {"test_services.py::test_services_have_not_restarted[sim02-dpu]": "restarted 1 times"}},
    {"node": "sim03-dpu", "do": [_file("etc/kubelet.d/doca_snap.yaml", text=lambda state: (
        state / "sim01-dpu/etc/kubelet.d/doca_snap.yaml").read_text())],  # the manifest copied back by hand
     "fails": {"test_services.py::test_removed_services_are_gone[sim03-dpu]":
               "['snap'] are in doca_services_absent"}},
    {"node": "sim03-dpu", "do": [_tool("dpusim", "kubelet", "crash", "doca-telemetry-service", "--stay-down")],
     "fails": {"test_services.py::test_telemetry_twin_metrics_page[sim03-dpu]": "does not answer",
               "test_services.py::test_services_run_at_their_pinned_version[sim03-dpu]": "is CONTAINER_EXITED"}},
    {"node": "sim04-dpu", "do": [_file("etc/kubelet.d/doca_snap.yaml", remove=True)],
     "fails": {"test_services.py::test_snap_namespace_visible[sim04+sim04-dpu]": "no Ready pod doca-snap",
               "test_services.py::test_services_run_at_their_pinned_version[sim04-dpu]": "service snap: no Ready pod"}},
    {"node": "sim01-dpu", "do": [_tool("dpusim", "kubelet", "crash", "doca-hbn", "--stay-down")],  # stays down
     "fails": {"test_services.py::test_hbn_routes_present[sim01-dpu]": "no running container doca-hbn",
               "test_services.py::test_services_run_at_their_pinned_version[sim01-dpu]": "is CONTAINER_EXITED"}},
    {"node": "sim04-dpu", "vars": {"doca_services_ptp_states": ["SLAVE"]},  # the grandmaster is gone: still MASTER
     "fails": {"test_services.py::test_firefly_ptp_state[sim04-dpu]": "PTP portState"}},
    {"node": "sim02-dpu", "do": [_tool("mlxprivhost", "-d", "/dev/mst/mt41692_pciconf0", "p")],
     "fails": {"test_zero_trust.py::test_host_restricted_from_the_dpu_side[sim02-dpu]":
               "privilege level (mlxprivhost q) is PRIVILEGED, expected RESTRICTED"}},
    {"node": "sim04-dpu", "vars": {"zero_trust_disable_tracer": True},
     "fails": {"test_zero_trust.py::test_port_function_flags_are_stored[sim04-dpu]":
               "flag disable_tracer is FALSE, expected TRUE"}},
    {"node": "sim01-dpu", "vars": {"zero_trust_secure_boot_expected": ["Secured"]},
     "fails": {"test_zero_trust.py::test_secure_boot_lifecycle[sim01-dpu]": "lifecycle is GA Secured"}},
    {"node": "sim04", "do": [_tool("dpusim", "fault", "set", "garbage_output", "--tool", "mst")],
     "fails": {"test_wiring.py::test_mst_shows_card[sim04]": "lists no device",
               "test_wiring.py::test_pair_sees_one_card[sim04+sim04-dpu]": "lists no device"}},
    {"node": "sim03-dpu", "vars": {"bluefleet_rshim": ""},
     "fails": {"test_wiring.py::test_pairing_vars[sim03-dpu]": "bluefleet_rshim is not set"}},
]

# Checks N/A on some hosts of this fleet, and why (they must be N/A there, never passed).
EXPECTED_NA = {
    **{f"test_gpudirect.py::test_ats_as_configured[sim{i:02d}]": "does not set gpu_host_ats"
       for i in range(2, PAIRS + 1)},
    **{f"test_ipsec.py::test_swanctl_configuration_rendered[sim{i:02d}-dpu]": "no DPU has bluefleet_uplink_address"
       for i in range(2, PAIRS + 1)},
    "test_services.py::test_snap_namespace_visible[sim03+sim03-dpu]": "does not ask for DOCA SNAP",
}

# Checks whose break cannot be one node's in a shared sim fleet, with the break and where it is proven.
SEPARATE_BREAKS = {
    "test_wiring.py::test_selection_has_hosts": "a run whose --hosts selects no gpu_hosts / dpus member: proven by "
                                                "test_empty_selection_fails below (a fleet-wide break)",
    "test_wiring.py::test_twin_role_matches_group": "`dpusim init --role dpu` on a node of gpu_hosts: every other "
                                                    "check of that node fails too; proven by "
                                                    "test_twin_role_break_fails_that_check below",
}

# Checks that need a node's own network namespace (links): their breaks live in tests/lab/lab_breaks.py (LAB_BREAKS),
# applied in Molecule's converged lab by tests/lab/run_lab_breaks.py (molecule/default/verify.yml).


def _expected_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    for row in BREAKS:
        for key, words in row["fails"].items():
            assert key not in out, f"two breaks fail {key}: they are not independent"
            out[key] = words
    return out


def _row_checks() -> set[str]:
    ids = {re.sub(r"\[.*\]$", "", key) for key in _expected_failures()}
    return ids | set(SEPARATE_BREAKS) | set(LAB_BREAKS)


def _suite(inventory: Path, tmp_path: Path, *extra: str,
           env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    evidence = tmp_path / ("evidence-%d.json" % len(list(tmp_path.glob("evidence-*.json"))))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests/validation"),
         "--hosts=ansible://all", "--ansible-inventory=%s" % inventory, "--bluefleet-evidence=%s" % evidence,
         *extra], cwd=str(ROOT), env=env or ansible_env(), capture_output=True, text=True, timeout=1800, check=False)
    data = json.loads(evidence.read_text()) if evidence.is_file() else {}
    return proc, data


def _records(data: dict) -> dict[str, dict]:
    return {r["nodeid"].split("tests/validation/", 1)[-1]: r for r in data.get("checks", [])}


def test_every_check_has_a_break_row(tmp_path, collection_link):
    """--collect-only over a sim inventory: every check the suite has (collected, or deselected as having no
    applicable host here) has a row in the break table."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    proc, data = _suite(inventory, tmp_path, "--collect-only")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    collected = [line.split("tests/validation/", 1)[-1] for line in proc.stdout.splitlines()
                 if line.startswith("tests/validation/") and "::" in line]
    names = {re.sub(r"\[.*\]$", "", n) for n in collected + [x.split("tests/validation/", 1)[-1]
                                                             for x in data.get("not_applicable", [])]}
    assert len(names) >= 40, (len(names), proc.stdout[-2000:])
    missing = sorted(names - _row_checks())
    assert not missing, (f"checks without a break row in tests/integration/test_conformance_breaks_sim.py: {missing};"
                         " add the break that makes each fail (BREAKS, or LAB_BREAKS for links checks)")
    stale = sorted(_row_checks() - names)
    assert not stale, f"break rows for checks the suite no longer has: {stale}"


def _set_vars(inventory: Path, host: str, values: dict) -> None:
    """host_vars/<host>.yml beside the inventory (Ansible's host_group_vars plugin reads it)."""
    path = inventory.parent / "host_vars" / f"{host}.yml"
    path.parent.mkdir(exist_ok=True)
    current = yaml.safe_load(path.read_text()) if path.is_file() else {}
    current.update(values)
    path.write_text(yaml.safe_dump(current, sort_keys=False))


def converge_fleet(base: Path) -> Path:
    """A sim fleet of PAIRS pairs, converged by site.yml with CONVERGE_VARS; its inventory."""
    inventory = make_sim_inventory(base / "inventory", nodes=PAIRS)
    for host, values in CONVERGE_VARS.items():
        _set_vars(inventory, host, values)
    run_playbook("site.yml", inventory, "-e", "bluefleet_validate=false")
    return inventory


def suite_without_dpusim(inventory: Path, base: Path) -> None:
    """The suite as on real machines: `dpusim` is not on any PATH (the card's tool shims stay in each twin's bin/),
    the twin-only checks deselected (-m 'not twin'); every remaining check of the pairs without an inventory
    disagreement (sim03's MTU) passes or is N/A."""
    view = base / "no-dpusim"
    view.mkdir()
    inv = view / "fleet.sim.yml"
    inv.write_text(inventory.read_text().replace("state_dir: state", "state_dir: %s" % (inventory.parent / "state")))
    hosts = [f"sim{i:02d}{side}" for i in (1, 2, 4) for side in ("", "-dpu")]
    system_path = "/usr/local/bin:/usr/bin:/bin"
    for host in hosts:
        root = inventory.parent / "state" / host
        values = dict(CONVERGE_VARS.get(host, {}))
        values["bluefleet_environment"] = {"DPUSIM_ROOT": str(root), "PATH": f"{root}/bin:{system_path}"}
        _set_vars(inv, host, values)
        probe = subprocess.run(["env", f"PATH={root}/bin:{system_path}", "sh", "-c", "command -v dpusim"],
                               capture_output=True, text=True, check=False)
        assert probe.returncode != 0, f"dpusim is reachable on {host}'s PATH: {probe.stdout}"
    env = dict(ansible_env(), PATH=system_path)  # the suite itself: no .venv/bin on PATH either
    proc, data = _suite(inv, view, "-m", "not twin", *(f"--hosts=ansible://{h}" for h in hosts), env=env)
    records = _records(data)
    assert records, proc.stdout[-3000:] + proc.stderr[-2000:]
    bad = {k: r["outcome"] + ": " + r["message"][-300:] for k, r in records.items()
           if r["outcome"] not in ("passed", "not_applicable")}
    assert not bad and proc.returncode == 0, (bad, proc.stdout[-3000:])
    ran = [c["command"] for r in records.values() for c in r["commands"]]
    assert ran and not any(c.split()[0] == "dpusim" for c in ran), "a check ran dpusim on a machine"


def break_and_check(inventory: Path, base: Path) -> None:
    """Apply every break, run the suite once, and judge every check."""
    state = inventory.parent / "state"
    for row in BREAKS:
        for apply in row.get("do", []):
            apply(state / row["node"], state)
        if row.get("vars"):
            _set_vars(inventory, row["node"], row["vars"])

    proc, data = _suite(inventory, base)
    records = _records(data)
    assert records, proc.stdout[-4000:] + proc.stderr[-2000:]
    expected = _expected_failures()
    failed = {k: r for k, r in records.items() if r["outcome"] in ("failed", "error")}
    assert sorted(failed) == sorted(expected), (
        f"unexpected failures: {sorted(set(failed) - set(expected))}\n"
        f"breaks not caught: {sorted(set(expected) - set(failed))}\n"
        + "\n".join(f"{k}: {failed[k]['message'][-400:]}" for k in sorted(set(failed) - set(expected))))
    for key, words in expected.items():
        message = failed[key]["message"]
        hosts = re.search(r"\[(.*)\]$", key).group(1).split("+")
        assert any(h in message for h in hosts), f"{key}: the message does not name the host: {message}"
        assert words in message, f"{key}: the message does not say what was found ({words!r}): {message}"
        assert "fix" in message.lower(), f"{key}: the message does not name the fix: {message}"
    na = {k: r for k, r in records.items() if r["outcome"] == "not_applicable"}
    assert sorted(na) == sorted(EXPECTED_NA), sorted(na)
    for key, words in EXPECTED_NA.items():
        assert words in na[key]["message"], na[key]["message"]
    others = {k: r["outcome"] for k, r in records.items() if k not in expected and k not in EXPECTED_NA}
    assert others and set(others.values()) == {"passed"}, {k: v for k, v in others.items() if v != "passed"}
    assert proc.returncode == 1


@pytest.mark.slow
def test_each_break_fails_exactly_its_checks(tmp_path_factory, collection_link):
    base = tmp_path_factory.mktemp("breaks")
    inventory = converge_fleet(base)
    suite_without_dpusim(inventory, base)  # the converged fleet first, as a machine would be checked
    break_and_check(inventory, base)


def test_empty_selection_fails(tmp_path, collection_link):
    """The fleet-wide break of test_selection_has_hosts: a --hosts pattern that selects no member of gpu_hosts or
    dpus."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    proc, data = _suite(inventory, tmp_path, "-k", "test_selection_has_hosts", "--hosts=ansible://localhost")
    records = _records(data)
    assert proc.returncode == 1 and [r["outcome"] for r in records.values()] == ["failed"], proc.stdout[-2000:]
    (message,) = [r["message"] for r in records.values()]
    assert "has no host in gpu_hosts or dpus" in message and "check --hosts" in message


def test_twin_role_break_fails_that_check(tmp_path, collection_link):
    """The break of test_twin_role_matches_group: the twin of a GPU host made a DPU (its node.json role)."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    proc, _data = _suite(inventory, tmp_path, "-k", "test_twin_role_matches_group")
    assert proc.returncode == 0, proc.stdout[-2000:]
    node = inventory.parent / "state" / "sim01" / "node.json"
    data = json.loads(node.read_text())
    data["role"] = "dpu"
    node.write_text(json.dumps(data))
    proc, data = _suite(inventory, tmp_path, "-k", "test_twin_role_matches_group")
    outcomes = {k: r["outcome"] for k, r in _records(data).items()}
    assert outcomes == {"test_wiring.py::test_twin_role_matches_group[sim01]": "failed",
                        "test_wiring.py::test_twin_role_matches_group[sim01-dpu]": "passed"}, proc.stdout[-2000:]
    message = _records(data)["test_wiring.py::test_twin_role_matches_group[sim01]"]["message"]
    assert "sim01 is in group gpu_hosts but its twin has role 'dpu'" in message and "fix the inventory" in message
