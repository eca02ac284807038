"""The real programs in the loop (issue 18): every command line the modules build, run against the real binary.

Needs Debian's mstflint, perftest, Open vSwitch, nftables, iproute2 and ShellCheck (``scripts/ensure-real-tools.sh``
installs them, as root). Where a program is not installed its tests are skipped with "not run: <program> not
installed (scripts/ensure-real-tools.sh)"; under ``CI=true`` a missing program is a failure. The namespace tests
need root (they create their own network namespace and delete it) and are skipped, with that reason, otherwise.

* argv: the command lines come from the modules' own builders (``fw_reset.reset_argv``,
  ``_cards.reset_query_argv`` / ``nvconfig_query_argv`` / ``flint_query_argv`` / ``burn_argv`` / ``image_query_argv``,
  ``nvconfig.set_argv``, ``host_restriction.argv_for``, ``ovs_bridge.plan``, ``ib_write_bw.argv_for``,
  ``bluefleet.capture.command_list``), with MFT's program names mapped to mstflint's (Debian has no MFT) and a device
  that does not exist. A usage error (unknown option or command, the usage text) fails; the program accepting the
  options and then failing to open the device (or image, or database) passes.
* Rendered configuration loaded by the real program: the firewall ruleset (``nft -c -f`` and ``nft -f`` into a
  namespace with the chains' devices), the RoCE boot script (``bash -n`` and ``shellcheck``).
* Parsers read what the real programs print here: ``ethtool -k`` and ``ovs-vsctl show`` in the test's namespace /
  database, and ``swanctl --list-sas`` (``_swanctl``; ``--raw`` by the twin's ``ip xfrm``) between two real charons
  in two namespaces (kernel-libipsec: this kernel has no ESP; needs libcharon-extra-plugins). ``ip`` and ``nft
  list`` output has no parser in the collection, so none is exercised here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.filter.firewall import firewall_ruleset
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _cards
from ansible_collections.bluefleet.dpu.plugins.modules import (
    fw_reset,
    host_restriction,
    ib_write_bw,
    nvconfig,
    ovs_bridge,
)

from bluefleet import capture

ROOT = Path(__file__).resolve().parents[2]
NO_DEVICE = "0000:ff:1f.7"  # a PCI address no machine here has
NO_RDMA = "mlx5_99"

# Usage errors of the tools (their option parsers): any of these in the output means the command line is wrong.
USAGE_ERRORS = re.compile(
    r"unrecognized option|unrecognized arguments|invalid argument:|Invalid Command or flag|unknown command|"
    r"Unknown command|invalid option|^usage:|missing argument|requires an argument|Invalid command",
    re.IGNORECASE | re.MULTILINE)
# What a tool prints when the options were accepted and the device (image, database) is not there.
NO_SUCH = re.compile(
    r"Cannot open Device|Failed to open the device|Failed to Identify Device|Unknown device|Cannot open Image|"
    r"No valid image found|"
    r"not supported on virtual machines|Unable to find the Infiniband/RoCE device|Did not detect devices|"
    r"database connection failed|No such file or directory|No such device|Cannot get device|no device matches name|"
    # no mlx5 / devlink / RDMA subsystem in this kernel: the tool got as far as asking it
    r"Failed to connect to devlink Netlink|Failed to get IB devices list|Failed to open NETLINK_RDMA socket",
    re.IGNORECASE)
# The programs scripts/ensure-real-tools.sh installs (Debian 12 packages). The others the modules run come with
# NVIDIA MFT (mst, mlxfwmanager), DOCA / BlueField images (bfver, bfvcheck, mlxbf-bootctl), MLNX_OFED's mlnx-tools
# (mlnx_qos, cma_roce_*, ibdev2netdev, show_gids) or the NVIDIA driver (nvidia-smi): not in Debian, so not here.
DEBIAN_PROGRAMS = {"mstflint", "mstconfig", "mstfwreset", "mstprivhost", "ib_write_bw", "ibv_devinfo", "rdma",
                   "devlink", "ip", "ethtool", "ovs-vsctl", "nft", "swanctl", "charon", "shellcheck", "bash"}


def need(program):
    path = shutil.which(program)
    if path is None:
        if program not in DEBIAN_PROGRAMS:
            pytest.skip("not run: %s is not packaged by Debian (MFT, DOCA, MLNX_OFED or the NVIDIA driver ship it)"
                        % program)
        not_run("not run: %s not installed (scripts/ensure-real-tools.sh)" % program)
    return path


def not_run(message):
    """A Debian program or kernel feature that make test installs or needs is missing: not run here, a failure in CI."""
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def need_root():
    if os.geteuid() != 0:
        pytest.skip("not run: network namespaces need root")


def run(argv, timeout=30, env=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                          env=dict(env or os.environ, LC_ALL="C"))


def mstflint_name(argv):
    return [_cards.MSTFLINT_NAME.get(argv[0], argv[0])] + list(argv[1:])


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    path = tmp_path_factory.mktemp("img") / "fw image with spaces.bin"
    path.write_bytes(b"\0" * 4096)
    return str(path)


def module_argvs(image, ovs_db):
    """Every command line the modules build, from their own builders."""
    out = []
    for sync1 in (True, False):
        out.append(fw_reset.reset_argv("mstfwreset", NO_DEVICE, sync1))
    out.append(_cards.reset_query_argv("mstfwreset", NO_DEVICE))
    out.append(_cards.nvconfig_query_argv("mstconfig", NO_DEVICE))
    out.append(_cards.flint_query_argv("mstflint", NO_DEVICE))
    out.append(nvconfig.set_argv("mstconfig", NO_DEVICE, ["NUM_OF_VFS=8", "SRIOV_EN=1", "LINK_TYPE_P1=ETH"]))
    out.append(_cards.image_query_argv("mstflint", image))
    for cross in (False, True):
        out.append(_cards.burn_argv("mstflint", NO_DEVICE, image, cross_psid=cross))
    every_flag = dict.fromkeys(host_restriction.FLAGS, True)
    for level in ("restricted", "privileged"):
        out.append(host_restriction.argv_for(NO_DEVICE, {"state": level}, every_flag, "mstprivhost"))
    params = {"bridge": "br-test", "state": "present", "datapath_type": "netdev", "ports": ["pf0hpf", "p0"],
              "purge_ports": True, "other_config": {"hw-offload": "true", "tc-policy": "skip_sw"}}
    absent = {"exists": False, "datapath_type": None, "ports": [], "interface_errors": {}}
    present = {"exists": True, "datapath_type": "system", "ports": ["old0"], "interface_errors": {}}
    db = ["ovs-vsctl", "--db=unix:%s" % ovs_db, "--timeout=2"]
    for br in (absent, present):
        out.append(db + ovs_bridge.plan(params, br, {})[0])
    out.append(db + ovs_bridge.plan(dict(params, state="absent"), present, {})[0])
    perf = {"device": NO_RDMA, "ib_port": 1, "gid_index": 3, "tos": 106, "size": 65536, "qps": 4, "duration": 2,
            "tcp_port": 18515, "use_cuda": None, "server": None}
    out.append(ib_write_bw.argv_for(perf))
    out.append(ib_write_bw.argv_for(dict(perf, server="127.0.0.1")))
    out.append(ib_write_bw.argv_for(dict(perf, use_cuda=0, server="127.0.0.1")))
    out.extend(mstflint_name(a) for a in capture.command_list([NO_DEVICE], ["nosuchnet0"], [NO_RDMA]))
    return out


def _ids():
    return ["%s-%d" % (a[0], i) for i, a in enumerate(module_argvs("IMAGE", "/nonexistent/db.sock"))]


@pytest.mark.parametrize("index", range(len(_ids())), ids=_ids())
def test_module_command_line_is_accepted_by_the_real_program(index, image, tmp_path):
    argv = module_argvs(image, str(tmp_path / "no-ovsdb.sock"))[index]
    need(argv[0])
    if "--use_cuda=0" in argv and "use_cuda" not in run([argv[0], "--help"]).stdout:
        pytest.skip("not applicable: this %s is built without CUDA (Debian's is); use_cuda needs perftest built "
                    "with CUDA" % argv[0])
    result = run(argv, timeout=20)
    text = result.stdout + result.stderr
    assert not USAGE_ERRORS.search(text), "usage error from %r (rc %d):\n%s" % (argv, result.returncode, text)
    assert result.returncode != 0 and NO_SUCH.search(text), (
        "expected a 'no such device' failure from %r, got rc %d:\n%s" % (argv, result.returncode, text))


def test_a_wrong_option_is_caught(image):
    """The classification itself can fail: a misspelt option is a usage error for each tool family."""
    for argv in (["mstflint", "-d", NO_DEVICE, "--bogus", "q"], ["mstfwreset", "-d", NO_DEVICE, "--bogus", "q"],
                 ["mstconfig", "-d", NO_DEVICE, "sett", "A=1"], ["ib_write_bw", "-d", NO_RDMA, "--bogus"]):
        need(argv[0])
        result = run(argv)
        assert USAGE_ERRORS.search(result.stdout + result.stderr), argv


def test_mstflint_tools_refuse_an_mst_device_file():
    """What the twin models (dpusim.tools._common.MST_NAME_REFUSAL) is what the real programs print."""
    from dpusim.tools._common import MST_NAME_REFUSAL
    dev = "/dev/mst/mt4129_pciconf0"
    for tool, (rc, out, err) in MST_NAME_REFUSAL.items():
        need(tool)
        result = run([tool, "-d", dev, "query" if tool == "mstprivhost" else "q"])
        assert (result.returncode, result.stdout, result.stderr) == (rc, out.format(dev=dev), err.format(dev=dev))


# --- rendered configuration loaded by the real program --------------------------------------------------------------

@pytest.fixture
def netns():
    need_root()
    need("ip")
    name = "bfrt-%s" % uuid.uuid4().hex[:8]
    assert run(["ip", "netns", "add", name]).returncode == 0
    try:
        yield name
    finally:
        run(["ip", "netns", "del", name])


GROUPS = {"all": ["h1", "h2"], "gpu_hosts": ["h1", "h2"]}
HOSTVARS = {"h1": {"bluefleet_host_overlay_address": "10.10.0.1/24"},
            "h2": {"bluefleet_host_overlay_address": "fd00:10::2/64"}}
NETWORKS = [{"name": "overlay", "host_port": "pf0hpf", "fabric_port": "vxlan0", "rules": [
    {"name": "ping", "peers": ["10.10.0.0/24"], "protocol": "icmp"},
    {"name": "ping6", "peers": ["fd00::/64"], "protocol": "icmpv6"},
    {"name": "ssh", "peers": ["10.0.0.0/8"], "protocol": "tcp", "ports": [22, "8000-8010"]},
    {"name": "dns", "peers": ["10.0.0.0/8", "fd00::/64"], "protocol": "udp", "ports": [53], "direction": "inbound"},
    {"name": "any", "peers": ["192.0.2.0/24"], "protocol": "any"}]}]


def test_firewall_ruleset_is_loaded_by_nft(netns, tmp_path):
    need("nft")
    path = tmp_path / "bluefleet.nft"
    path.write_text(firewall_ruleset(NETWORKS, GROUPS, HOSTVARS), encoding="utf-8")
    check = run(["ip", "netns", "exec", netns, "nft", "-c", "-f", str(path)])
    assert check.returncode == 0, check.stderr
    assert run(["ip", "-n", netns, "link", "add", "pf0hpf", "type", "veth", "peer", "name", "vxlan0"]).returncode == 0
    for _attempt in range(2):  # loaded twice: the file replaces its table whole
        load = run(["ip", "netns", "exec", netns, "nft", "-f", str(path)])
        assert load.returncode == 0, load.stderr
    listed = run(["ip", "netns", "exec", netns, "nft", "list", "table", "netdev", "bluefleet_firewall"])
    assert listed.returncode == 0
    assert listed.stdout.count("meta l4proto ipv6-icmp") == 2
    assert 'type filter hook egress device "pf0hpf"' in listed.stdout


def test_the_roce_boot_script_passes_bash_n_and_shellcheck():
    script = ROOT / "roles" / "roce_qos" / "files" / "bluefleet-roce-qos"
    assert run(["bash", "-n", str(script)]).returncode == 0
    need("shellcheck")
    result = run(["shellcheck", str(script)])
    assert result.returncode == 0, result.stdout


def test_the_setup_scripts_pass_shellcheck():
    need("shellcheck")
    result = run(["shellcheck", *sorted(str(p) for p in (ROOT / "scripts").glob("*.sh"))])
    assert result.returncode == 0, result.stdout


def test_tools_info_reads_the_real_versions(monkeypatch, capsys):
    """tools_info against the installed programs: Debian 12's mstflint and strongSwan 5.9.8 (no packet offload)."""
    import json

    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.bluefleet.dpu.plugins.modules import tools_info
    need("mstflint")
    need("swanctl")
    with patch_module_args({"require": ["firmware"]}):
        with pytest.raises(SystemExit):
            tools_info.main()
    result = json.loads(capsys.readouterr().out)
    assert "failed" not in result, result
    assert re.fullmatch(r"\d+\.\d+\.\d+(-\d+)?", result["tools"]["mstflint"]["version"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", result["tools"]["strongswan"]["version"])
    packet = tuple(int(x) for x in result["tools"]["strongswan"]["version"].split(".")) >= (5, 9, 10)
    assert result["ipsec_packet_offload"] is packet


# --- Open vSwitch: the module and the parser against a real ovsdb-server + ovs-vswitchd -----------------------------

@pytest.fixture
def real_ovs(tmp_path):
    """ovsdb-server and ovs-vswitchd of this test only (unix socket in tmp_path, netdev datapath); stopped after."""
    for program in ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"):
        need(program)
    schema = Path("/usr/share/openvswitch/vswitch.ovsschema")
    env = dict(os.environ, OVS_RUNDIR=str(tmp_path), OVS_DBDIR=str(tmp_path), OVS_LOGDIR=str(tmp_path), LC_ALL="C")
    sock = "unix:%s/db.sock" % tmp_path
    started = []
    try:
        for argv in (["ovsdb-tool", "create", str(tmp_path / "conf.db"), str(schema)],
                     ["ovsdb-server", str(tmp_path / "conf.db"), "--remote=p" + sock, "--pidfile", "--detach",
                      "--log-file"],
                     ["ovs-vsctl", "--no-wait", "init"],
                     ["ovs-vswitchd", "--pidfile", "--detach", "--log-file", sock]):
            result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=False)
            assert result.returncode == 0, (argv, result.stderr)
            if argv[0] in ("ovsdb-server", "ovs-vswitchd"):
                started.append(tmp_path / ("%s.pid" % argv[0]))
        yield env
    finally:
        for pidfile in reversed(started):
            if pidfile.exists():
                os.kill(int(pidfile.read_text().strip()), 15)


def _ovs_bridge(monkeypatch, capsys, env, args, check_mode=False):
    import json

    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
    monkeypatch.setattr(ovs_bridge, "ToolRunner", lambda timeout: ToolRunner(timeout=timeout, environ=env))
    with patch_module_args(dict(args, _ansible_check_mode=check_mode)):
        with pytest.raises(SystemExit):
            ovs_bridge.main()
    return json.loads(capsys.readouterr().out)


def test_ovs_bridge_against_real_open_vswitch(real_ovs, monkeypatch, capsys):
    """check mode, apply, apply again, absent with datapath_type (issue 18 (6)), against the real programs."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._ovs import parse_vsctl_show
    args = {"bridge": "br-sfc", "datapath_type": "netdev", "other_config": {"hw-offload": "true"}}
    check = _ovs_bridge(monkeypatch, capsys, real_ovs, args, check_mode=True)
    assert check["changed"] is True and "failed" not in check, check
    shown = run(["ovs-vsctl", "show"], env=real_ovs).stdout
    assert "br-sfc" not in shown
    applied = _ovs_bridge(monkeypatch, capsys, real_ovs, args)
    assert applied["changed"] is True and "failed" not in applied, applied
    assert applied["bridge"]["datapath_type"] == "netdev"
    again = _ovs_bridge(monkeypatch, capsys, real_ovs, args)
    assert again["changed"] is False, again
    parsed = parse_vsctl_show(run(["ovs-vsctl", "show"], env=real_ovs).stdout)
    assert json_dumps(parsed).count("br-sfc") >= 1
    gone = _ovs_bridge(monkeypatch, capsys, real_ovs, dict(args, state="absent"))
    assert gone["changed"] is True and "failed" not in gone, gone
    assert "br-sfc" not in run(["ovs-vsctl", "show"], env=real_ovs).stdout


def json_dumps(data):
    import json
    return json.dumps(data)


def test_ethtool_features_of_a_real_veth_parse(netns):
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._ethtool import parse_features
    need("ethtool")
    made = run(["ip", "-n", netns, "link", "add", "ens1f0np0", "type", "veth", "peer", "name", "pf0hpf"])
    assert made.returncode == 0, made.stderr
    out = run(["ip", "netns", "exec", netns, "ethtool", "-k", "ens1f0np0"])
    assert out.returncode == 0, out.stderr
    features = parse_features(out.stdout)
    assert json_dumps(features).count("tx-checksumming") == 1


# --- strongSwan: the role's swanctl configuration loaded into a real charon in the test's namespace ----------------

def _render_connections(hw_offload):
    import jinja2
    from ansible.plugins.filter.core import to_bool
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT / "roles" / "ipsec" / "templates")),
                             trim_blocks=True)
    env.filters["bool"] = to_bool
    peers = [{"name": "d2", "local_uplink_ip": "192.0.2.1", "uplink_ip": "192.0.2.2", "local_vtep": "10.0.0.1/32",
              "vtep": "10.0.0.2/32"}]
    text = env.get_template("connections.conf.j2").render(
        ansible_managed="test", inventory_hostname="d1", ipsec_topology="mesh", __ipsec_peers=peers,
        ipsec_encap=False, ipsec_proposals="aes256gcm16-prfsha384-ecp384", ipsec_auth="psk",
        ipsec_esp_proposals="aes256gcm16-ecp384", ipsec_start_action="trap", ipsec_hw_offload=hw_offload)
    secret = 'secrets {\n    ike-d2 {\n        id = d2\n        secret = "0123456789abcdef0123456789abcdef"\n    }\n}\n'
    return text + "\n" + secret


@pytest.fixture
def charon(netns, tmp_path):
    """A charon of this test in its namespace, its vici socket in tmp_path (no system socket is touched)."""
    daemon = next((p for p in ("/usr/lib/ipsec/charon", "/usr/libexec/ipsec/charon") if os.path.exists(p)), None)
    if daemon is None:
        need("charon")
    need("swanctl")
    if os.path.exists("/var/run/charon.pid"):
        pytest.skip("not run: a charon of this machine runs (/var/run/charon.pid); the test's would clash with it")
    vici = "unix://%s/charon.vici" % tmp_path
    conf = tmp_path / "strongswan.conf"
    conf.write_text("charon {\n  plugins {\n    include /etc/strongswan.d/charon/*.conf\n"
                    "    vici {\n      socket = %s\n    }\n    stroke {\n      load = no\n    }\n  }\n"
                    "  install_routes = no\n}\nswanctl {\n  socket = %s\n}\n" % (vici, vici), encoding="utf-8")
    env = dict(os.environ, STRONGSWAN_CONF=str(conf), LC_ALL="C")
    run(["ip", "-n", netns, "link", "set", "lo", "up"])
    proc = subprocess.Popen(["ip", "netns", "exec", netns, daemon], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _attempt in range(100):
            if (tmp_path / "charon.vici").exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert (tmp_path / "charon.vici").exists(), "charon did not open its vici socket"
        yield env
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _swanctl_version():
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._tool_versions import parse_tool_version
    return tuple(parse_tool_version(run(["swanctl", "--help"]).stdout)["numbers"][:3])


@pytest.mark.parametrize("hw_offload", ["packet", "yes"])
def test_swanctl_configuration_is_loaded_by_a_real_charon(charon, netns, tmp_path, hw_offload):
    """Issue 18 (3): a charon older than 5.9.10 discards a connection with hw_offload = packet ('invalid value for:
    hw_offload, config discarded', exit 22) - what tools_info's ipsec_packet_offload predicts; 'yes' loads."""
    path = tmp_path / "swanctl.conf"
    path.write_text(_render_connections(hw_offload), encoding="utf-8")
    result = run(["ip", "netns", "exec", netns, "swanctl", "--load-all", "--file", str(path)], env=charon)
    supported = hw_offload == "yes" or _swanctl_version() >= (5, 9, 10)
    if supported:
        assert result.returncode == 0 and "loaded connection 'bf-d2'" in result.stdout, result.stdout
        listed = run(["ip", "netns", "exec", netns, "swanctl", "--list-conns"], env=charon)
        assert "bf-d2-vtep" in listed.stdout
    else:
        assert result.returncode == 22, result.stdout
        assert "invalid value for: hw_offload, config discarded" in result.stderr


# --- strongSwan: two real charons, one CHILD_SA up between them; the parsers read what swanctl prints -------------
# Two namespaces joined by a veth pair, a charon in each (own vici socket, own /run so the pid files do not clash).
# This kernel has no ESP (``ip xfrm state add ... proto esp`` is refused), so the SAs live in strongSwan's
# userspace kernel-libipsec over /dev/net/tun, as in the lab; before 5.9.11 (no raw_esp) it needs UDP
# encapsulation, hence ``encap = yes``. Debian 12's charon has no openssl plugin: aes/sha2/modp proposals.
PAIR_CONF = """connections {
    pair {
        local_addrs = %(me)s
        remote_addrs = %(peer)s
        encap = yes
        proposals = aes256-sha256-modp2048
        local {
            auth = psk
            id = %(my_id)s
        }
        remote {
            auth = psk
            id = %(peer_id)s
        }
        children {
            tun {
                local_ts = %(my_ts)s
                remote_ts = %(peer_ts)s
                esp_proposals = aes256-sha256
                start_action = none
            }
        }
    }
}
secrets {
    ike-pair {
        id-a = side-a
        id-b = side-b
        secret = "bluefleet-realtools-test-psk-0123456789"
    }
}
"""
SIDES = {"a": {"me": "192.0.2.1", "peer": "192.0.2.2", "my_id": "side-a", "peer_id": "side-b",
               "my_ts": "10.99.1.1/32", "peer_ts": "10.99.2.1/32"},
         "b": {"me": "192.0.2.2", "peer": "192.0.2.1", "my_id": "side-b", "peer_id": "side-a",
               "my_ts": "10.99.2.1/32", "peer_ts": "10.99.1.1/32"}}


def _libipsec_plugin():
    return any(Path(d, "libstrongswan-kernel-libipsec.so").exists()
               for d in ("/usr/lib/ipsec/plugins", "/usr/libexec/ipsec/plugins"))


@pytest.fixture
def charon_pair(tmp_path):
    """Two namespaces (veth a0 192.0.2.1 - b0 192.0.2.2), a charon in each; yields {side: (netns, env)}."""
    need_root()
    need("ip")
    need("swanctl")
    daemon = next((p for p in ("/usr/lib/ipsec/charon", "/usr/libexec/ipsec/charon") if os.path.exists(p)), None)
    if daemon is None:
        need("charon")
    if not _libipsec_plugin():
        not_run("not run: strongSwan's kernel-libipsec plugin not installed (libcharon-extra-plugins)")
    if not os.path.exists("/dev/net/tun"):
        not_run("not run: no /dev/net/tun (kernel-libipsec needs a TUN device: modprobe tun)")
    tag = uuid.uuid4().hex[:6]
    names = {"a": "bfsa-%s" % tag, "b": "bfsb-%s" % tag}
    procs, out = [], {}
    try:
        for ns in names.values():
            assert run(["ip", "netns", "add", ns]).returncode == 0
        assert run(["ip", "-n", names["a"], "link", "add", "a0", "type", "veth", "peer", "name", "b0",
                    "netns", names["b"]]).returncode == 0
        for side, dev in (("a", "a0"), ("b", "b0")):
            ns = names[side]
            # the tunnel's inner address on lo: kernel-libipsec routes the remote TS via ipsec0 with it as source
            for argv in (["addr", "add", SIDES[side]["me"] + "/24", "dev", dev], ["link", "set", dev, "up"],
                         ["link", "set", "lo", "up"], ["addr", "add", SIDES[side]["my_ts"], "dev", "lo"]):
                assert run(["ip", "-n", ns] + argv).returncode == 0
            base = tmp_path / side
            base.mkdir()
            vici = "unix://%s/charon.vici" % base
            conf = base / "strongswan.conf"
            conf.write_text("charon {\n  plugins {\n    include /etc/strongswan.d/charon/*.conf\n"
                            "    vici {\n      socket = %s\n    }\n    stroke {\n      load = no\n    }\n"
                            "    kernel-libipsec {\n      load = yes\n    }\n  }\n  install_routes = no\n"
                            "  port = 500\n  port_nat_t = 4500\n}\nswanctl {\n  socket = %s\n}\n" % (vici, vici),
                            encoding="utf-8")
            env = dict(os.environ, STRONGSWAN_CONF=str(conf), LC_ALL="C")
            log = open(base / "charon.log", "w")  # noqa: SIM115 - closed with the process below
            procs.append((subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c",
                                            "mount -t tmpfs bluefleet-test /run && exec %s" % daemon],
                                           env=env, stdout=log, stderr=subprocess.STDOUT), log))
            for _attempt in range(100):
                if (base / "charon.vici").exists() or procs[-1][0].poll() is not None:
                    break
                time.sleep(0.1)
            assert (base / "charon.vici").exists(), "charon did not open its vici socket: %s" % (
                (base / "charon.log").read_text()[-2000:])
            (base / "swanctl.conf").write_text(PAIR_CONF % SIDES[side], encoding="utf-8")
            load = run(["swanctl", "--load-all", "--file", str(base / "swanctl.conf")], env=env)
            assert load.returncode == 0, load.stdout + load.stderr
            out[side] = (ns, env)
        yield out
    finally:
        for proc, log in procs:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            log.close()
        for ns in names.values():
            run(["ip", "netns", "del", ns])


def test_swanctl_list_sas_between_two_real_charons_parses(charon_pair):
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._swanctl import parse_list_sas

    from dpusim.tools import ip as twin_ip
    _ns_a, env_a = charon_pair["a"]
    _ns_b, env_b = charon_pair["b"]
    up = run(["swanctl", "--initiate", "--child", "tun", "--timeout", "20"], timeout=40, env=env_a)
    assert up.returncode == 0, up.stdout + up.stderr
    for side, env in (("a", env_a), ("b", env_b)):
        listed = run(["swanctl", "--list-sas"], env=env)
        assert listed.returncode == 0, listed.stderr
        sas = parse_list_sas(listed.stdout)["sas"]
        assert len(sas) == 1, listed.stdout
        sa = sas[0]
        assert sa["name"] == "pair" and sa["state"] == "ESTABLISHED", listed.stdout
        assert [c["name"] for c in sa["children"]] == ["tun"], listed.stdout
        child = sa["children"][0]
        assert child["state"] == "INSTALLED" and child["protocol"] == "ESP", listed.stdout
        assert child["mode"] == "TUNNEL-in-UDP" and child["udp_encap"] is True, listed.stdout
        assert child["local_ts"] == [SIDES[side]["my_ts"]] and child["remote_ts"] == [SIDES[side]["peer_ts"]]
        # the twin's ip xfrm reads the --raw form of the same listing (what the lab's real swanctl prints)
        raw = run(["swanctl", "--list-sas", "--raw"], env=env)
        parsed = twin_ip.parse_vici_raw(raw.stdout)
        ikes = next(v for k, v in parsed.items() if k.startswith("list-sa event"))
        raw_child = next(iter(ikes["pair"]["child-sas"].values()))
        assert raw_child["name"] == "tun" and raw_child["state"] == "INSTALLED"
        assert ikes["pair"]["local-host"] == SIDES[side]["me"]
