"""Focused cases for the devlink and ethtool parsers: error outputs, text vs -j JSON, several devices.

Inputs are the corpus samples (shared/corpus/devlink, ethtool) or are built from the iproute2 /
ethtool print formats cited in the parser modules.
"""

from __future__ import annotations

import json

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._devlink import (
    parse_dev_info,
    parse_eswitch,
    parse_param,
    parse_port,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._ethtool import parse_features
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError


def test_dev_info_error_answer_names_the_line():
    # shared/corpus/devlink/cx6dx-devlink-dev-info-error-no-data.txt (the whole output)
    with pytest.raises(ParseError) as err:
        parse_dev_info("kernel answers: No data available\n")
    assert err.value.kind == "devlink-dev-info"
    assert err.value.line_no == 1
    assert "No data available" in str(err.value)


@pytest.mark.parametrize("parser", [parse_dev_info, parse_eswitch, parse_port, parse_param])
def test_json_that_is_not_json_is_a_parse_error(parser):
    with pytest.raises(ParseError, match="invalid JSON"):
        parser('{"dev": {"pci/0000:03:00.0": ')


def test_json_with_the_wrong_section_is_a_parse_error():
    # `devlink -j port show` answer handed to the eswitch parser
    with pytest.raises(ParseError, match="'dev' section"):
        parse_eswitch('{"port": {"pci/0000:03:00.0/1": {"type": "eth"}}}')


def test_eswitch_text_and_json_give_the_same_data():
    text = "pci/0000:03:00.0: mode switchdev inline-mode none encap-mode basic\n"
    pretty = json.dumps(
        {"dev": {"pci/0000:03:00.0": {"mode": "switchdev", "inline-mode": "none", "encap-mode": "basic"}}}, indent=4
    )
    assert parse_eswitch(text) == parse_eswitch(pretty) == parse_eswitch("  \n" + pretty)


def test_port_text_and_json_give_the_same_data():
    # text: shared/corpus/devlink/ecpf-host-pf-rep-port-function-state.txt (second listing)
    text = (
        "pci/0000:03:00.0/196608: type eth netdev eth1 flavour pcipf controller 1 pfnum 0 external true"
        " splittable false\n"
        "  function:\n"
        "    hw_addr a0:88:c2:45:17:7c state inactive opstate detached roce enable max_io_eqs 120\n"
    )
    as_json = {"port": {"pci/0000:03:00.0/196608": {
        "type": "eth", "netdev": "eth1", "flavour": "pcipf", "controller": 1, "pfnum": 0, "external": True,
        "splittable": False, "function": {"hw_addr": "a0:88:c2:45:17:7c", "state": "inactive", "opstate": "detached",
                                          "roce": "enable", "max_io_eqs": 120}}}}
    assert parse_port(text) == parse_port(json.dumps(as_json))
    port = parse_port(text)["ports"]["pci/0000:03:00.0/196608"]
    assert port["external"] is True and port["controller"] == 1 and port["function"]["state"] == "inactive"


def test_port_show_with_no_devlink_device_is_empty():
    assert parse_port("") == {"ports": {}}
    assert parse_port("pci/0000:06:00.0\n") == {"ports": {}}  # a device without ports


def test_port_garbage_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_port("Error: devlink: Command not found\n")
    assert err.value.line_no == 1


def test_param_show_single_line_form_and_several_devices():
    # older iproute2 printed 'HANDLE: name X type Y' on one line (as devlink monitor still does)
    text = (
        "pci/0000:03:00.0: name flow_steering_mode type driver-specific\n"
        "  values:\n"
        "    cmode runtime value smfs\n"
        "pci/0000:03:00.1: name flow_steering_mode type driver-specific\n"
        "  values:\n"
        "    cmode runtime value dmfs\n"
    )
    devices = parse_param(text)["devices"]
    assert devices["pci/0000:03:00.0"]["flow_steering_mode"]["values"] == {"runtime": "smfs"}
    assert devices["pci/0000:03:00.1"]["flow_steering_mode"]["values"] == {"runtime": "dmfs"}


def test_param_cmode_line_without_value_is_a_parse_error():
    text = "pci/0000:03:00.0:\n  name enable_roce type generic\n    values:\n      cmode driverinit\n"
    with pytest.raises(ParseError) as err:
        parse_param(text)
    assert err.value.line_no == 4


def test_dev_info_two_devices_keep_their_own_versions():
    block = (
        "{handle}:\n  driver mlx5_core\n  serial_number MT0000X00000\n  versions:\n      fixed:\n"
        "        fw.psid MT_0000000884\n      running:\n        fw.version {fw}\n"
        "      stored:\n        fw.version {fw}\n"
    )
    text = block.format(handle="pci/0000:03:00.0", fw="32.43.1014") + block.format(
        handle="pci/0000:03:00.1", fw="32.41.1000"
    )
    devices = parse_dev_info(text)["devices"]
    assert devices["pci/0000:03:00.0"]["versions"]["running"]["fw.version"] == "32.43.1014"
    assert devices["pci/0000:03:00.1"]["versions"]["stored"]["fw.version"] == "32.41.1000"


def test_ethtool_grep_that_matched_nothing_gives_no_features():
    assert parse_features("") == {"interface": None, "features": {}}


def test_ethtool_error_text_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_features("netlink error: no device matches name (offset 24)\n")
    assert err.value.kind == "ethtool-features" and err.value.line_no == 1


def test_ethtool_requested_off_and_fixed():
    got = parse_features("Features for p0:\nhw-tc-offload: on [requested off]\ntx-checksum-fcoe-crc: off [fixed]\n")
    assert got["interface"] == "p0"
    expected = {"enabled": True, "fixed": False, "requested": False, "sub_feature": False}
    assert got["features"]["hw-tc-offload"] == expected
    assert got["features"]["tx-checksum-fcoe-crc"]["fixed"] is True
