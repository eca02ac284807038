"""dpusim HBN routes (``vtysh -c 'show ip route json'``) and Firefly PTP state (``pmc -u -b 0 'GET PORT_DATA_SET'``):
derived from the services' config files, answered only while their containers run; read back with the
collection's parsers (plugins/module_utils/parsers/_frr.py, _pmc.py)."""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _frr, _pmc

from dpusim import kubelet, state

POD = """apiVersion: v1
kind: Pod
metadata:
  name: {pod}
spec:
  containers:
    - name: {ctr}
      image: nvcr.io/nvidia/doca/{repo}:{tag}
"""
# NVUE startup.yaml as roles/doca_services renders HBN settings (the `- set:` list form NVUE writes).
STARTUP = """- set:
    interface:
      p0_if:
        ip:
          address:
            10.10.0.1/30: {}
      lo:
        ip:
          address:
            10.0.0.5/32: {}
    vrf:
      default:
        router:
          static:
            172.16.0.0/16:
              via:
                10.10.0.2: {}
"""
VTYSH = ("vtysh", "-c", "show ip route json")
PMC = ("pmc", "-u", "-b", "0", "GET PORT_DATA_SET")


def _dpu(twin):
    return twin("bluefield3", role="dpu")


def _hbn(dpu, startup=STARTUP, tag="2.4.1-doca2.9.1"):
    conf = dpu.root / "var" / "lib" / "hbn" / "etc" / "nvue.d"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "startup.yaml").write_text(startup)
    kdir = dpu.root / "etc" / "kubelet.d"
    kdir.mkdir(parents=True, exist_ok=True)
    (kdir / "doca_hbn.yaml").write_text(POD.format(pod="doca-hbn-service", ctr="doca-hbn", repo="doca_hbn", tag=tag))


def _firefly(dpu, conf_text):
    conf = dpu.root / "etc" / "firefly"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "ptp4l.conf").write_text(conf_text)
    kdir = dpu.root / "etc" / "kubelet.d"
    kdir.mkdir(parents=True, exist_ok=True)
    (kdir / "doca_firefly.yaml").write_text(POD.format(pod="doca-firefly", ctr="doca-firefly", repo="doca_firefly",
                                                       tag="1.5.0-doca2.9.0"))


def test_hbn_routes_follow_its_startup_config(twin):
    dpu = _dpu(twin)
    _hbn(dpu)
    rc, out, err = dpu.run(*VTYSH)
    assert rc == 0, err
    routes = _frr.parse_ip_route_json(out)
    assert _frr.selected_prefixes(routes, "static") == ["172.16.0.0/16"]
    assert _frr.selected_prefixes(routes, "connected") == ["10.0.0.5/32", "10.10.0.0/30"]
    static = [r for r in routes if r["protocol"] == "static"][0]
    assert [h["ip"] for h in static["nexthops"]] == ["10.10.0.2"]
    # the capture's layout: "{" + entries joined by newline-comma + newline "}"
    assert out.startswith('{"10.0.0.5/32":[{') and "\n," in out and out.endswith("\n}\n")


def test_hbn_route_change_shows_after_config_change(twin):
    dpu = _dpu(twin)
    _hbn(dpu)
    _hbn(dpu, STARTUP.replace("172.16.0.0/16", "172.17.0.0/16"))
    rc, out, _err = dpu.run(*VTYSH)
    assert rc == 0
    assert _frr.selected_prefixes(_frr.parse_ip_route_json(out), "static") == ["172.17.0.0/16"]


def test_hbn_with_empty_settings_has_no_routes(twin):
    dpu = _dpu(twin)
    _hbn(dpu, "# Managed by bluefleet\n{}\n")
    rc, out, _err = dpu.run(*VTYSH)
    assert (rc, _frr.parse_ip_route_json(out)) == (0, [])


def test_vtysh_fails_when_hbn_is_not_running(twin):
    dpu = _dpu(twin)
    rc, out, err = dpu.run(*VTYSH)
    assert (rc, out, err) == (1, "", "Exiting: failed to connect to any daemons.\n")
    _hbn(dpu)
    assert dpu.run(*VTYSH)[0] == 0
    with state.open_node(dpu.root) as node:
        kubelet.crash(node, "doca-hbn", stay_down=True)
    assert dpu.run(*VTYSH)[:2] == (1, "")


def test_vtysh_refuses_other_commands(twin):
    dpu = _dpu(twin)
    _hbn(dpu)
    rc, _out, err = dpu.run("vtysh", "-c", "show bgp summary json")
    assert rc == 1 and "show ip route json" in err


def test_ptp_master_without_grandmaster_config(twin):
    dpu = _dpu(twin)
    _firefly(dpu, "[global]\ndomainNumber 0\ntime_stamping hardware\n")
    rc, out, err = dpu.run(*PMC)
    assert rc == 0, err
    ports = _pmc.parse_port_data_set(out)
    assert [p["port_state"] for p in ports] == ["MASTER"]
    assert out.startswith("sending: GET PORT_DATA_SET\n\t")
    assert "\t\tportState               MASTER\n" in out


def test_ptp_slave_when_it_follows_a_grandmaster(twin):
    dpu = _dpu(twin)
    _firefly(dpu, "[global]\nslaveOnly 1\nlogSyncInterval -4\n")
    rc, out, _err = dpu.run(*PMC)
    ports = _pmc.parse_port_data_set(out)
    assert rc == 0 and ports[0]["port_state"] == "SLAVE"
    assert ports[0]["fields"]["logSyncInterval"] == "-4"
    assert ports[0]["port_identity"].endswith("-1") and ".fffe." in ports[0]["port_identity"]


def test_pmc_gets_no_answer_when_firefly_is_not_running(twin):
    dpu = _dpu(twin)
    rc, out, _err = dpu.run(*PMC)
    assert (rc, out) == (0, "sending: GET PORT_DATA_SET\n")
    assert _pmc.parse_port_data_set(out) == []


def test_pmc_refuses_other_queries(twin):
    dpu = _dpu(twin)
    rc, _out, err = dpu.run("pmc", "-u", "-b", "0", "GET TIME_STATUS_NP")
    assert rc == 1 and "GET PORT_DATA_SET" in err


def test_gpu_host_has_neither(twin):
    host = twin("bluefield3", role="host")
    assert host.run(*VTYSH)[0] == 1
    assert host.run(*PMC)[:2] == (0, "sending: GET PORT_DATA_SET\n")


def test_hbn_settings_as_a_tree_or_one_set_document(twin):
    tree = ("vrf:\n  default:\n    router:\n      static:\n        192.0.2.0/24:\n"
            "          via:\n            10.1.1.1: {}\n")
    for index, text in enumerate((tree, "set:\n" + "".join("  " + line + "\n" for line in tree.splitlines()))):
        dpu = twin("bluefield3", role="dpu", name="dpu%d" % index)
        _hbn(dpu, text)
        rc, out, _err = dpu.run(*VTYSH)
        assert rc == 0
        assert _frr.selected_prefixes(_frr.parse_ip_route_json(out)) == ["192.0.2.0/24"], text


def test_ptp_client_only_is_slave_too(twin):
    dpu = _dpu(twin)
    _firefly(dpu, "[global]\nclientOnly 1\n")
    assert _pmc.parse_port_data_set(dpu.run(*PMC)[1])[0]["port_state"] == "SLAVE"
