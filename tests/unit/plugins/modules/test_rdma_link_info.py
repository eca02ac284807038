"""rdma_link_info: ``rdma link show`` outputs from the parser fixtures (tests/unit/fixtures/parsers/rdma-link):

* ``sf-rdma-link-and-dev-show-parav``: verbatim (kernel commit message), one ACTIVE port, new layout;
* ``from-format-old-ifindex-prefix-ib-and-roce``: reconstructed from iproute2 rdma/link.c, one ACTIVE and one
  DOWN port, first-release layout.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.modules import rdma_link_info
from fake_tools import fixture_text

ARGV = ("rdma", "link", "show")
UP = fixture_text("rdma-link", "sf-rdma-link-and-dev-show-parav")
MIXED = fixture_text("rdma-link", "from-format-old-ifindex-prefix-ib-and-roce")


def test_one_active_port_is_all_active(run_module, fake_runner):
    runner = fake_runner({ARGV: (0, UP, "")})
    failed, result = run_module(rdma_link_info, {}, runner)
    assert not failed and not result["changed"]
    assert result["all_active"] is True and result["down"] == [] and result["missing"] == []
    assert result["links"][0]["ibdev"] == "mlx5_0" and result["links"][0]["netdev"] == "p0sf88"
    assert result["cmd"] == [list(ARGV)]


def test_a_down_port_is_named(run_module, fake_runner):
    failed, result = run_module(rdma_link_info, {}, fake_runner({ARGV: (0, MIXED, "")}), check_mode=True)
    assert not failed
    assert result["all_active"] is False and result["down"] == ["mlx5_1/1 DOWN"]


def test_devices_limit_what_counts(run_module, fake_runner):
    failed, result = run_module(rdma_link_info, {"devices": ["mlx5_0"]}, fake_runner({ARGV: (0, MIXED, "")}))
    assert not failed and result["all_active"] is True and result["down"] == []
    failed, result = run_module(rdma_link_info, {"devices": ["mlx5_0", "mlx5_9"]},
                                fake_runner({ARGV: (0, MIXED, "")}))
    assert not failed and result["all_active"] is False and result["missing"] == ["mlx5_9"]


def test_no_port_at_all_is_not_active(run_module, fake_runner):
    failed, result = run_module(rdma_link_info, {}, fake_runner({ARGV: (0, "", "")}))
    assert not failed and result["all_active"] is False and result["links"] == []


def test_tool_failure_and_garbage_fail_clearly(run_module, fake_runner):
    failed, result = run_module(rdma_link_info, {}, fake_runner({ARGV: (1, "", "rdma: no such device\n")}))
    assert failed and result["msg"].startswith("read the RDMA ports with rdma link show failed:")
    failed, result = run_module(rdma_link_info, {}, fake_runner({}, missing=("rdma",)))
    assert failed and "rdma" in result["msg"]
    failed, result = run_module(rdma_link_info, {}, fake_runner({ARGV: (0, "link mlx5_0/1 state\n", "")}))
    assert failed and "rdma link show" in result["msg"] and "key value" in result["msg"], result["msg"]
