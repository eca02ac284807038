"""Focused cases for ip xfrm, swanctl and Open vSwitch parsers.

Layouts: iproute2 ip/ipxfrm.c (cited in _xfrm.py) for the ``ip -s`` words, strongSwan list_sas.c
(shared/corpus/swanctl/FORMAT-from-source.md), ovs-vsctl show samples in shared/corpus/ovs and the
record lines of a public ovs-vsctl show fixture (Manager / Controller / is_connected / error).
"""

from __future__ import annotations

import json

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._ovs import parse_dump_flows, parse_vsctl_show
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._swanctl import parse_list_sas
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._xfrm import parse_policy, parse_state

KEY = "0x000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"


def test_xfrm_empty_output_means_no_sa_and_no_policy():
    assert parse_state("") == {"states": []}
    assert parse_policy("\n") == {"policies": []}


def test_xfrm_state_with_ip_s_words():
    # ip -s xfrm state: reqid then "(0x%08x)", "seq 0x.." and " (0x..)" on the replay line, " (N bits)" after keys
    text = (
        "src 198.51.100.10 dst 198.51.100.20\n"
        "\tproto esp spi 0xc1b58e17(3250949655) reqid 1(0x00000001) mode tunnel\n"
        "\treplay-window 32 seq 0x00000000 flag af-unspec (0x00100000)\n"
        f"\tauth-trunc hmac(sha256) {KEY} (256 bits) 128\n"
        f"\tenc cbc(aes) {KEY} (256 bits)\n"
        "\tcrypto offload parameters: dev p0 dir out mode packet\n"
    )
    state = parse_state(text)["states"][0]
    assert state["spi"] == "0xc1b58e17" and state["reqid"] == 1
    assert state["flags"] == ["af-unspec"]
    assert state["auth_info"] == {"name": "hmac(sha256)", "key_bits": 256, "icv_bits": 128}
    assert state["enc_info"] == {"name": "cbc(aes)", "key_bits": 256, "icv_bits": None}
    assert state["offload"] == {"dev": "p0", "dir": "out", "mode": "packet"}


def test_xfrm_never_returns_key_material():
    text = f"src 192.0.2.1 dst 192.0.2.2\n\tproto esp spi 0x1 reqid 1 mode tunnel\n\taead rfc4106(gcm(aes)) {KEY} 128\n"
    assert KEY not in json.dumps(parse_state(text))


def test_xfrm_state_without_proto_line_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_state("src 192.0.2.1 dst 192.0.2.2\n\treplay-window 0\n")
    assert err.value.kind == "xfrm-state" and err.value.line_no == 1


def test_xfrm_policy_ip_s_words_do_not_shift_fields():
    text = (
        "src 10.1.0.0/22 dst 172.22.0.0/24 uid 0\n"
        "\tdir out action allow index 12345 priority 375423 ptype main share any flag  (0x00000000)\n"
        "\ttmpl src 198.51.100.10 dst 198.51.100.20\n"
        "\t\tproto esp spi 0x00000000(0) reqid 1(0x00000001) mode tunnel\n"
        "\t\tlevel required share any \n"
    )
    policy = parse_policy(text)["policies"][0]
    assert (policy["dir"], policy["action"], policy["index"], policy["priority"], policy["ptype"]) == (
        "out", "allow", 12345, 375423, "main")
    assert policy["tmpl"][0]["level"] == "required"
    assert (policy["tmpl"][0]["spi"], policy["tmpl"][0]["reqid"]) == ("0x00000000", 1)
    assert policy["selector"] == {"uid": 0}


def test_xfrm_garbage_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_policy("RTNETLINK answers: Operation not permitted\n")
    assert err.value.line_no == 1


def test_swanctl_empty_and_garbage():
    assert parse_list_sas("") == {"sas": []}
    with pytest.raises(ParseError) as err:
        parse_list_sas("connecting to 'unix:///var/run/charon.vici' failed: No such file or directory\n")
    assert err.value.kind == "swanctl-list-sas" and err.value.line_no == 1


def test_swanctl_child_in_rekeyed_state_and_ipv6_endpoint():
    text = (
        "net: #2, ESTABLISHED, IKEv2, 0123456789abcdef_i* fedcba9876543210_r\n"
        "  local  'a' @ 2001:db8::1[4500]\n"
        "  remote 'b' @ 2001:db8::2[4500]\n"
        "  net: #7, reqid 3, REKEYED, TUNNEL, ESP:AES_GCM_16-256\n"
    )
    sa = parse_list_sas(text)["sas"][0]
    assert sa["initiator"] is True and sa["local"] == {"id": "a", "address": "2001:db8::1", "port": 4500}
    assert sa["children"][0]["state"] == "REKEYED" and sa["children"][0]["udp_encap"] is False


def test_ovs_show_manager_controller_and_interface_error():
    # record lines as in a public ovs-vsctl show fixture (OVS 2.15, magma access gateway checks)
    text = (
        "128dc4f0-80f9-4584-be74-57747ac0a68f\n"
        '    Manager "ptcp:6640"\n'
        "    Bridge gtp_br0\n"
        '        Controller "tcp:127.0.0.1:6654"\n'
        "            is_connected: true\n"
        "        fail_mode: secure\n"
        "        Port g_20031fac\n"
        "            Interface g_20031fac\n"
        "                type: gtpu\n"
        '                options: {csum="false", key=flow, remote_ip="172.31.3.32"}\n'
        '                error: "could not add network device g_20031fac to ofproto (Address family not supported)"\n'
        '    ovs_version: "2.15.4"\n'
    )
    got = parse_vsctl_show(text)
    assert got["other"] == {"manager": [{"name": "ptcp:6640"}]}
    bridge = got["bridges"]["gtp_br0"]
    assert bridge["controller"] == [{"name": "tcp:127.0.0.1:6654", "is_connected": "true"}]
    iface = bridge["ports"]["g_20031fac"]["interfaces"]["g_20031fac"]
    assert iface["options"] == {"csum": "false", "key": "flow", "remote_ip": "172.31.3.32"}
    assert iface["error"].startswith("could not add network device")
    assert got["ovs_version"] == "2.15.4"


def test_ovs_show_first_line_must_be_the_uuid():
    with pytest.raises(ParseError) as err:
        parse_vsctl_show("ovs-vsctl: unix:/var/run/openvswitch/db.sock: database connection failed\n")
    assert err.value.kind == "ovs-vsctl-show" and err.value.line_no == 1


def test_dump_flows_partial_offload_and_pmd_headers():
    text = (
        "flow-dump from pmd on cpu core: 2\n"
        "ufid:1e3b4c55-0000-0000-0000-000000000000, recirc_id(0),in_port(2),eth_type(0x0800),ipv4(frag=no),"
        " packets:10, bytes:1000, used:0.1s, flags:S, offloaded:partial, dp:ovs, actions:3\n"
    )
    flow = parse_dump_flows(text)["flows"][0]
    assert flow["offloaded"] is False and flow["offload_state"] == "partial"
    assert flow["flags"] == "S" and flow["dp"] == "ovs" and flow["actions"] == "3"


def test_dump_flows_empty_and_garbage():
    assert parse_dump_flows("") == {"flows": []}
    with pytest.raises(ParseError):
        parse_dump_flows("ovs-appctl: cannot connect to \"/var/run/openvswitch/ovs-vswitchd.1.ctl\"\n")
