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
* Parsers read what the real programs print here: ``nft list``, ``ip``, ``ethtool`` in the test's namespace.
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
                   "devlink", "ip", "ethtool", "ovs-vsctl", "nft", "swanctl", "shellcheck", "bash"}


def need(program):
    path = shutil.which(program)
    if path is None:
        if program not in DEBIAN_PROGRAMS:
            pytest.skip("not run: %s is not packaged by Debian (MFT, DOCA, MLNX_OFED or the NVIDIA driver ship it)"
                        % program)
        message = "not run: %s not installed (scripts/ensure-real-tools.sh)" % program
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


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
    for _ in range(2):  # loaded twice: the file replaces its table whole
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
        for _ in range(100):
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
