"""rdma_info: GID index choice from real show_gids output.

Tool outputs: ``show_gids`` from the corpus fixture (show_gids/cx7-vf-net1-container: mlx5_3 / net1, link-local
GID at 0/1, 192.168.10.2 at 2 (v1) / 3 (v2)); a link-local-only table is that capture without its IPv4 rows.
``ibdev2netdev``: ``<ibdev> port <n> ==> <netdev> (<state>)`` (corpus ibdev2netdev, before ``column -t``).
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.modules import rdma_info
from fake_tools import fixture_text

GIDS = fixture_text("show-gids", "cx7-vf-net1-container")
LINK_LOCAL_ONLY = "".join(line for line in GIDS.splitlines(keepends=True) if "192.168" not in line).replace(
    "n_gids_found=4", "n_gids_found=2")
LINKS = "mlx5_3 port 1 ==> net1 (Up)\n"
STEPS = {("ibdev2netdev",): (0, LINKS, ""), ("show_gids",): (0, GIDS, "")}


def test_address_picks_its_roce_v2_entry(run_module, fake_runner):
    failed, result = run_module(rdma_info, {"address": "192.168.10.2"}, fake_runner(STEPS))
    assert not failed, result
    assert result["gid_index"] == 3 and result["gid_netdev"] == "net1" and result["roce_v2_gid_index"] == {"net1": 3}
    assert result["changed"] is False and result["cmd"] == [["ibdev2netdev"], ["show_gids"]]
    assert result["links"] == [{"ibdev": "mlx5_3", "port": 1, "netdev": "net1", "state": "Up"}]


def test_without_address_the_first_v2_with_ipv4(run_module, fake_runner):
    failed, result = run_module(rdma_info, {}, fake_runner(STEPS))
    assert not failed and result["gid_index"] == 3 and result["netdevs"] == ["net1"]


def test_link_local_v2_when_no_address_is_set(run_module, fake_runner):
    steps = dict(STEPS)
    steps[("show_gids",)] = (0, LINK_LOCAL_ONLY, "")
    failed, result = run_module(rdma_info, {}, fake_runner(steps))
    assert not failed and result["gid_index"] == 1


def test_unknown_address_is_a_clear_error(run_module, fake_runner):
    failed, result = run_module(rdma_info, {"address": "10.0.0.9"}, fake_runner(STEPS))
    assert failed and "no GID of net1 holds the address 10.0.0.9" in result["msg"]
    assert "bluefleet_roce_address" in result["msg"]


def test_netdev_without_rdma_is_a_clear_error(run_module, fake_runner):
    failed, result = run_module(rdma_info, {"netdevs": ["eth0"]}, fake_runner(STEPS))
    assert failed and "eth0 has no RDMA device (ibdev2netdev lists: net1)" in result["msg"]


def test_a_missing_tool_names_it(run_module, fake_runner):
    failed, result = run_module(rdma_info, {}, fake_runner(STEPS, missing=("show_gids",)))
    assert failed and result["msg"].startswith("read the GID tables with show_gids failed")
