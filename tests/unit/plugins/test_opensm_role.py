"""roles/opensm (InfiniBand variant): argument specs equal the defaults (bluefleet_fabric_* first), and
opensm.conf / partitions.conf render.

File formats: opensm.conf is ``key value`` lines (``guid``, ``sm_priority``, ``partition_config_file``,
``log_file``, as opensm's own config file names them); partitions.conf lines are
``Name=PKey[, flags] : members ;`` - e.g. ``Default=0x7fff, ipoib : ALL_CAS=full, ALL_SWITCHES=full, SELF=full;``
(an smpartition listing in a public support note) and ``Default=0x7fff,ipoib,mtu=5:ALL=full;`` (a public
opensm setup note). Both found with the code search of this project's tools.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
import yaml

ROLE = Path(__file__).resolve().parents[3] / "roles" / "opensm"


def _load(*parts):
    return yaml.safe_load(ROLE.joinpath(*parts).read_text(encoding="utf-8"))


def _render(text, variables):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(text).render(**variables)


def _default(value, variables):
    if not isinstance(value, str) or "{{" not in value:
        return value
    text = _render(value, variables)
    return yaml.safe_load(text) if text and not text.startswith("0x") else text


def test_argument_spec_equals_defaults():
    defaults = _load("defaults", "main.yml")
    options = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert name.startswith("opensm_") and spec.get("description"), name
        assert _default(defaults[name], {}) == spec.get("default"), name


@pytest.mark.parametrize("shared, role_var, value", [
    ("bluefleet_fabric_link_type", "opensm_link_type", "ib"),
    ("bluefleet_fabric_subnet_manager", "opensm_subnet_manager", "host"),
    ("bluefleet_fabric_pkey", "opensm_pkey", "0x8001"),
    ("bluefleet_fabric_sm_priority", "opensm_priority", 14),
])
def test_the_shared_variable_wins(shared, role_var, value):
    assert _default(_load("defaults", "main.yml")[role_var], {shared: value}) == value


def test_opensm_conf_renders():
    text = _render((ROLE / "templates" / "opensm.conf.j2").read_text(),
                   {"inventory_hostname": "sim01", "opensm_guid": "0x946dae03004f296a", "opensm_priority": "14"})
    keys = dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert keys == {"guid": "0x946dae03004f296a", "sm_priority": "14",
                    "partition_config_file": "/etc/opensm/partitions.conf", "log_file": "/var/log/opensm.log"}


def test_partitions_conf_renders_one_full_member_partition():
    text = _render((ROLE / "templates" / "partitions.conf.j2").read_text(),
                   {"opensm_partition": "Compute", "opensm_pkey": "0x0001"})
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == ["Compute=0x0001, ipoib : ALL=full ;"]
    assert re.match(r"^[A-Za-z0-9_.-]+=0x[0-9a-fA-F]{1,4}, ipoib : ALL=full ;$", lines[0])
