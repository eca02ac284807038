"""roles/roce_qos: argument specs equal the defaults (each default reads bluefleet_roce_* first), and the
boot-time files render from the resolved settings."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "roce_qos"


def _load(*parts):
    return yaml.safe_load(ROLE.joinpath(*parts).read_text(encoding="utf-8"))


def _env():
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["regex_replace"] = lambda value, pattern, repl: re.sub(pattern, repl, value)
    env.filters["bool"] = lambda value: value in (True, "true", "True", "yes", 1)
    return env


def _render_default(value, variables):
    if not isinstance(value, str) or "{{" not in value:
        return value
    text = _env().from_string(value).render(**variables)
    if not text:
        return text
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def test_argument_spec_equals_defaults():
    defaults = _load("defaults", "main.yml")
    options = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert name.startswith("roce_qos_"), name
        assert spec.get("description"), name
        assert _render_default(defaults[name], {}) == spec.get("default"), name


@pytest.mark.parametrize("shared, role_var, value", [
    ("bluefleet_roce_priority", "roce_qos_priority", 5),
    ("bluefleet_roce_dscp", "roce_qos_dscp", 34),
    ("bluefleet_roce_cnp_dscp", "roce_qos_cnp_dscp", 46),
    ("bluefleet_roce_mtu", "roce_qos_mtu", 4200),
    ("bluefleet_roce_trust", "roce_qos_trust", "pcp"),
    ("bluefleet_fs_root", "roce_qos_fs_root", "/tmp/twin"),
    ("preflight_fs_root", "roce_qos_sysfs_root", "/var/lib/dpusim"),
    ("bluefleet_fs_root", "roce_qos_sysfs_root", "/tmp/twin"),
    ("bluefleet_linux_services", "roce_qos_linux_services", False),
])
def test_the_shared_variable_wins_over_the_role_default(shared, role_var, value):
    defaults = _load("defaults", "main.yml")
    assert _render_default(defaults[role_var], {shared: value}) == value


def test_every_shared_variable_is_documented():
    defaults = _load("defaults", "main.yml")
    description = " ".join(_load("meta", "argument_specs.yml")["argument_specs"]["main"]["description"])
    shared = set(re.findall(r"bluefleet_roce_\w+", " ".join(str(v) for v in defaults.values())))
    assert shared and all(name in description for name in shared), shared


def _boot_vars(**override):
    values = {"roce_qos_trust": "dscp", "roce_qos_dscp": 26, "roce_qos_priority": 3, "roce_qos_cnp_dscp": 48,
              "roce_qos_mode": "v2", "__roce_qos_tos": 104, "roce_qos_mtu": 9000, "roce_qos_fs_root": "/",
              "roce_qos_sysfs_root": "/",
              "__roce_qos_tc_bw": [8, 7, 7, 50, 7, 7, 7, 7], "__roce_qos_netdevs": ["p0", "p1"],
              "__roce_qos_rdma": {"links": [{"ibdev": "mlx5_0", "port": 1, "netdev": "p0"},
                                            {"ibdev": "mlx5_1", "port": 1, "netdev": "p1"},
                                            {"ibdev": "mlx5_2", "port": 1, "netdev": "tmfifo"}]}}
    values.update(override)
    return values


def _template(name, variables):
    return _env().from_string((ROLE / "templates" / name).read_text(encoding="utf-8")).render(**variables)


def test_settings_file_lists_every_setting_for_the_configured_ports():
    text = _template("roce-qos.env.j2", _boot_vars())
    lines = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert lines == {"ROCE_PORTS": '"p0:mlx5_0:1 p1:mlx5_1:1"', "ROCE_TRUST": "dscp", "ROCE_DSCP": "26",
                     "ROCE_PRIORITY": "3", "ROCE_PFC": "0,0,0,1,0,0,0,0", "ROCE_PRIO_TC": "0,1,2,3,4,5,6,7",
                     "ROCE_TSA": "ets,ets,ets,ets,ets,ets,ets,ets", "ROCE_TC_BW": "8,7,7,50,7,7,7,7",
                     "ROCE_ECN": "0,0,0,1,0,0,0,0", "ROCE_CNP_DSCP": "48", "ROCE_MODE": "2", "ROCE_TOS": "104",
                     "ROCE_MTU": "9000", "ROCE_SYSFS_ROOT": ""}


def test_settings_file_follows_the_priority():
    text = _template("roce-qos.env.j2", _boot_vars(roce_qos_priority=5, roce_qos_mode="v1"))
    assert "ROCE_PFC=0,0,0,0,0,1,0,0\n" in text and "ROCE_ECN=0,0,0,0,0,1,0,0\n" in text and "ROCE_MODE=1\n" in text


def test_settings_file_carries_the_tool_environment_and_sysfs_root():
    env = {"DPUSIM_ROOT": "/var/lib/dpusim", "PATH": "/var/lib/dpusim/bin:/usr/bin"}
    text = _template("roce-qos.env.j2", _boot_vars(bluefleet_environment=env, roce_qos_sysfs_root="/var/lib/dpusim/"))
    assert "\nDPUSIM_ROOT=/var/lib/dpusim\n" in text and "\nPATH=/var/lib/dpusim/bin:/usr/bin\n" in text
    assert "\nROCE_SYSFS_ROOT=/var/lib/dpusim\n" in text


def test_unit_runs_the_script_with_the_settings_file_under_the_root():
    unit = _template("bluefleet-roce-qos.service.j2", _boot_vars(roce_qos_fs_root="/srv/twin/"))
    assert "EnvironmentFile=/srv/twin/etc/bluefleet/roce-qos.env\n" in unit
    assert "ExecStart=/srv/twin/usr/local/sbin/bluefleet-roce-qos\n" in unit
    assert "Type=oneshot\n" in unit and "WantedBy=multi-user.target\n" in unit
    plain = _template("bluefleet-roce-qos.service.j2", _boot_vars())
    assert "ExecStart=/usr/local/sbin/bluefleet-roce-qos\n" in plain


def test_boot_script_refuses_to_run_without_its_settings(tmp_path):
    import subprocess
    res = subprocess.run(["sh", str(ROLE / "files" / "bluefleet-roce-qos")], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}, timeout=30, check=False)
    assert res.returncode != 0 and "ROCE_PORTS is not set" in res.stderr


def test_preflight_reads_the_boot_files_the_role_writes():
    """Preflight's read answers the boot plan only for the paths it read: the role's files and the enable link."""
    variables = _load("vars", "main.yml")
    preflight = yaml.safe_load((ROOT / "roles" / "preflight" / "vars" / "main.yml").read_text(encoding="utf-8"))
    paths = [f["path"] for f in variables["__roce_qos_boot_files"]] + [variables["__roce_qos_enable_link"][0]["path"]]
    assert preflight["__preflight_fabric_files"] == paths
