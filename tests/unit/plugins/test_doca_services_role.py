"""roles/doca_services: argument spec equals defaults; services and templates follow the module's catalogue;
the SNAP templates render the targets, namespaces and controllers."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca

ROLE = Path(__file__).resolve().parents[3] / "roles" / "doca_services"


def _load(*parts):
    return yaml.safe_load(ROLE.joinpath(*parts).read_text(encoding="utf-8"))


def test_argument_spec_equals_defaults():
    defaults = _load("defaults", "main.yml")
    options = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert spec.get("description"), name
        if isinstance(defaults[name], str) and "{{" in defaults[name]:
            assert "default" not in spec, name  # templated: documented in words
        else:
            assert spec["default"] == defaults[name], name


def test_default_services_are_the_catalogue_and_pinned():
    defaults = _load("defaults", "main.yml")
    assert sorted(s["name"] for s in defaults["doca_services_list"]) == sorted(_doca.SERVICES)
    for svc in defaults["doca_services_list"]:
        _doca.check_pinned(_doca.image_for(svc["name"], svc["version"]))
    assert set(_load("vars", "main.yml")["__doca_services_templates"]) == set(_doca.SERVICES)


def test_every_template_exists():
    for files in _load("vars", "main.yml")["__doca_services_templates"].values():
        for template in files.values():
            assert (ROLE / "templates" / template).is_file(), template


def test_snap_templates_render_targets_namespaces_and_controllers():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLE / "templates")), trim_blocks=True)
    values = {
        "doca_services_snap_subsystem_nqn": "nqn.2022-10.io.nvda.nvme:0",
        "doca_services_snap_targets": [{"name": "nvme0", "address": "192.0.2.10",
                                        "nqn": "nqn.2026-01.org.example:storage0"}],
        "doca_services_snap_controllers": [{"name": "NVMeCtrl1", "pf_id": 0}],
        "doca_services_snap_namespaces": [{"bdev": "nvme0n1", "nsid": 1, "controller": "NVMeCtrl1"}],
    }
    spdk = env.get_template("spdk_rpc_init.conf.j2").render(**values).splitlines()
    assert spdk[-1] == ("bdev_nvme_attach_controller -b nvme0 -t tcp -a 192.0.2.10 -f ipv4 -s 4420 "
                        "-n nqn.2026-01.org.example:storage0")
    snap = [line for line in env.get_template("snap_rpc_init.conf.j2").render(**values).splitlines()
            if not line.startswith("#")]
    assert snap == [
        "nvme_subsystem_create --nqn nqn.2022-10.io.nvda.nvme:0",
        "nvme_namespace_create -b nvme0n1 -n 1 --nqn nqn.2022-10.io.nvda.nvme:0",
        "nvme_controller_create --nqn nqn.2022-10.io.nvda.nvme:0 --ctrl NVMeCtrl1 --pf_id 0 --suspended",
        "nvme_controller_attach_ns -c NVMeCtrl1 -n 1",
        "nvme_controller_resume -c NVMeCtrl1",
    ]


def _hbn_startup(settings):
    from ansible.plugins.filter.core import to_nice_yaml

    # the template module's defaults: trim_blocks on, lstrip_blocks off
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLE / "templates")), trim_blocks=True)
    env.filters["ansible.builtin.to_nice_yaml"] = to_nice_yaml
    item = {} if settings is None else {"settings": settings}
    text = env.get_template("hbn_startup.yaml.j2").render(__doca_services_item=item)
    assert text.startswith("# Managed by bluefleet")
    return yaml.safe_load(text)


def test_hbn_startup_yaml_is_the_list_nvue_reads():
    """Issue 18 (6): the default (settings {}) rendered startup.yaml as '{}'; NVUE expects a list of operations."""
    defaults = _load("defaults", "main.yml")
    hbn = next(s for s in defaults["doca_services_list"] if s["name"] == "hbn")
    assert _hbn_startup(hbn["settings"]) == []
    assert _hbn_startup(None) == []
    tree = {"interface": {"lo": {"type": "loopback", "ip": {"address": {"10.0.0.1/32": {}}}}}}
    assert _hbn_startup(tree) == [{"set": tree}]
    assert _hbn_startup([{"set": tree}]) == [{"set": tree}]
