"""Preflight's read answers roce_qos's and files' checks: dpu_info's sections roce and files, and the filters
bluefleet.dpu.roce_plan and bluefleet.dpu.files_plan.

The filters must agree with the modules: on the same machine (fake tool outputs of test_roce_qos, a sysfs and a file
tree under tmp_path) a plan is in state exactly when the module in check mode changes nothing, and names the same
changes. A read that cannot answer (made for other netdevs, a netdev it could not read, the node changed after it)
answers nothing, so the module runs.
"""

from __future__ import annotations

import os

import pytest
from ansible_collections.bluefleet.dpu.plugins.filter.files_plan import files_plan
from ansible_collections.bluefleet.dpu.plugins.filter.roce_plan import roce_plan
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing import _tooling
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info, files, roce_qos
from fake_tools import FakeRunner, fixture_text
from test_roce_qos import AFTER, ARGS, GIDS, IBDEV2NETDEV, PCP, make_sysfs

MST = ("mst", "status", "-v")
OPTIONS = dict(ARGS, rdma_facts=True)
del OPTIONS["netdev"]


def machine(qos_p0=AFTER, qos_p1=AFTER, mode="RoCE v2\n", tos="104\n"):
    """Tool answers of a host with two RoCE netdevs, p0 (mlx5_0) and p1 (mlx5_1)."""
    answers = {MST: (0, fixture_text("mst-status", "bf2-host-mst-status-v-fixture"), ""),
               ("ibdev2netdev",): (0, IBDEV2NETDEV, ""), ("show_gids",): (0, GIDS, "")}
    for netdev, ibdev, qos in (("p0", "mlx5_0", qos_p0), ("p1", "mlx5_1", qos_p1)):
        answers[("mlnx_qos", "-i", netdev)] = (0, qos, "")
        answers[("cma_roce_mode", "-d", ibdev, "-p", "1")] = (0, mode, "")
        answers[("cma_roce_tos", "-d", ibdev, "-p", "1")] = (0, tos, "")
    return answers


def read_roce(run_module, answers, root, **args):
    failed, result = run_module(dpu_info, dict({"filter": ["roce"], "fs_root": str(root)}, **args),
                                FakeRunner(answers))
    assert not failed, result
    return result


def check_roce(run_module, answers, root, **options):
    runner = FakeRunner(answers)
    failed, result = run_module(roce_qos, dict(OPTIONS, sysfs_root=str(root), **options), runner, check_mode=True)
    return failed, result


def options_for(root, **extra):
    return dict(OPTIONS, fs_root=str(root), **extra)


CASES = {
    "every setting as asked": ({}, {}),
    "trust and PFC off on p0": ({"qos_p0": PCP}, {}),
    "RoCE v1 and ToS 0 on both": ({"mode": "IB/RoCE v1\n", "tos": "0\n"}, {}),
    "MTU 1500 on p1": ({}, {"p1": {"mtu": 1500}}),
    "ECN off on p0": ({}, {"p0": {"ecn": ()}}),
    "CNP DSCP 46 on p1": ({}, {"p1": {"cnp": 46}}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_plan_from_the_read_is_roce_qos_check(run_module, tmp_path, case):
    tools, sysfs = CASES[case]
    for netdev in ("p0", "p1"):
        make_sysfs(tmp_path, netdev=netdev, **dict({"mtu": 9000, "ecn": (3,)}, **sysfs.get(netdev, {})))
    answers = machine(**tools)
    read = read_roce(run_module, answers, tmp_path)
    failed, module = check_roce(run_module, answers, tmp_path)
    assert not failed, module
    plan = roce_plan(read, options_for(tmp_path))
    assert plan["answered"] is True and plan["why"] == ""
    assert plan["changes"] == module["changes"]
    assert plan["in_state"] is (not module["changed"])
    assert plan["rdma"] == module["rdma"]
    assert (case == "every setting as asked") is plan["in_state"]


def test_the_read_runs_each_tool_once_per_netdev_and_keeps_errors(run_module, tmp_path):
    make_sysfs(tmp_path, netdev="p0", mtu=9000, ecn=(3,))
    make_sysfs(tmp_path, netdev="p1", mtu=9000, with_ecn=False)  # p1: no ECN sysfs (a representor)
    runner = FakeRunner(machine())
    failed, result = run_module(dpu_info, {"filter": ["roce"], "fs_root": str(tmp_path)}, runner)
    assert not failed, result
    assert runner.cmd[:3] == [list(MST), ["ibdev2netdev"], ["show_gids"]]
    assert runner.cmd.count(["mlnx_qos", "-i", "p0"]) == 1 and runner.cmd.count(["ibdev2netdev"]) == 1
    section = result["roce"]
    assert section["asked"] == {"netdevs": [], "address": "", "fs_root": str(tmp_path), "port": 1}
    assert section["netdevs"]["p0"]["settings"]["mtu"] == 9000 and section["netdevs"]["p0"]["ibdev"] == "mlx5_0"
    assert "ECN per priority needs an mlx5 PF" in section["netdevs"]["p1"]["error"]
    plan = roce_plan(result, options_for(tmp_path))
    assert plan["answered"] is False and plan["in_state"] is False and "netdev p1" in plan["why"]
    failed, module = check_roce(run_module, machine(), tmp_path)
    assert failed and "ECN per priority needs an mlx5 PF" in module["msg"]  # the module says it, when it runs


def test_roce_is_not_in_the_default_and_a_missing_tool_is_unavailable(run_module, tmp_path):
    answers = machine()
    runner = FakeRunner(answers)
    failed, result = run_module(dpu_info, {"filter": ["dpu_os"], "fs_root": str(tmp_path)}, runner)
    assert not failed and "roce" not in result and ["ibdev2netdev"] not in runner.cmd
    failed, result = run_module(dpu_info, {"filter": ["roce"], "fs_root": str(tmp_path)},
                                FakeRunner(answers, missing={"ibdev2netdev"}))
    assert not failed, result
    assert result["roce"]["available"] is False and "ibdev2netdev" in result["roce"]["reason"]
    plan = roce_plan(result, options_for(tmp_path))
    assert plan == {"answered": False, "in_state": False,
                    "why": "preflight's read has no roce section: %s" % result["roce"]["reason"]}


@pytest.fixture
def in_state(run_module, tmp_path):
    for netdev in ("p0", "p1"):
        make_sysfs(tmp_path, netdev=netdev, mtu=9000, ecn=(3,))
    read = read_roce(run_module, machine(), tmp_path)
    assert roce_plan(read, options_for(tmp_path))["in_state"] is True
    return read


@pytest.mark.parametrize("extra, kwargs, words", [
    ({"netdevs": ["p0"]}, {}, "the read was made for netdevs [] and address '', not ['p0'] and ''"),
    ({"address": "192.168.10.2"}, {}, "not [] and '192.168.10.2'"),
    ({"port": 2}, {}, "the read was made under"),
    ({}, {"reset": True}, "the card or its driver was reset in this run after the read"),
    ({"mtu": 12000}, {}, "roce_qos refuses the options: configure RoCE QoS of every RDMA netdev failed: mtu 12000"),
    ({"trust": "both"}, {}, "roce_qos refuses the options: value of trust must be one of"),
])
def test_a_read_that_cannot_answer_says_why(in_state, tmp_path, extra, kwargs, words):
    plan = roce_plan(in_state, options_for(tmp_path, **extra), **kwargs)
    assert plan["answered"] is False and plan["in_state"] is False and words in plan["why"], plan


def test_a_change_after_the_read_makes_it_stale(in_state, tmp_path):
    at = in_state["read_at"]
    assert roce_plan(in_state, options_for(tmp_path), changed_at=at - 5)["in_state"] is True  # an earlier run's
    plan = roce_plan(in_state, options_for(tmp_path), changed_at=at + 0.001)
    assert plan["answered"] is False and "a bluefleet module changed the node after the read" in plan["why"]
    no_time = {k: v for k, v in in_state.items() if k != "read_at"}
    assert "there is no read of the node from this run" in roce_plan(no_time, options_for(tmp_path))["why"]
    assert "there is no read" in roce_plan({}, options_for(tmp_path))["why"]


def test_roce_qos_refuses_without_its_options(in_state, tmp_path):
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="the options must be roce_qos's options"):
        roce_plan(in_state, None)
    plan = roce_plan(in_state, dict(options_for(tmp_path), rdma_facts=False, netdev="p0", netdevs=None))
    assert plan["answered"] is False and "rdma_facts" in plan["why"]


# ------------------------------------------------------------------------------------------------ files
FILES = [{"path": "/etc/bluefleet/roce-qos.env", "content": "ROCE_TRUST=dscp\n", "mode": "0644"},
         {"path": "/usr/local/sbin/bluefleet-roce-qos", "content": "#!/bin/sh\nexit 0\n", "mode": "0755"}]
LINKS = [{"path": "/etc/systemd/system/multi-user.target.wants/bluefleet-roce-qos.service",
          "src": "../bluefleet-roce-qos.service"}]
PATHS = [e["path"] for e in FILES + LINKS]


def write_tree(root):
    for entry in FILES:
        path = root / entry["path"].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(entry["content"])
        path.chmod(int(entry["mode"], 8))
    link = root / LINKS[0]["path"].lstrip("/")
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(LINKS[0]["src"])


BREAKS = {
    "as asked": lambda root: None,
    "content": lambda root: (root / "etc/bluefleet/roce-qos.env").write_text("ROCE_TRUST=pcp\n"),
    "mode": lambda root: (root / "usr/local/sbin/bluefleet-roce-qos").chmod(0o644),
    "missing file": lambda root: (root / "etc/bluefleet/roce-qos.env").unlink(),
    "link elsewhere": lambda root: (os.remove(root / LINKS[0]["path"].lstrip("/")),
                                    (root / LINKS[0]["path"].lstrip("/")).symlink_to("/dev/null")),
    "link missing": lambda root: os.remove(root / LINKS[0]["path"].lstrip("/")),
    "a directory where a file goes": lambda root: ((root / "etc/bluefleet/roce-qos.env").unlink(),
                                                   (root / "etc/bluefleet/roce-qos.env").mkdir()),
}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_the_files_plan_from_the_read_is_the_files_module_check(run_module, tmp_path, case):
    write_tree(tmp_path)
    BREAKS[case](tmp_path)
    runner = FakeRunner({MST: (0, fixture_text("mst-status", "bf2-host-mst-status-v-fixture"), "")})
    failed, read = run_module(dpu_info, {"filter": ["files"], "files": PATHS, "files_root": str(tmp_path)}, runner)
    assert not failed, read
    plan = files_plan(read, FILES, LINKS, fs_root=str(tmp_path))
    failed, module = run_module(files, {"files": FILES, "links": LINKS, "fs_root": str(tmp_path)},
                                FakeRunner({}), check_mode=True)
    assert plan["answered"] is True
    if failed:  # the module refuses a directory in the way: the plan sends it there to say so
        assert case == "a directory where a file goes" and plan["changes"] == [FILES[0]["path"]]
        return
    assert plan["in_state"] is (not module["changed"]) and (case == "as asked") is plan["in_state"]
    assert sorted(plan["changes"]) == sorted(module["changed_paths"])


def test_the_files_read_reports_no_content_and_cannot_answer_for_other_paths(run_module, tmp_path):
    write_tree(tmp_path)
    runner = FakeRunner({MST: (0, fixture_text("mst-status", "bf2-host-mst-status-v-fixture"), "")})
    failed, read = run_module(dpu_info, {"filter": ["files"], "files": PATHS[:1], "files_root": str(tmp_path)},
                              runner)
    assert not failed and runner.cmd == [list(MST)]
    state = read["files"]["paths"][PATHS[0]]
    assert state["file"] is True and state["mode"] == "0644" and state["link"] is None
    assert "ROCE_TRUST" not in str(read)  # digests only: the content stays on the machine
    plan = files_plan(read, FILES, [], fs_root=str(tmp_path))
    assert plan["answered"] is False and plan["why"] == "%s was not read" % PATHS[1]
    plan = files_plan(read, FILES[:1], [], fs_root=str(tmp_path / "other"))
    assert plan["answered"] is False and "were read under" in plan["why"]
    assert files_plan(read, FILES[:1], [], fs_root=str(tmp_path), reset=True)["answered"] is False
    assert files_plan(read, FILES[:1], [], fs_root=str(tmp_path))["in_state"] is True


# ------------------------------------------------------------------------------------------------ the change time
def test_a_module_that_changed_the_node_says_when(run_module, tmp_path):
    make_sysfs(tmp_path, netdev="p0", mtu=1500, ecn=(3,))
    args = {"netdev": "p0", "mtu": 9000, "sysfs_root": str(tmp_path)}
    failed, checked = run_module(roce_qos, args, FakeRunner({}), check_mode=True)
    assert not failed and checked["changed"] is True and "ansible_facts" not in checked
    failed, applied = run_module(roce_qos, args, FakeRunner({}))
    assert not failed and applied["changed"] is True
    assert applied["ansible_facts"]["bluefleet_changed_at"] > 0
    failed, again = run_module(roce_qos, args, FakeRunner({}))
    assert not failed and again["changed"] is False and "ansible_facts" not in again


def test_with_change_time_keeps_other_facts():
    class Module:
        check_mode = False

    result = _tooling.with_change_time(Module(), {"changed": True, "ansible_facts": {"x": 1}})
    assert result["ansible_facts"]["x"] == 1 and "bluefleet_changed_at" in result["ansible_facts"]
    Module.check_mode = True
    assert _tooling.with_change_time(Module(), {"changed": True}) == {"changed": True}
