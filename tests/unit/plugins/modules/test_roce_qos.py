"""roce_qos: exact ordered argv against tool outputs, sysfs in a temporary root.

Tool outputs:
* ``mlnx_qos -i p0`` before: the corpus fixture (mlnx_qos/fixture-tabs-pcp: trust pcp, PFC off, no tc lines).
* ``mlnx_qos -i p0`` after (AFTER): laid out as shared/corpus/mlnx_qos/FORMAT-from-source.md prints trust dscp with
  the default DSCP table (the same table as corpus mlnx_qos/cx-dscp-ets-pfc5-partial for priorities 0..4),
  PFC on priority 3 and one tc line per priority (identity map) with its ETS share.
* ``cma_roce_mode``: ``IB/RoCE v1`` / ``RoCE v2`` (show_gids/FORMAT-from-source.md); ``cma_roce_tos``: the
  number (the kernel's configfs show, see tests/unit/fixtures/parsers/cma-roce-tos).
* ``ibdev2netdev``: ``<ibdev> port <n> ==> <netdev> (<Up|Down>)`` (corpus ibdev2netdev, before ``column -t``).
* ``show_gids`` (rdma_facts): the corpus fixture (show_gids/cx7-vf-net1-container: link-local GID at 0/1, the IPv4
  address at 2 (v1) / 3 (v2)) with its rows given to p0 (mlx5_0, 192.168.10.2) and p1 (mlx5_1, 192.168.11.2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import rdma_info, roce_qos
from fake_tools import fixture_text

PCP = fixture_text("mlnx-qos", "fixture-tabs-pcp")
BW = [8, 7, 7, 50, 7, 7, 7, 7]
AFTER = (
    "DCBX mode: OS controlled\n"
    "Priority trust state: dscp\n"
    "dscp2prio mapping:\n"
    + "".join("\tprio:%d dscp:%s,\n" % (p, ",".join("%02d" % d for d in range(p * 8 + 7, p * 8 - 1, -1)))
              for p in range(8))
    + "default priority:\n"
    "Receive buffer size (bytes): 262016,0,0,0,0,0,0,0,max_buffer_size=2097152\n"
    "Cable len: 7\n"
    "PFC configuration:\n"
    "\tpriority    0   1   2   3   4   5   6   7\n"
    "\tenabled     0   0   0   1   0   0   0   0   \n"
    "\tbuffer      0   0   0   0   0   0   0   0   \n"
    + "".join("tc: %d ratelimit: unlimited, tsa: ets, bw: %d%%\n\t priority:  %d\n" % (tc, BW[tc], tc)
              for tc in range(8))
)
IBDEV2NETDEV = "mlx5_0 port 1 ==> p0 (Up)\nmlx5_1 port 1 ==> p1 (Up)\n"
ARGS = {"netdev": "p0", "trust": "dscp", "pfc": [3], "dscp2prio": [{"dscp": 26, "priority": 3}],
        "prio_tc": list(range(8)), "tsa": ["ets"] * 8, "tc_bw": BW, "ecn": [3], "data_dscp": 26, "cnp_dscp": 48,
        "roce_mode": "v2", "tos": 104, "mtu": 9000}
QOS = ["mlnx_qos", "-i", "p0"]
MODE = ["cma_roce_mode", "-d", "mlx5_0", "-p", "1"]
TOS = ["cma_roce_tos", "-d", "mlx5_0", "-p", "1"]
APPLY = [
    (QOS + ["--trust", "dscp"], 0, AFTER, ""),
    (QOS + ["--dscp2prio", "set,26,3"], 0, AFTER, ""),
    (QOS + ["--pfc", "0,0,0,1,0,0,0,0", "-p", "0,1,2,3,4,5,6,7", "-s", "ets,ets,ets,ets,ets,ets,ets,ets",
            "-t", "8,7,7,50,7,7,7,7"], 0, AFTER, ""),
    (MODE + ["-m", "2"], 0, "RoCE v2\n", ""),
    (TOS + ["-t", "104"], 0, "104\n", ""),
]
READ_BEFORE = [(["ibdev2netdev"], 0, IBDEV2NETDEV, ""), (QOS, 0, PCP, ""), (MODE, 0, "IB/RoCE v1\n", ""),
               (TOS, 0, "0\n", "")]
READ_AFTER = [(QOS, 0, AFTER, ""), (MODE, 0, "RoCE v2\n", ""), (TOS, 0, "104\n", "")]


class Ordered:
    """Answers the commands of ``steps`` in that order; anything else fails the test."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.cmd = []

    def run(self, argv, timeout=None):
        argv = list(argv)
        self.cmd.append(argv)
        assert self.steps, "unexpected command %r" % (argv,)
        want, rc, out, err = self.steps.pop(0)
        assert argv == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, err)


def make_sysfs(root: Path, netdev="p0", mtu=1500, ecn=(), cnp=48, with_ecn=True) -> Path:
    d = root / "sys" / "class" / "net" / netdev
    d.mkdir(parents=True)
    (d / "mtu").write_text("%d\n" % mtu)
    if with_ecn:
        for proto in ("roce_np", "roce_rp"):
            (d / "ecn" / proto / "enable").mkdir(parents=True)
            for p in range(8):
                (d / "ecn" / proto / "enable" / str(p)).write_text("1\n" if p in ecn else "0\n")
        (d / "ecn" / "roce_np" / "cnp_dscp").write_text("%d\n" % cnp)
    return d


def sysfs_state(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_text() for p in sorted(d.rglob("*")) if p.is_file()}


def test_apply_sets_everything_once_in_order_and_reads_back(run_module, tmp_path):
    d = make_sysfs(tmp_path)
    runner = Ordered(READ_BEFORE + APPLY + READ_AFTER)
    failed, result = run_module(roce_qos, dict(ARGS, sysfs_root=str(tmp_path)), runner)
    assert not failed, result
    assert runner.steps == [], "commands not run: %r" % runner.steps
    assert result["changed"] is True and result["persistent"] is False and result["reset_required"] == "none"
    assert result["changes"] == [k for k in roce_qos.KEYS if k != "cnp_dscp"]  # CNP DSCP was 48 already
    assert result["ibdev"] == "mlx5_0" and result["qos"]["trust"] == "dscp" and result["qos"]["pfc"] == [3]
    assert result["previous"]["trust"] == "pcp" and result["previous"]["roce_mode"] == "v1"
    assert result["diff"]["before"]["mtu"] == 1500 and result["diff"]["after"]["mtu"] == 9000
    files = sysfs_state(d)
    assert files["mtu"] == "9000\n" and files["ecn/roce_np/cnp_dscp"] == "48\n"
    for proto in ("roce_np", "roce_rp"):
        assert [files["ecn/%s/enable/%d" % (proto, p)] for p in range(8)] == ["0\n"] * 3 + ["1\n"] + ["0\n"] * 4
    assert result["cmd"] == [list(step[0]) for step in READ_BEFORE + APPLY + READ_AFTER]


def test_nothing_to_do_reads_only(run_module, tmp_path):
    d = make_sysfs(tmp_path, mtu=9000, ecn=(3,))
    before = sysfs_state(d)
    steps = [(["ibdev2netdev"], 0, IBDEV2NETDEV, "")] + READ_AFTER
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(ARGS, sysfs_root=str(tmp_path)), runner)
    assert not failed, result
    assert result["changed"] is False and result["changes"] == [] and runner.steps == []
    assert sysfs_state(d) == before and result["diff"]["before"] == result["diff"]["after"]


def test_check_mode_reports_and_changes_nothing(run_module, tmp_path):
    d = make_sysfs(tmp_path)
    before = sysfs_state(d)
    runner = Ordered(READ_BEFORE)
    failed, result = run_module(roce_qos, dict(ARGS, sysfs_root=str(tmp_path)), runner, check_mode=True)
    assert not failed, result
    assert result["changed"] is True and runner.steps == [] and sysfs_state(d) == before
    assert result["diff"]["before"]["trust"] == "pcp" and result["diff"]["after"]["trust"] == "dscp"
    assert result["diff"]["after"]["ecn"] == [3] and result["diff"]["after"]["tos"] == 104


@pytest.mark.parametrize("change, words", [
    ({"pfc": [9]}, "pfc priority 9 is out of range: use 0..7"),
    ({"dscp2prio": [{"dscp": 26, "priority": 8}]}, "priority 8 is out of range"),
    ({"cnp_dscp": 26}, "dscp and cnp_dscp are both 26"),
    ({"mtu": 10240}, "mtu 10240 is above what the port supports (max 9978)"),
    ({"netdev": "p7"}, "netdev p7 does not exist"),
    ({"tc_bw": [10] * 8}, "must sum to 100"),
])
def test_bad_input_fails_before_any_command_or_write(run_module, tmp_path, change, words):
    d = make_sysfs(tmp_path)
    before = sysfs_state(d)
    runner = Ordered([])
    failed, result = run_module(roce_qos, dict(ARGS, sysfs_root=str(tmp_path), **change), runner)
    assert failed and words in result["msg"], result["msg"]
    assert runner.cmd == [] and sysfs_state(d) == before
    assert result["msg"].startswith("configure RoCE QoS of ")


def test_unknown_netdev_names_the_ones_that_exist(run_module, tmp_path):
    make_sysfs(tmp_path)
    make_sysfs(tmp_path, netdev="p1")
    failed, result = run_module(roce_qos, dict(ARGS, sysfs_root=str(tmp_path), netdev="eth9"), Ordered([]))
    assert failed and "name one of: p0, p1" in result["msg"]


def test_a_tool_failure_stops_the_run_and_names_the_command(run_module, tmp_path):
    d = make_sysfs(tmp_path)
    steps = READ_BEFORE + [(QOS + ["--trust", "dscp"], 1, "", "Priority trust state is not supported on your system")]
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(ARGS, sysfs_root=str(tmp_path)), runner)
    assert failed and result["msg"].startswith("set QoS of p0 with mlnx_qos failed")
    assert "not supported" in result["msg"] and result["rc"] == 1
    assert sysfs_state(d)["mtu"] == "1500\n", "nothing after the failing command ran"


def test_a_value_that_does_not_stick_fails(run_module, tmp_path):
    make_sysfs(tmp_path)
    args = {"netdev": "p0", "trust": "dscp", "sysfs_root": str(tmp_path)}
    runner = Ordered([(QOS, 0, PCP, ""), (QOS + ["--trust", "dscp"], 0, PCP, ""), (QOS, 0, PCP, "")])
    failed, result = run_module(roce_qos, args, runner)
    assert failed and "read back after the change, trust is 'pcp', expected 'dscp'" in result["msg"]


def test_ecn_needs_the_mlx5_ecn_sysfs(run_module, tmp_path):
    make_sysfs(tmp_path, netdev="pf0hpf", with_ecn=False)
    failed, result = run_module(roce_qos, {"netdev": "pf0hpf", "ecn": [3], "sysfs_root": str(tmp_path)}, Ordered([]))
    assert failed and "ECN per priority needs an mlx5 PF or uplink netdev" in result["msg"]


def test_only_given_options_are_managed(run_module, tmp_path):
    """MTU alone: no mlnx_qos, no cma tool, no ibdev2netdev."""
    d = make_sysfs(tmp_path)
    runner = Ordered([])
    failed, result = run_module(roce_qos, {"netdev": "p0", "mtu": 4200, "sysfs_root": str(tmp_path)}, runner)
    assert not failed and result["changed"] and result["qos"] == {"mtu": 4200} and runner.cmd == []
    assert sysfs_state(d)["mtu"] == "4200\n"


def test_netdev_without_rdma_device_fails_when_roce_mode_is_asked(run_module, tmp_path):
    make_sysfs(tmp_path, netdev="eth0")
    runner = Ordered([(["ibdev2netdev"], 0, IBDEV2NETDEV, "")])
    failed, result = run_module(roce_qos, {"netdev": "eth0", "roce_mode": "v2", "sysfs_root": str(tmp_path)}, runner)
    assert failed and "ibdev2netdev lists no RDMA device port 1" in result["msg"]


# ---------------------------------------------------------------- netdevs: every netdev of a node in one run
QOS1 = ["mlnx_qos", "-i", "p1"]
MODE1 = ["cma_roce_mode", "-d", "mlx5_1", "-p", "1"]
TOS1 = ["cma_roce_tos", "-d", "mlx5_1", "-p", "1"]
APPLY1 = [((QOS1 if argv[:3] == QOS else MODE1 if argv[:5] == MODE else TOS1) + argv[len(QOS if argv[:3] == QOS
          else MODE):], rc, out, err) for argv, rc, out, err in APPLY]
TWO = dict(ARGS, netdevs=["p0", "p1"])
del TWO["netdev"]


def test_netdevs_reads_every_netdev_before_changing_any(run_module, tmp_path):
    """ibdev2netdev once; p0 and p1 read; then p1 (the only one that differs) applied and read back."""
    make_sysfs(tmp_path, mtu=9000, ecn=(3,))
    d1 = make_sysfs(tmp_path, netdev="p1")
    steps = ([(["ibdev2netdev"], 0, IBDEV2NETDEV, "")] + READ_AFTER
             + [(QOS1, 0, PCP, ""), (MODE1, 0, "IB/RoCE v1\n", ""), (TOS1, 0, "0\n", "")]
             + APPLY1 + [(QOS1, 0, AFTER, ""), (MODE1, 0, "RoCE v2\n", ""), (TOS1, 0, "104\n", "")])
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(TWO, sysfs_root=str(tmp_path)), runner)
    assert not failed, result
    assert runner.steps == [], "commands not run: %r" % runner.steps
    assert result["changed"] is True and "netdev" not in result
    [p0, p1] = result["netdevs"]
    assert (p0["netdev"], p0["ibdev"], p0["changed"], p0["changes"]) == ("p0", "mlx5_0", False, [])
    assert (p1["netdev"], p1["ibdev"], p1["changed"]) == ("p1", "mlx5_1", True)
    assert p1["changes"] == [k for k in roce_qos.KEYS if k != "cnp_dscp"]
    assert result["changes"] == ["p1.%s" % k for k in p1["changes"]]
    assert result["qos"]["p1"]["trust"] == "dscp" and result["before"]["p1"]["trust"] == "pcp"
    assert result["diff"]["before"]["p1"]["mtu"] == 1500 and result["diff"]["after"]["p1"]["mtu"] == 9000
    assert result["diff"]["before"]["p0"] == result["diff"]["after"]["p0"]
    assert sysfs_state(d1)["mtu"] == "9000\n"


def test_netdevs_with_nothing_to_do_reads_only(run_module, tmp_path):
    dirs = [make_sysfs(tmp_path, netdev=n, mtu=9000, ecn=(3,)) for n in ("p0", "p1")]
    before = [sysfs_state(d) for d in dirs]
    steps = ([(["ibdev2netdev"], 0, IBDEV2NETDEV, "")] + READ_AFTER
             + [(QOS1, 0, AFTER, ""), (MODE1, 0, "RoCE v2\n", ""), (TOS1, 0, "104\n", "")])
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(TWO, sysfs_root=str(tmp_path)), runner)
    assert not failed and result["changed"] is False and result["changes"] == [] and runner.steps == []
    assert [sysfs_state(d) for d in dirs] == before


def test_netdevs_check_mode_predicts_and_changes_nothing(run_module, tmp_path):
    dirs = [make_sysfs(tmp_path, netdev=n) for n in ("p0", "p1")]
    before = [sysfs_state(d) for d in dirs]
    steps = READ_BEFORE + [(QOS1, 0, PCP, ""), (MODE1, 0, "IB/RoCE v1\n", ""), (TOS1, 0, "0\n", "")]
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(TWO, sysfs_root=str(tmp_path)), runner, check_mode=True)
    assert not failed, result
    assert result["changed"] is True and result["check_mode_prediction"] is True and runner.steps == []
    assert [sysfs_state(d) for d in dirs] == before
    assert {n: q["trust"] for n, q in result["qos"].items()} == {"p0": "dscp", "p1": "dscp"}
    assert {n: q["trust"] for n, q in result["before"].items()} == {"p0": "pcp", "p1": "pcp"}


def test_netdevs_one_without_ecn_sysfs_fails_before_any_netdev_changes(run_module, tmp_path):
    """p0 could take the settings, p1 cannot (no ECN sysfs): the task fails after reading, nothing applied."""
    d0 = make_sysfs(tmp_path)
    d1 = make_sysfs(tmp_path, netdev="p1", with_ecn=False)
    before = [sysfs_state(d0), sysfs_state(d1)]
    steps = READ_BEFORE + [(QOS1, 0, PCP, ""), (MODE1, 0, "IB/RoCE v1\n", ""), (TOS1, 0, "0\n", "")]
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(TWO, sysfs_root=str(tmp_path)), runner)
    assert failed and "read ECN of p1 failed" in result["msg"], result["msg"]
    assert not any("--trust" in argv for argv in runner.cmd), runner.cmd
    assert [sysfs_state(d0), sysfs_state(d1)] == before


@pytest.mark.parametrize("change, words", [
    ({"netdevs": ["p0", "p7"]}, "netdev p7 does not exist"),
    ({"pfc": [9]}, "pfc priority 9 is out of range: use 0..7"),
    ({"ibdev": "mlx5_0"}, "with netdevs leave it out"),
    ({"netdevs": []}, "give netdev (one netdev) or netdevs (a list of them)"),
])
def test_netdevs_bad_input_fails_before_any_command_or_write(run_module, tmp_path, change, words):
    dirs = [make_sysfs(tmp_path, netdev=n) for n in ("p0", "p1")]
    before = [sysfs_state(d) for d in dirs]
    runner = Ordered([])
    failed, result = run_module(roce_qos, dict(TWO, sysfs_root=str(tmp_path), **change), runner)
    assert failed and words in result["msg"], result["msg"]
    assert runner.cmd == [] and [sysfs_state(d) for d in dirs] == before
    assert result["msg"].startswith("configure RoCE QoS of ")


def test_netdev_and_netdevs_together_are_refused(run_module, tmp_path):
    make_sysfs(tmp_path)
    failed, result = run_module(roce_qos, dict(ARGS, netdevs=["p0"], sysfs_root=str(tmp_path)), Ordered([]))
    assert failed and "mutually exclusive: netdev|netdevs" in result["msg"], result["msg"]


def test_netdevs_a_netdev_without_rdma_port_fails_before_any_change(run_module, tmp_path):
    make_sysfs(tmp_path)
    make_sysfs(tmp_path, netdev="eth0")
    runner = Ordered([(["ibdev2netdev"], 0, IBDEV2NETDEV, ""), (QOS, 0, PCP, ""), (MODE, 0, "IB/RoCE v1\n", ""),
                      (TOS, 0, "0\n", "")])
    failed, result = run_module(roce_qos, dict(TWO, netdevs=["p0", "eth0"], sysfs_root=str(tmp_path)), runner)
    assert failed and "eth0 with ibdev2netdev failed: ibdev2netdev lists no RDMA device port 1" in result["msg"]
    assert runner.steps == [] and not any("--trust" in argv for argv in runner.cmd)


# ---------------------------------------------------------------- rdma_facts: rdma_info's read in the same run
GID_LINES = fixture_text("show-gids", "cx7-vf-net1-container").splitlines(keepends=True)
GID_HEADER = "".join(GID_LINES[:2])  # the column header and its dashes


def _gid_rows(ibdev, netdev, octet):
    return "".join(row.replace("mlx5_3", ibdev).replace("net1", netdev).replace("c0a8:0a02", "c0a8:%02x02" % octet)
                   .replace("192.168.10.2", "192.168.%d.2" % octet) for row in GID_LINES if row.startswith("mlx5_3"))


GIDS = GID_HEADER + _gid_rows("mlx5_0", "p0", 10) + _gid_rows("mlx5_1", "p1", 11) + "n_gids_found=8\n"
LINKS = (["ibdev2netdev"], 0, IBDEV2NETDEV, "")
SHOW_GIDS = (["show_gids"], 0, GIDS, "")
READ_AFTER1 = [(QOS1, 0, AFTER, ""), (MODE1, 0, "RoCE v2\n", ""), (TOS1, 0, "104\n", "")]
EVERY = dict(ARGS, rdma_facts=True)
del EVERY["netdev"]


def rdma_info_of(args):
    """What rdma_info returns on the same tool outputs, without its own changed and cmd."""
    runner = Ordered([LINKS, SHOW_GIDS])
    return {key: value for key, value in rdma_info.run_rdma_info(runner, dict({"netdevs": [], "address": ""}, **args))
            .items() if key != "changed"}


@pytest.mark.parametrize("netdevs", [None, []])
def test_rdma_facts_configures_every_netdev_ibdev2netdev_lists(run_module, tmp_path, netdevs):
    """ibdev2netdev once (its links also give the RDMA devices for roce_mode and tos), show_gids once, then p0 and p1
    read; both hold the settings already."""
    dirs = [make_sysfs(tmp_path, netdev=n, mtu=9000, ecn=(3,)) for n in ("p0", "p1")]
    before = [sysfs_state(d) for d in dirs]
    args = dict(EVERY, sysfs_root=str(tmp_path))
    if netdevs is not None:
        args["netdevs"] = netdevs
    runner = Ordered([LINKS, SHOW_GIDS] + READ_AFTER + READ_AFTER1)
    failed, result = run_module(roce_qos, args, runner)
    assert not failed, result
    assert runner.steps == [] and result["cmd"].count(["ibdev2netdev"]) == 1
    assert result["changed"] is False and [n["netdev"] for n in result["netdevs"]] == ["p0", "p1"]
    assert [n["ibdev"] for n in result["netdevs"]] == ["mlx5_0", "mlx5_1"] and set(result["qos"]) == {"p0", "p1"}
    assert result["rdma"]["netdevs"] == ["p0", "p1"] and result["rdma"]["gid_index"] == 3
    assert result["rdma"]["gid_netdev"] == "p0" and result["rdma"]["roce_v2_gid_index"] == {"p0": 3, "p1": 3}
    assert [sysfs_state(d) for d in dirs] == before


@pytest.mark.parametrize("rdma_args", [{}, {"address": "192.168.11.2"}, {"netdevs": ["p1"]},
                                       {"netdevs": ["p1", "p0"], "address": "192.168.10.2"}])
def test_rdma_facts_returns_what_rdma_info_returns(run_module, tmp_path, rdma_args):
    for name in ("p0", "p1"):
        make_sysfs(tmp_path, netdev=name, mtu=9000)
    runner = Ordered([LINKS, SHOW_GIDS])
    failed, result = run_module(roce_qos, dict({"rdma_facts": True, "mtu": 9000, "sysfs_root": str(tmp_path)},
                                               **rdma_args), runner)
    assert not failed, result
    assert result["rdma"] == rdma_info_of(rdma_args) and runner.steps == []
    assert set(result["rdma"]) == {"links", "gids", "netdevs", "roce_v2_gid_index", "gid_index", "gid_netdev"}
    assert [n["netdev"] for n in result["netdevs"]] == result["rdma"]["netdevs"]


def test_rdma_facts_with_one_netdev_keeps_the_single_netdev_result(run_module, tmp_path):
    make_sysfs(tmp_path)
    runner = Ordered([LINKS, SHOW_GIDS] + READ_BEFORE[1:] + APPLY + READ_AFTER)
    failed, result = run_module(roce_qos, dict(ARGS, rdma_facts=True, sysfs_root=str(tmp_path)), runner)
    assert not failed, result
    assert runner.steps == [] and result["cmd"].count(["ibdev2netdev"]) == 1
    assert result["netdev"] == "p0" and result["ibdev"] == "mlx5_0" and result["changed"] is True
    assert result["rdma"] == rdma_info_of({"netdevs": ["p0"]})


def test_rdma_facts_check_mode_reads_and_predicts(run_module, tmp_path):
    dirs = [make_sysfs(tmp_path, netdev=n) for n in ("p0", "p1")]
    before = [sysfs_state(d) for d in dirs]
    steps = [LINKS, SHOW_GIDS] + READ_BEFORE[1:] + [(QOS1, 0, PCP, ""), (MODE1, 0, "IB/RoCE v1\n", ""),
                                                    (TOS1, 0, "0\n", "")]
    runner = Ordered(steps)
    failed, result = run_module(roce_qos, dict(EVERY, netdevs=[], sysfs_root=str(tmp_path)), runner,
                                check_mode=True)
    assert not failed, result
    assert result["changed"] is True and result["check_mode_prediction"] is True and runner.steps == []
    assert [sysfs_state(d) for d in dirs] == before and result["rdma"]["netdevs"] == ["p0", "p1"]


def test_rdma_facts_without_rdma_netdevs_changes_and_reads_nothing_more(run_module, tmp_path):
    """ibdev2netdev lists no netdev: no QoS read, no sysfs file looked at, changed false, the read returned."""
    runner = Ordered([(["ibdev2netdev"], 0, "", ""), (["show_gids"], 0, GID_HEADER + "n_gids_found=0\n", "")])
    failed, result = run_module(roce_qos, dict(EVERY, netdevs=[], sysfs_root=str(tmp_path / "none")), runner)
    assert not failed, result
    assert runner.steps == [] and result["cmd"] == [["ibdev2netdev"], ["show_gids"]]
    assert result["changed"] is False and result["netdevs"] == [] and result["qos"] == {} and result["changes"] == []
    assert result["rdma"] == {"links": [], "gids": [], "netdevs": [], "roce_v2_gid_index": {}, "gid_index": None,
                              "gid_netdev": None}


def test_rdma_facts_netdev_ibdev2netdev_does_not_list_fails_before_any_qos_read(run_module, tmp_path):
    """rdma_info's message, word for word; nothing read after the two RDMA tools."""
    make_sysfs(tmp_path)
    runner = Ordered([LINKS, SHOW_GIDS])
    failed, result = run_module(roce_qos, dict(EVERY, netdevs=["p0", "p9"], sysfs_root=str(tmp_path)), runner)
    assert failed and result["msg"] == ("read the RoCE GID index failed: p9 has no RDMA device (ibdev2netdev lists: "
                                        "p0, p1); name RoCE netdevs only"), result["msg"]
    assert runner.cmd == [["ibdev2netdev"], ["show_gids"]]


def test_rdma_facts_address_no_gid_holds_fails_as_rdma_info(run_module, tmp_path):
    make_sysfs(tmp_path)
    failed, result = run_module(roce_qos, dict(EVERY, address="10.0.0.9", sysfs_root=str(tmp_path)),
                                Ordered([LINKS, SHOW_GIDS]))
    assert failed and "no GID of p0, p1 holds the address 10.0.0.9" in result["msg"], result["msg"]


def test_address_without_rdma_facts_is_refused_before_any_command(run_module, tmp_path):
    make_sysfs(tmp_path)
    runner = Ordered([])
    failed, result = run_module(roce_qos, dict(ARGS, address="192.168.10.2", sysfs_root=str(tmp_path)), runner)
    assert failed and runner.cmd == [], result
    assert "address 192.168.10.2" in result["msg"] and "set rdma_facts: true with it" in result["msg"]
    assert result["msg"].startswith("configure RoCE QoS of p0 failed: ")


def test_without_rdma_facts_a_netdev_is_still_required(run_module, tmp_path):
    runner = Ordered([])
    failed, result = run_module(roce_qos, {"mtu": 9000, "sysfs_root": str(tmp_path)}, runner)
    assert failed and result["msg"] == "one of the following is required: netdev, netdevs" and runner.cmd == []
