"""_frr / _pmc: real captures (tests/unit/fixtures/frr, tests/unit/fixtures/pmc; provenance in their headers)
parse to the values they show; garbage is refused with the line named."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _frr, _pmc
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError

from bluefleet.parse import strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture(*parts):
    return strip_header(FIXTURES.joinpath(*parts).read_text(encoding="utf-8"))


def test_frr_real_capture():
    routes = _frr.parse_ip_route_json(_fixture("frr", "show-ip-route-json.txt"))
    by_prefix = {r["prefix"]: r for r in routes}
    assert sorted(by_prefix) == ["0.0.0.0/0", "192.168.1.0/24"]
    default = by_prefix["0.0.0.0/0"]
    assert (default["protocol"], default["vrf"], default["selected"], default["installed"]) == \
        ("kernel", "default", True, True)
    assert default["nexthops"] == [{"ip": "192.168.1.1", "interface": "vmbr0", "active": True, "fib": True,
                                    "directly_connected": False}]
    assert by_prefix["192.168.1.0/24"]["nexthops"][0]["directly_connected"] is True
    assert _frr.selected_prefixes(routes, "connected") == ["192.168.1.0/24"]
    assert _frr.selected_prefixes(routes) == ["0.0.0.0/0", "192.168.1.0/24"]


def test_frr_absent_selected_is_false_and_vrf_all_form():
    text = ('{"default":{"10.1.0.0/16":[{"prefix":"10.1.0.0/16","protocol":"static","nexthops":[]}]},'
            '"red":{"10.2.0.0/16":[{"prefix":"10.2.0.0/16","protocol":"bgp","selected":true,"installed":true}]}}')
    routes = _frr.parse_ip_route_json(text)
    assert [(r["vrf"], r["selected"]) for r in routes] == [("default", False), ("red", True)]
    assert _frr.selected_prefixes(routes) == ["10.2.0.0/16"]


@pytest.mark.parametrize("text", ["", "% Unknown command: show ip route jsn", "[1, 2]", '{"10.0.0.0/8": "x"}',
                                  '{"10.0.0.0/8": [1]}'])
def test_frr_garbage_refused(text):
    with pytest.raises(ParseError):
        _frr.parse_ip_route_json(text)


def test_pmc_real_capture():
    ports = _pmc.parse_port_data_set(_fixture("pmc", "get-port-data-set.txt"))
    assert [(p["port_identity"], p["port_state"]) for p in ports] == [
        ("3cecef.fffe.7a7020-1", "SLAVE"), ("3cecef.fffe.7a7020-2", "LISTENING")]
    assert ports[0]["fields"]["logMinDelayReqInterval"] == "-4"
    assert ports[1]["fields"]["versionNumber"] == "2"


def test_pmc_tab_layout_and_no_answer():
    text = ("sending: GET PORT_DATA_SET\n\t507c6f.fffe.1fb33c-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET \n"
            "\t\tportIdentity            507c6f.fffe.1fb33c-1\n\t\tportState               MASTER\n")
    assert [p["port_state"] for p in _pmc.parse_port_data_set(text)] == ["MASTER"]
    assert _pmc.parse_port_data_set("sending: GET PORT_DATA_SET\n") == []


_HEAD = "sending: GET PORT_DATA_SET\n\tx-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET\n"


@pytest.mark.parametrize("text", ["portState SLAVE\n", "sending: GET TIME_STATUS_NP\n", _HEAD + "\t\t???\n", _HEAD])
def test_pmc_garbage_refused(text):
    with pytest.raises(ParseError):
        _pmc.parse_port_data_set(text)
