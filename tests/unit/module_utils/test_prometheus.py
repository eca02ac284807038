"""_prometheus.parse_metrics on the rules of the text exposition format 0.0.4
(prometheus.io/docs/instrumenting/exposition_formats). The page below is written for these tests by those
rules (HELP/TYPE lines, labels with escapes, a timestamp, special float values); it is not a capture.
"""

from __future__ import annotations

import math

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _prometheus

PAGE = (
    "# HELP port_rcv_data Octets received, divided by 4\n"
    "# TYPE port_rcv_data counter\n"
    'port_rcv_data{device="mlx5_0",port="1"} 250\n'
    'port_rcv_data{device="mlx5_1",port="1"} 1.5e+06 1395066363000\n'
    "# a comment\n"
    "\n"
    "# TYPE temp gauge\n"
    "temp NaN\n"
    'temp{path="C:\\\\dir\\"x\\"",note="a\\nb"} -Inf\n'
    "untyped_total +Inf\n"
)


def test_families_types_labels_values():
    fams = _prometheus.parse_metrics(PAGE)
    assert set(fams) == {"port_rcv_data", "temp", "untyped_total"}
    rcv = fams["port_rcv_data"]
    assert rcv["type"] == "counter" and rcv["help"] == "Octets received, divided by 4"
    assert rcv["samples"] == [
        {"labels": {"device": "mlx5_0", "port": "1"}, "value": 250.0, "timestamp": None},
        {"labels": {"device": "mlx5_1", "port": "1"}, "value": 1.5e6, "timestamp": 1395066363000},
    ]
    temp = fams["temp"]["samples"]
    assert fams["temp"]["type"] == "gauge" and math.isnan(temp[0]["value"]) and temp[0]["labels"] == {}
    assert temp[1]["labels"] == {"path": 'C:\\dir"x"', "note": "a\nb"} and temp[1]["value"] == -math.inf
    assert fams["untyped_total"]["type"] == "untyped" and fams["untyped_total"]["samples"][0]["value"] == math.inf


def test_empty_page_has_no_families():
    assert _prometheus.parse_metrics("") == {}
    assert _prometheus.parse_metrics("# only a comment\n") == {}


@pytest.mark.parametrize("line, message", [
    ("port_rcv_data{device=\"mlx5_0\"} twelve", "value 'twelve' is not a number"),
    ("port_rcv_data{device=mlx5_0} 1", "labels do not parse"),
    ("9bad 1", "is not a sample"),
    ("just_a_name", "is not a sample"),
    ("# TYPE port_rcv_data countr", "unknown type 'countr'"),
    ("# HELP 9bad text", "bad metric name '9bad'"),
])
def test_malformed_lines_are_named(line, message):
    with pytest.raises(_prometheus.PrometheusError, match="line 2") as err:
        _prometheus.parse_metrics("ok 1\n" + line + "\n")
    assert message in str(err.value)
