"""bluefleet.dpu.ovs_bridge: read, plan one ovs-vsctl transaction, re-read; check and diff mode; bad input first.

The fake switch prints ``ovs-vsctl show`` in the layout of the corpus sample (ovs/bf-dpu-brp0-p0-pf0hpf.txt) and
of OVS 3.5.0 in the lab (``datapath_type: netdev`` under the bridge, ``ovs_version`` last), and the other_config
map as in ovs/cx6-proxmox-get-other_config.txt.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import ovs_bridge

UUID = "e984689a-52fd-48d9-8333-58ac7476ce65"


class FakeSwitch:
    def __init__(self, netdevs=("pf0hpf", "vxlan0", "p0"), bridges=None, other=None):
        self.netdevs = set(netdevs)
        self.bridges = bridges or {}  # name -> {"datapath_type": str|None, "ports": [..]}
        self.other = dict(other or {})
        self.cmd = []
        self.writes = 0

    def show(self):
        lines = [UUID]
        for name, br in self.bridges.items():
            lines.append(f"    Bridge {name}")
            if br["datapath_type"]:
                lines.append(f"        datapath_type: {br['datapath_type']}")
            for port in [*br["ports"], name]:
                lines += [f"        Port {port}", f"            Interface {port}"]
                if port == name:
                    lines.append("                type: internal")
                elif port not in self.netdevs:
                    lines.append(f'                error: "could not open network device {port} (No such device)"')
        lines.append('    ovs_version: "3.5.0"')
        return "\n".join(lines) + "\n"

    def other_text(self):
        items = ", ".join(f'{k}="{v}"' if v in ("true", "false") else f"{k}={v}" for k, v in sorted(self.other.items()))
        return "{%s}\n" % items

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        if argv == ["ovs-vsctl", "show"]:
            return CommandResult(argv, 0, self.show(), "")
        if argv == ["ovs-vsctl", "get", "Open_vSwitch", ".", "other_config"]:
            return CommandResult(argv, 0, self.other_text(), "")
        if argv == ["ovs-vsctl", "--version"]:
            return CommandResult(argv, 0, "ovs-vsctl (Open vSwitch) 3.5.0\n", "")
        if argv[:3] == ["ip", "link", "show"]:
            ok = argv[4] in self.netdevs
            return CommandResult(argv, 0 if ok else 1, "", "" if ok else f'Device "{argv[4]}" does not exist.\n')
        if argv[0] == "ovs-vsctl":
            self.writes += 1
            self._apply(argv[1:])
            return CommandResult(argv, 0, "", "")
        raise AssertionError(f"unexpected command {argv}")

    def _apply(self, args):
        ops, cur = [], []
        for word in args:
            if word == "--":
                ops.append(cur)
                cur = []
            else:
                cur.append(word)
        ops.append(cur)
        for op in filter(None, ops):
            if op[0] == "add-br":
                self.bridges.setdefault(op[1], {"datapath_type": None, "ports": []})
            elif op[0] == "del-br":
                self.bridges.pop(op[1], None)
            elif op[0] == "add-port":
                self.bridges[op[1]]["ports"].append(op[2])
            elif op[0] == "del-port":
                self.bridges[op[1]]["ports"].remove(op[2])
            elif op[:2] == ["set", "bridge"]:
                self.bridges[op[2]]["datapath_type"] = op[3].split("=", 1)[1]
            elif op[:2] == ["set", "Open_vSwitch"]:
                key, value = op[3].split(":", 1)[1].split("=", 1)
                self.other[key] = value
            else:
                raise AssertionError(f"unexpected ovs-vsctl op {op}")


ARGS = {"bridge": "br-sfc", "datapath_type": "netdev", "ports": ["pf0hpf", "vxlan0"],
        "other_config": {"hw-offload": "true"}}


def test_creates_bridge_in_one_transaction_then_changes_nothing(run_module):
    sw = FakeSwitch(other={"tc-policy": "skip_sw"})
    failed, res = run_module(ovs_bridge, ARGS, sw)
    assert not failed and res["changed"] and res["restart_required"]
    writes = [c for c in sw.cmd if c[0] == "ovs-vsctl" and c[1] not in ("show", "get", "--version")]
    assert writes == [["ovs-vsctl", "add-br", "br-sfc", "--", "set", "bridge", "br-sfc", "datapath_type=netdev",
                       "--", "add-port", "br-sfc", "pf0hpf", "--", "add-port", "br-sfc", "vxlan0",
                       "--", "set", "Open_vSwitch", ".", "other_config:hw-offload=true"]]
    assert res["bridge"] == {"exists": True, "datapath_type": "netdev", "ports": ["pf0hpf", "vxlan0"],
                             "interface_errors": {}}
    assert res["other_config"] == {"hw-offload": "true", "tc-policy": "skip_sw"}
    assert res["tool_version"] == "ovs-vsctl (Open vSwitch) 3.5.0"
    failed, again = run_module(ovs_bridge, ARGS, sw)
    assert not failed and not again["changed"] and not again["restart_required"] and sw.writes == 1


def test_check_mode_reports_and_writes_nothing_with_diff(run_module):
    sw = FakeSwitch(bridges={"br-sfc": {"datapath_type": "netdev", "ports": ["pf0hpf"]}})
    failed, res = run_module(ovs_bridge, ARGS, sw, check_mode=True)
    assert not failed and res["changed"] and res["restart_required"] and sw.writes == 0
    assert res["diff"]["before"]["bridge"]["ports"] == ["pf0hpf"]
    assert res["diff"]["after"]["bridge"]["ports"] == ["pf0hpf", "vxlan0"]
    assert res["diff"]["before"]["other_config"] == {"hw-offload": None}
    assert res["diff"]["after"]["other_config"] == {"hw-offload": "true"}


def test_only_ports_changed_needs_no_restart(run_module):
    sw = FakeSwitch(bridges={"br-sfc": {"datapath_type": "netdev", "ports": ["pf0hpf"]}}, other={"hw-offload": "true"})
    failed, res = run_module(ovs_bridge, ARGS, sw)
    assert not failed and res["changed"] and not res["restart_required"]
    assert sw.bridges["br-sfc"]["ports"] == ["pf0hpf", "vxlan0"]


def test_purge_and_absent(run_module):
    sw = FakeSwitch(bridges={"br-sfc": {"datapath_type": "netdev", "ports": ["pf0hpf", "p0", "vxlan0"]}},
                    other={"hw-offload": "true"})
    failed, res = run_module(ovs_bridge, dict(ARGS, purge_ports=True), sw)
    assert not failed and res["changed"] and sw.bridges["br-sfc"]["ports"] == ["pf0hpf", "vxlan0"]
    failed, res = run_module(ovs_bridge, {"bridge": "br-sfc", "state": "absent"}, sw)
    assert not failed and res["changed"] and "br-sfc" not in sw.bridges
    failed, res = run_module(ovs_bridge, {"bridge": "br-sfc", "state": "absent"}, sw)
    assert not failed and not res["changed"]


def test_absent_with_datapath_type_set_succeeds(run_module):
    """Issue 18 (6): before the fix the read-back after a successful del-br compared datapath_type and failed."""
    sw = FakeSwitch(bridges={"br-sfc": {"datapath_type": "netdev", "ports": ["pf0hpf"]}})
    args = {"bridge": "br-sfc", "state": "absent", "datapath_type": "netdev"}
    failed, res = run_module(ovs_bridge, args, sw)
    assert not failed, res
    assert res["changed"] and "br-sfc" not in sw.bridges
    failed, res = run_module(ovs_bridge, args, sw)
    assert not failed and not res["changed"]


def test_unknown_interface_fails_before_any_change(run_module):
    sw = FakeSwitch(netdevs=("pf0hpf",))
    failed, res = run_module(ovs_bridge, ARGS, sw)
    assert failed and "vxlan0 are not network interfaces" in res["msg"] and sw.writes == 0
    assert not any(c == ["ovs-vsctl", "show"] for c in sw.cmd)


def test_non_string_other_config_is_refused(run_module):
    sw = FakeSwitch()
    failed, res = run_module(ovs_bridge, dict(ARGS, other_config={"hw-offload": True}), sw)
    assert failed and "must be a string" in res["msg"] and sw.writes == 0


def test_ovs_not_running_is_a_clear_error(run_module):
    class Down(FakeSwitch):
        def run(self, argv, timeout=None):
            if argv == ["ovs-vsctl", "show"]:
                self.cmd.append(list(argv))
                return CommandResult(argv, 1, "", "ovs-vsctl: unix:/var/run/openvswitch/db.sock: database connection "
                                                  "failed (No such file or directory)\n")
            return super().run(argv, timeout)

    failed, res = run_module(ovs_bridge, ARGS, Down())
    assert failed and "ovs-vswitchd running" in res["msg"]


def test_interface_error_after_apply_fails(run_module):
    class Broken(FakeSwitch):
        def _apply(self, args):
            super()._apply(args)
            self.netdevs.discard("vxlan0")  # the device vanished between the check and the transaction

    sw = Broken()
    failed, res = run_module(ovs_bridge, ARGS, sw)
    assert failed and "could not open network device vxlan0" in res["msg"]
