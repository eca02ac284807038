#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ib_write_bw
short_description: Measure RDMA write bandwidth between two hosts with perftest ib_write_bw and check it
version_added: 0.1.0
description:
  - Runs perftest's C(ib_write_bw) over RoCE with RDMA-CM (C(-R)), the given GID index and ToS, and reads its report.
  - Without O(server) the module is the server side (start it with C(async) first); with O(server) it is the client
    that connects to that address and measures. Both sides report the numbers.
  - With O(use_cuda) the buffers are in GPU memory (GPUDirect RDMA); this fails like the real tool when
    C(nvidia_peermem) is not loaded, and the module says so.
  - With O(min_bw_gbps) the task fails when the average bandwidth is below it, naming what usually causes it.
  - Checks first that O(device) is an RDMA device of the host (C(ibdev2netdev)); a device that does not exist fails
    before anything runs.
  - A measurement changes nothing; it runs in check mode too.
author:
  - bluefleet developers (!UNKNOWN)
options:
  device:
    description: The RDMA device (C(mlx5_0)).
    type: str
    required: true
  ib_port:
    description: Port of the device.
    type: int
    default: 1
  gid_index:
    description: GID index (C(-x)); the RoCE v2 GID the fabric uses (C(bluefleet_roce.gid_index)).
    type: int
    required: true
  tos:
    description: IP ToS of the traffic (C(-T)), DSCP << 2 (C(bluefleet_roce.tos)).
    type: int
    required: true
  server:
    description: Address of the server to connect to. Omit it on the server side.
    type: str
  tcp_port:
    description: TCP port for the connection setup (C(-p)); both sides use the same.
    type: int
    default: 18515
  size:
    description: Message size in bytes (C(-s)).
    type: int
    default: 65536
  qps:
    description: Number of queue pairs (C(-q)).
    type: int
    default: 4
  duration:
    description: Seconds to measure (C(-D)).
    type: int
    default: 10
  use_cuda:
    description: Index of the GPU whose memory holds the buffers (C(--use_cuda=N)); omit for host memory.
    type: int
  connect_wait:
    description:
      - On the client, seconds to keep trying while no server listens yet (the tool's C(Couldn't connect to)).
      - ib_write_bw's client tries the server once; a server started in the background (C(async), C(poll=0)) needs
        a moment before it listens, so the client is run again once a second until this many seconds have passed.
      - C(0) tries once.
    type: int
    default: 30
  min_bw_gbps:
    description: Fail when the average bandwidth (Gb/s) is below this.
    type: float
  timeout:
    description: Seconds the tool may run before it is stopped and the task fails.
    type: int
    default: 300
attributes:
  check_mode:
    description: The measurement is not run in check mode (it would load the fabric); the module returns
      C(changed=false), C(skipped=true) and the message C(skipped in check mode).
    support: full
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
  platform:
    description: Linux hosts with perftest and an RDMA device.
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.nccl_allreduce
"""

EXAMPLES = r"""
- name: Server side
  bluefleet.dpu.ib_write_bw:
    device: mlx5_0
    gid_index: 3
    tos: 104
  async: 300
  poll: 0
  register: server

- name: Client side, GPU memory, at least 180 Gb/s
  bluefleet.dpu.ib_write_bw:
    device: mlx5_0
    gid_index: 3
    tos: 104
    server: 192.168.10.1
    use_cuda: 0
    min_bw_gbps: 180
"""

RETURN = r"""
changed:
  description: Always false.
  returned: always
  type: bool
role:
  description: C(server) or C(client).
  returned: when not in check mode
  type: str
result:
  description: >-
    The report as the perftest parser reads it - C(bw_avg_gbps), C(bw_peak_gbps) (null when not measured),
    C(msg_rate_mpps), C(msg_size), C(iterations), C(mtu), C(gid_index), C(tos), C(num_qps), C(gpu_direct),
    C(gpu_name), C(device), C(link_type).
  returned: when not in check mode
  type: dict
  sample: {"bw_avg_gbps": 181.46, "bw_peak_gbps": null, "mtu": 1024, "gid_index": 3, "tos": 41, "gpu_direct": true}
passed:
  description: True when O(min_bw_gbps) is met (or not given).
  returned: when not in check mode
  type: bool
cmd:
  description: Every command run, as argv lists, in order.
  returned: always (empty in check mode)
  type: list
  elements: list
tool_version:
  description: First line of C(ib_write_bw --version), or null.
  returned: when not in check mode
  type: str
skipped:
  description: True in check mode, where nothing is measured.
  returned: in check mode
  type: bool
msg:
  description: C(skipped in check mode) and why.
  returned: in check mode
  type: str
"""


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._perftest import parse_ib_write_bw
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import parse_ibdev2netdev
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
    run_until_listening,
    timeout_spec,
)

KEYS = ("bw_avg_gbps", "bw_peak_gbps", "msg_rate_mpps", "msg_size", "iterations", "mtu", "gid_index", "tos",
        "num_qps", "gpu_direct", "gpu_name", "device", "link_type", "complete")
MR_HINT = ("; the GPU buffer could not be registered for RDMA (Couldn't allocate MR): load nvidia_peermem and check "
           "/sys/kernel/mm/memory_peers/nv_mem/version (bluefleet.dpu.peermem, playbooks/fabric.yml --tags gpudirect)")
NO_SERVER = "Couldn't connect to"
SLOW_HINT = ("check that the RoCE priority is lossless (trust dscp, PFC on the priority of the DSCP: "
             "playbooks/fabric.yml --tags roce), the MTU on both ends, the GPU-NIC affinity with use_cuda, and the "
             "link speed")


def argv_for(params):
    argv = ["ib_write_bw", "-d", params["device"], "-i", str(params["ib_port"]), "-x", str(params["gid_index"]),
            "-R", "-T", str(params["tos"]), "-s", str(params["size"]), "-q", str(params["qps"]),
            "-D", str(params["duration"]), "-F", "--report_gbits", "-p", str(params["tcp_port"])]
    if params["use_cuda"] is not None:
        argv.append("--use_cuda=%d" % params["use_cuda"])
    if params["server"]:
        argv.append(params["server"])
    return argv


def check_params(params):
    for key, low, high in (("tos", 0, 255), ("gid_index", 0, 255), ("ib_port", 1, 255), ("tcp_port", 1, 65535),
                           ("size", 1, 1 << 30), ("qps", 1, 16384), ("duration", 1, 86400),
                           ("connect_wait", 0, 3600)):
        if not low <= params[key] <= high:
            raise ToolError("measure RDMA write bandwidth failed: %s must be %d..%d, got %d"
                            % (key, low, high, params[key]))
    if params["min_bw_gbps"] is not None and not params["server"]:
        raise ToolError("measure RDMA write bandwidth failed: min_bw_gbps is checked on the client: give server too")


def run_bw(runner, params):
    check_params(params)
    what = "list the RDMA devices with ibdev2netdev"
    links = parse_output(parse_ibdev2netdev, run_tool(runner, ["ibdev2netdev"], what), what)["links"]
    devices = sorted({link["ibdev"] for link in links})
    if params["device"] not in devices:
        raise ToolError("measure RDMA write bandwidth failed: %s is not an RDMA device of this host (found: %s)"
                        % (params["device"], ", ".join(devices) or "none"))
    role = "client" if params["server"] else "server"
    what = "measure RDMA write bandwidth on %s (%s) with ib_write_bw" % (params["device"], role)
    # the server's background job may not have reached its listen() yet
    result = run_until_listening(runner, argv_for(params), lambda r: bool(params["server"]) and NO_SERVER in r.stderr,
                                 params["connect_wait"])
    reason = error_reason(result)
    if reason:
        text = result.stdout + result.stderr
        hint = MR_HINT if "allocate MR" in text and params["use_cuda"] is not None else ""
        if params["server"] and NO_SERVER in result.stderr:
            hint = ("; no ib_write_bw server listened on %s TCP port %d within connect_wait %d s: start the server "
                    "side first (same tcp_port; the firewall lets the port through) and give it time"
                    % (params["server"], params["tcp_port"], params["connect_wait"]))
        raise ToolError("%s failed: %s%s" % (what, reason, hint), result)
    report = parse_output(parse_ib_write_bw, result, what)
    if not report["complete"]:
        raise ToolError("%s failed: the tool printed no bandwidth report" % what, result)
    out = {k: report.get(k) for k in KEYS}
    passed = True
    minimum = params["min_bw_gbps"]
    if minimum is not None and out["bw_avg_gbps"] < minimum:
        raise ToolError("%s failed: average %.2f Gb/s to %s is below min_bw_gbps %g; %s"
                        % (what, out["bw_avg_gbps"], params["server"], minimum, SLOW_HINT), result,
                        result_report=out, passed=False)
    return {"changed": False, "role": role, "result": out, "passed": passed}


def argument_spec():
    return {
        "device": {"type": "str", "required": True},
        "ib_port": {"type": "int", "default": 1},
        "gid_index": {"type": "int", "required": True},
        "tos": {"type": "int", "required": True},
        "server": {"type": "str"},
        "tcp_port": {"type": "int", "default": 18515},
        "size": {"type": "int", "default": 65536},
        "qps": {"type": "int", "default": 4},
        "duration": {"type": "int", "default": 10},
        "use_cuda": {"type": "int"},
        "connect_wait": {"type": "int", "default": 30},
        "min_bw_gbps": {"type": "float"},
        "timeout": timeout_spec(300),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    if module.check_mode:  # a measurement loads the fabric: never in check mode (issue 17)
        module.exit_json(changed=False, skipped=True, cmd=[],
                         msg="skipped in check mode: ib_write_bw sends RDMA traffic; run without --check to measure")
    run_module(module, "measure RDMA write bandwidth", ToolRunner, lambda runner: run_bw(runner, module.params),
               lambda result: ["ib_write_bw", "--version"])


if __name__ == "__main__":
    main()
