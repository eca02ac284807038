# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory of simulated GPU hosts and their DPUs on the local connection."""

from __future__ import annotations

DOCUMENTATION = r"""
name: sim
short_description: Simulated GPU hosts and BlueField DPUs on the local connection
version_added: 0.1.0
description:
  - Builds an inventory of O(nodes) GPU hosts, each paired with one DPU, all reached over
    C(ansible_connection=local).
  - Every inventory host gets its own device-twin root (C(dpusim)) under O(state_dir); a GPU host
    and its DPU share one card directory, as a real host and its BlueField share one card.
  - Reading the inventory writes nothing. The twin roots are created by C(bluefleet sim init -i PATH)
    (C(bluefleet run) does it for a sim inventory); parsing an inventory whose roots are missing fails
    with that command in the message. Existing roots are reused, so state persists between runs.
  - Tasks reach the twin through the C(bluefleet_environment) host variable (PATH and
    DPUSIM_ROOT), which the plays of this collection pass to C(environment).
  - Each host also gets the settings that differ between a twin and a real machine
    (C(preflight_fs_root), C(firmware_power_cycle_method), C(firmware_power_cycle_command),
    C(firmware_reboot_command), C(firmware_reconnect_delay=0) and C(firmware_reconnect_sleep=1)); a real
    inventory sets them for its BMCs instead.
  - C(bluefleet_fs_root) (the twin root) is where roles write the files a machine keeps under
    C(/), and C(bluefleet_linux_services=false) tells roles not to manage this machine's own
    Linux services (Open vSwitch, strongSwan, nftables, systemd units); all simulated nodes share
    one kernel, so only the card's side of each stage runs here. The lab runs both.
options:
  plugin:
    description: Marks this file as a configuration of this plugin.
    type: str
    required: true
    choices: [bluefleet.dpu.sim]
  nodes:
    description: Number of GPU hosts (each with one DPU).
    type: int
    default: 4
    env:
      - name: BLUEFLEET_SIM_NODES
  profile:
    description:
      - Device profile of every card. The sim pairs every GPU host with a BlueField DPU (an Arm side of its own), so
        only BlueField profiles build a fleet; a ConnectX-7 SuperNIC has no Arm side (the twin's C(connectx7)
        profile serves C(dpusim init --profile connectx7 --role host) for a single host).
    type: str
    default: bluefield3
    choices: [bluefield2, bluefield3]
  prefix:
    description: Host name prefix; hosts are named C(<prefix>NN) and C(<prefix>NN-dpu).
    type: str
    default: sim
  state_dir:
    description:
      - Folder that holds one twin root per inventory host. Relative paths are relative to
        the inventory file.
    type: str
    default: .state
    env:
      - name: BLUEFLEET_SIM_STATE
  dpusim:
    description: The C(dpusim) command; by default the one next to the running Python, else PATH.
    type: path
  bmc_port:
    description:
      - When set, every DPU names a twin BlueField-3 BMC in C(bluefleet_bmc) (the out-of-band path,
        C(bluefleet.dpu.bmc_*) and C(playbooks/upgrade.yml -e firmware_path=bmc)); the DPU numbered N has its
        BMC at C(http://127.0.0.1:<bmc_port + N - 1>), user C(root). The password is not in the inventory;
        the modules read C(BLUEFLEET_BMC_PASSWORD).
      - Nothing persistent is started by an inventory read nor by C(bluefleet sim init); the BMCs answer while
        C(bluefleet sim bmc -i PATH) runs (in the foreground, one C(dpusim bmc serve) per DPU over that DPU's
        twin root, with the password from C(BLUEFLEET_BMC_PASSWORD)), until it is interrupted.
      - BlueField-3 only (the twin models that BMC).
    type: int
    env:
      - name: BLUEFLEET_SIM_BMC_PORT
"""

EXAMPLES = r"""
# inventories/sim/fleet.sim.yml
plugin: bluefleet.dpu.sim
nodes: 4
profile: bluefield3

# Then, for 100 nodes:
#   BLUEFLEET_SIM_NODES=100 bluefleet sim init -i inventories/sim
#   BLUEFLEET_SIM_NODES=100 ansible-playbook -i inventories/sim site.yml

# With a twin BMC per DPU on loopback ports 18443, 18444, ...:
#   plugin: bluefleet.dpu.sim
#   nodes: 4
#   bmc_port: 18443
# export BLUEFLEET_BMC_PASSWORD=...; bluefleet sim bmc -i inventories/sim &   (serves until interrupted)
"""

import os
import shutil
import subprocess
import sys

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin


class InventoryModule(BaseInventoryPlugin):
    NAME = "bluefleet.dpu.sim"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("sim.yml", "sim.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        dpusim = self._dpusim()
        hosts = self.layout(path)
        tool_names = self._run([dpusim, "tools"]).split()
        missing = [h["root"] for h in hosts if not self.ready(h["root"], tool_names)]
        if missing:
            raise AnsibleParserError(
                "bluefleet.dpu.sim: %d of %d twin roots are missing or incomplete under %s (first: %s); an "
                "inventory read creates nothing: run `bluefleet sim init -i %s` first (bluefleet run does it)" % (
                    len(missing), len(hosts), os.path.dirname(missing[0]), missing[0], path))
        for group in ("gpu_hosts", "dpus"):
            self.inventory.add_group(group)
        for h in hosts:
            self._add(h, dpusim)

    def layout(self, path):
        """Every host of this inventory: ``{name, group, role, root, card_dir, profile, pair}`` (pure, no I/O)."""
        nodes = self.get_option("nodes")
        if not isinstance(nodes, int) or nodes < 1:
            raise AnsibleParserError("%s: nodes must be a positive integer, got %r" % (path, nodes))
        profile = self.get_option("profile")
        prefix = self.get_option("prefix")
        state_dir = self.get_option("state_dir")
        if not os.path.isabs(state_dir):
            state_dir = os.path.join(os.path.dirname(os.path.abspath(path)), state_dir)
        bmc_port = self.get_option("bmc_port")
        if bmc_port is not None and (profile != "bluefield3" or not 1024 <= bmc_port <= 65535 - nodes):
            raise AnsibleParserError(
                "%s: bmc_port %r: give a port from 1024 to %d (one port per DPU from it) with profile bluefield3 "
                "(the twin models the BlueField-3 BMC), or leave bmc_port out" % (path, bmc_port, 65535 - nodes))
        width = max(2, len(str(nodes)))
        out = []
        for index in range(1, nodes + 1):
            host = "%s%0*d" % (prefix, width, index)
            dpu = host + "-dpu"
            card_dir = os.path.join(state_dir, host + ".card")
            out.append({"name": host, "group": "gpu_hosts", "role": "host", "root": os.path.join(state_dir, host),
                        "card_dir": card_dir, "profile": profile, "pair": dpu})
            out.append({"name": dpu, "group": "dpus", "role": "dpu", "root": os.path.join(state_dir, dpu),
                        "card_dir": card_dir, "profile": profile, "pair": host})
            if bmc_port is not None:
                out[-1]["bmc_listen"] = "127.0.0.1:%d" % (bmc_port + index - 1)
        return out

    @staticmethod
    def ready(root, tool_names):
        bindir = os.path.join(root, "bin")
        return os.path.exists(os.path.join(root, "node.json")) and all(
            os.path.exists(os.path.join(bindir, tool)) for tool in tool_names)

    def _dpusim(self):
        configured = self.get_option("dpusim")
        if configured:
            return configured
        beside = os.path.join(os.path.dirname(sys.executable), "dpusim")
        if os.access(beside, os.X_OK):
            return beside
        found = shutil.which("dpusim")
        if not found:
            raise AnsibleParserError(
                "bluefleet.dpu.sim: the dpusim command was not found next to %s nor on PATH; "
                "run `make venv` and use .venv/bin/ansible-playbook, or set the dpusim option" % sys.executable)
        return found

    def _add(self, h, dpusim):
        name, root = h["name"], h["root"]
        self.inventory.add_host(name, group=h["group"])
        if h["role"] == "host":
            self.inventory.set_variable(name, "bluefleet_dpus", [h["pair"]])
        else:
            self.inventory.set_variable(name, "bluefleet_host", h["pair"])
            self.inventory.set_variable(name, "bluefleet_rshim", "rshim0")
            if h.get("bmc_listen"):  # served by `bluefleet sim bmc`; the password comes from BLUEFLEET_BMC_PASSWORD
                self.inventory.set_variable(name, "bluefleet_bmc", {"address": "http://" + h["bmc_listen"],
                                                                    "username": "root"})
        self.inventory.set_variable(name, "ansible_connection", "local")
        self.inventory.set_variable(name, "ansible_python_interpreter", sys.executable)
        self.inventory.set_variable(name, "bluefleet_twin_root", root)
        self.inventory.set_variable(name, "bluefleet_environment", {
            "DPUSIM_ROOT": root,
            "PATH": os.pathsep.join([os.path.join(root, "bin"), os.path.dirname(dpusim),
                                     os.environ.get("PATH", os.defpath)]),
        })
        # What a real machine has at / (/dev/rshimN, /sys/...) the twin keeps under its root; a
        # power cycle or reboot of a simulated machine is the twin's own command.
        self.inventory.set_variable(name, "preflight_fs_root", root)
        # Files a role writes on a machine (/etc/..., /etc/systemd/system/...) go under the twin
        # root too, and the Linux services of this machine (Open vSwitch, strongSwan, nftables,
        # systemd) are not touched: every simulated node shares this one kernel. Roles manage
        # only the card's side here; the lab (containers) runs the services for real.
        self.inventory.set_variable(name, "bluefleet_fs_root", root)
        self.inventory.set_variable(name, "bluefleet_linux_services", False)
        self.inventory.set_variable(name, "firmware_power_cycle_method", "command")
        self.inventory.set_variable(name, "firmware_power_cycle_command", [dpusim, "--root", root, "power-cycle"])
        self.inventory.set_variable(name, "firmware_reboot_command", [dpusim, "--root", root, "reboot"])
        # The twin's bfb-install takes seconds (DPUSIM_TIME_SCALE): poll it every second.
        self.inventory.set_variable(name, "firmware_bfb_poll_interval", 1)
        # A twin node answers again as soon as its restart (a BlueField's Arm under mlxfwreset -l 3 run on its Arm
        # side) is done: the reset's modelled time passes inside the tool. Try it again at once, then every second.
        self.inventory.set_variable(name, "firmware_reconnect_delay", 0)
        self.inventory.set_variable(name, "firmware_reconnect_sleep", 1)

    @staticmethod
    def _run(argv):
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AnsibleParserError("bluefleet.dpu.sim: %s failed: %s" % (" ".join(argv), exc)) from exc
        if proc.returncode != 0:
            raise AnsibleParserError("bluefleet.dpu.sim: %s failed (rc=%d): %s" % (
                " ".join(argv), proc.returncode, (proc.stderr or proc.stdout).strip()))
        return proc.stdout
