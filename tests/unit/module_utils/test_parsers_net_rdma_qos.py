"""Focused cases for the RDMA and QoS parsers: error strings, layouts the corpus lacks, tabs vs spaces.

Sources of the layouts: shared/corpus/show_gids/FORMAT-from-source.md (show_gids, cma_roce_mode),
shared/corpus/ibv_devinfo/FORMAT-from-source.md, shared/corpus/mlnx_qos/FORMAT-from-source.md.
"""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlnx_qos import parse_mlnx_qos
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import (
    parse_cma_roce_mode,
    parse_ibdev2netdev,
    parse_ibv_devinfo,
    parse_rdma_link,
    parse_show_gids,
)


@pytest.mark.parametrize(
    "message",
    [
        # the error strings of mlnx-tools sbin/cma_roce_mode (FORMAT-from-source.md)
        "You must be root to run this",
        "Failed to mount configfs",
        "Module rdma_cm is not loaded or does not support configfs",
        "Failed to create configuration for mlx5_0",
        "Device mlx5_0 port 1 does not exist",
    ],
)
def test_cma_roce_mode_errors_are_parse_errors_naming_the_line(message):
    with pytest.raises(ParseError) as err:
        parse_cma_roce_mode(message + "\n")
    assert err.value.kind == "cma-roce-mode" and err.value.line == message


def test_cma_roce_mode_reads_both_modes_with_crlf():
    assert parse_cma_roce_mode("RoCE v2\r\n") == {"mode": "RoCE v2", "roce_version": 2}
    assert parse_cma_roce_mode("IB/RoCE v1") == {"mode": "IB/RoCE v1", "roce_version": 1}


def test_cma_roce_mode_second_line_is_rejected():
    with pytest.raises(ParseError) as err:
        parse_cma_roce_mode("RoCE v2\nRoCE v2\n")
    assert err.value.line_no == 2


def test_show_gids_row_without_netdev_and_tab_expanded_copy():
    # show_gids prints "$d\t$p\t$g\t$gid\t\t\t$_type\t$_ndev"; _ndev is empty for a GID without netdev
    text = (
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
        "mlx5_0\t1\t0\tfe80:0000:0000:0000:0cb0:10ff:fe34:0aad\t\t\tv1\t\n"
        "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a02\t192.168.10.2  \tv2\tp0\n"
        "n_gids_found=2\n"
    )
    for variant in (text, text.expandtabs(8)):
        gids = parse_show_gids(variant)["gids"]
        assert gids[0] == {"dev": "mlx5_0", "port": 1, "index": 0, "gid": "fe80:0000:0000:0000:0cb0:10ff:fe34:0aad",
                           "ipv4": None, "ver": "v1", "netdev": None}
        assert gids[1]["ipv4"] == "192.168.10.2" and gids[1]["ver"] == "v2" and gids[1]["netdev"] == "p0"


def test_show_gids_bad_row_after_header_names_the_line():
    text = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\nmlx5_0\tone\t0\tfe80:0:0:0:0:0:0:1\t\t\tv1\tp0\n"
    with pytest.raises(ParseError) as err:
        parse_show_gids(text)
    assert err.value.line_no == 2


def test_ibdev2netdev_plain_tool_layout():
    # the raw layout named in the corpus notes: 'mlx5_0 port 1 ==> ibp26s0 (Down)'
    got = parse_ibdev2netdev("mlx5_0 port 1 ==> p0 (Up)\nmlx5_1 port 1 ==> p1 (Down)\n")
    assert got == {"links": [{"ibdev": "mlx5_0", "port": 1, "netdev": "p0", "state": "Up"},
                             {"ibdev": "mlx5_1", "port": 1, "netdev": "p1", "state": "Down"}]}


def test_ibv_devinfo_no_devices_message_is_a_parse_error():
    with pytest.raises(ParseError, match="hca_id"):
        parse_ibv_devinfo("No IB devices found\n")


def test_ibv_devinfo_two_ports_of_one_hca():
    text = (
        "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t24.35.1012\n\tvendor_part_id:\t\t\t41686\n"
        "\tphys_port_cnt:\t\t\t2\n"
        "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tEthernet\n\n"
        "\t\tport:\t2\n\t\t\tstate:\t\t\tPORT_DOWN (1)\n\t\t\tlink_layer:\t\tEthernet\n\n"
    )
    device = parse_ibv_devinfo(text)["devices"][0]
    assert device["vendor_part_id"] == 41686 and device["phys_port_cnt"] == 2
    assert [(p["port"], p["state"]) for p in device["ports"]] == [(1, "PORT_ACTIVE (4)"), (2, "PORT_DOWN (1)")]


def test_rdma_link_ib_attributes_and_odd_words():
    text = "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 5 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n"
    link = parse_rdma_link(text)["links"][0]
    assert link["lid"] == 5 and link["state"] == "ACTIVE" and link["netdev"] is None
    with pytest.raises(ParseError):
        parse_rdma_link("link mlx5_0/1 state\n")


def test_mlnx_qos_priority_before_any_tc_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_mlnx_qos("DCBX mode: OS controlled\n\t priority:  0\n")
    assert err.value.line_no == 2


def test_mlnx_qos_non_numeric_pfc_row_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_mlnx_qos("PFC configuration:\n\tpriority    0   1\n\tenabled     0   x\n")
    assert err.value.line_no == 3


def test_mlnx_qos_dscp_prio_continued_on_a_second_line():
    # FORMAT: "max 8 values per line; overflow repeats '\tprio:N dscp:'"
    text = ("Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:31,30,29,28,27,26,25,24,\n"
            "\tprio:3 dscp:23,\n")
    got = parse_mlnx_qos(text)
    assert got["prio2dscp"]["3"] == [31, 30, 29, 28, 27, 26, 25, 24, 23]
    assert got["dscp2prio"]["23"] == 3


def test_mlnx_qos_garbage_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_mlnx_qos("some unrelated text\n")  # any text without an mlnx_qos line
    assert err.value.kind == "mlnx-qos" and err.value.line_no == 1


def test_show_gids_accepts_gids_redacted_with_x():
    # as published in a public RoCE how-to (library id 56882768507): link-local GIDs redacted with "xxxx"
    text = (
        "rocep1s0f1      1       0       fe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx                 v1      enp1s0f1np1\n"
        "roceP2p1s0f0    1       2       0000:0000:0000:0000:0000:ffff:c0a8:640e 192.168.100.14"
        "          v1      enP2p1s0f0np0\n"
        "n_gids_found=12\n"
    )
    gids = parse_show_gids(text)["gids"]
    assert gids[0]["gid"] == "fe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx" and gids[0]["netdev"] == "enp1s0f1np1"
    assert gids[1]["ipv4"] == "192.168.100.14"


def test_mlnx_qos_without_the_default_priority_line_of_mlnx_tools_25_07():
    """Issue 18 (7): mlnx-tools 25.07 (commit 374d9b5) no longer prints 'default priority:'; the rest reads the same."""
    from pathlib import Path

    from bluefleet.parse import strip_header
    path = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "mlnx-qos" / "cx-dscp-ets-pfc5-partial.txt"
    text = strip_header(path.read_text(encoding="utf-8"))
    assert "default priority:\n" in text
    old = parse_mlnx_qos(text)
    new = parse_mlnx_qos(text.replace("default priority:\n", ""))
    assert old["default_priority"] is None and new == old
