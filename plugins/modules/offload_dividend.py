#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: offload_dividend
short_description: Measure the host CPU one bounded transfer between two GPU hosts costs
version_added: 0.1.0
description:
  - Reads the host's CPU accounting, runs one bounded C(iperf3) TCP transfer, reads the accounting again and
    returns the host CPU-seconds the transfer cost, per GB and in total, with the transfer's throughput.
  - Without O(server) the module is the receiving end (C(iperf3 -s -1); start it with C(async) first); with
    O(server) it is the sending end. Both ends report their own host's CPU; the report adds them per pair.
  - The host's CPU is the cgroup of the host's PID 1 when that is not the root cgroup (the host is a container;
    cgroup v1 C(cpuacct.usage) or cgroup v2 C(cpu.stat) C(usage_usec)), otherwise C(/proc/stat) over all CPUs
    (user + nice + system + irq + softirq). C(/proc/stat) per CPU is returned in both cases.
  - The path the bytes take is chosen by the address given (O(server), O(bind)); O(path) only labels the result.
    C(playbooks/fabric_benchmark.yml) measures the DPU path, then the host path through
    M(bluefleet.dpu.dividend_tunnel).
  - A host whose O(fs_root) has no C(/proc/stat) (a device twin) returns C(measurable=false) and the reason
    instead of a number; no transfer runs.
  - The receiving end's iperf3 writes its PID file (C(iperf3 -I), C(/run/bluefleet-dividend-iperf3-PORT.pid), or
    in the temporary folder where C(/run) cannot be written). A receiving end that finds the file of a live iperf3
    server on its port stops it first (a run killed half way leaves its receiver listening until its
    C(--idle-timeout), and the next run's receiver could not listen on the port, C(Address already in use)).
  - Skipped in check mode (a measurement loads the hosts and the fabric).
author:
  - bluefleet developers (!UNKNOWN)
options:
  server:
    description: Address of the receiving end. Omit it on the receiving end.
    type: str
  bind:
    description: Local address to bind (C(iperf3 -B)); picks the path on hosts with more than one.
    type: str
  port:
    description: >-
      TCP port of the iperf3 server (C(-p)); both ends use the same. The DPU firewall's default passes 5201.
    type: int
    default: 5201
  size_mb:
    description: MiB to send (C(-n)); bounds the transfer in bytes. The sending end uses it.
    type: int
    default: 256
  route:
    description:
      - Label of the route measured, returned as is under RV(path) (C(dpu) or C(host)). Not a file.
      - The old name C(path) still works until 2.0.0 (it reads as a file name, and options named so are typed path).
    type: str
    choices: [dpu, host]
    default: dpu
    aliases: [path]
  pair:
    description: Label of the pair (C(host1->host2)), returned as is so the report can join both ends.
    type: str
    default: ""
  user_hz:
    description: USER_HZ, the unit of C(/proc/stat) (100 on every Linux architecture bluefleet supports).
    type: int
    default: 100
  fs_root:
    description: The directory that stands for C(/) when the module reads C(/proc) and C(/sys/fs/cgroup).
    type: path
    default: /
  timeout:
    description: >-
      Seconds the transfer may take; the sending end stops there, the receiving end gives up waiting for its
      client after this long (C(--idle-timeout)).
    type: int
    default: 120
  connect_wait:
    description: >-
      Seconds the sending end tries again, once a second, while the receiving end is not listening yet (its
      iperf3 answers C(Connection refused)): the receiving end starts in the background and may be slow to
      listen on a busy host. Counted from the first try.
    type: int
    default: 30
attributes:
  check_mode:
    description: A measurement puts load on the hosts and the fabric, so it does not run in check mode (skipped).
    support: none
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
  platform:
    description: Linux hosts with iperf3.
    platforms: posix
    support: full
notes:
  - Nothing on the host changes; RV(ignore:changed) is false, except on a receiving end that stopped the receiver
    a killed run left (RV(stopped_leftover)).
seealso:
  - module: bluefleet.dpu.dividend_tunnel
"""

EXAMPLES = r"""
- name: Receiving end
  bluefleet.dpu.offload_dividend:
    pair: gpu1->gpu2
    route: dpu
  async: 300
  poll: 0
  register: receiver

- name: Sending end, 256 MiB through the DPU path
  bluefleet.dpu.offload_dividend:
    server: 10.10.0.2
    pair: gpu1->gpu2
    route: dpu
    size_mb: 256
"""

RETURN = r"""
changed:
  description: True only when the receiving end stopped the receiver a killed run left (RV(stopped_leftover)).
  returned: always
  type: bool
stopped_leftover:
  description: >-
    PID of the iperf3 server a killed run left listening on O(port), which this receiving end stopped before it
    started its own; null when there was none.
  returned: always
  type: int
measurable:
  description: False when the host has no CPU accounting to read (a device twin); then RV(reason) says why.
  returned: always
  type: bool
reason:
  description: Why nothing was measured, or null.
  returned: always
  type: str
role:
  description: C(client) (sending end) or C(server) (receiving end).
  returned: always
  type: str
path:
  description: O(path).
  returned: always
  type: str
pair:
  description: O(pair).
  returned: always
  type: str
measured_at:
  description: UTC time the transfer started (ISO 8601).
  returned: always
  type: str
cpu:
  description: >-
    The host's CPU during the transfer - C(source) (C(cgroup-v1), C(cgroup-v2) or C(proc-stat)), C(cgroup) (the
    cgroup read, or null), C(host_cpu_s) (the figure used), C(cgroup_cpu_s), and C(proc_stat) (C(busy), C(user),
    C(system), C(softirq) seconds over all CPUs and C(cpus), busy seconds per CPU). Null when not measurable.
  returned: always
  type: dict
  sample: {"source": "cgroup-v1", "host_cpu_s": 1.92, "cgroup_cpu_s": 1.92, "proc_stat": {"busy": 4.1}}
transfer:
  description: >-
    C(bytes) received, C(seconds), C(throughput_gbps) and C(retransmits) (sending end), from the iperf3 report.
  returned: always
  type: dict
  sample: {"bytes": 268435456, "seconds": 21.4, "throughput_gbps": 0.1003, "retransmits": 0}
cpu_s_per_gb:
  description: This end's host CPU-seconds per 10^9 bytes, or null.
  returned: always
  type: float
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(iperf3 --version), or null (not measurable, so iperf3 is not run).
  returned: always
  type: str
"""

import contextlib
import os
import signal
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._dividend import (
    DividendError,
    cgroup_seconds,
    gbps,
    per_gb,
    stat_seconds,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._cpuacct import (
    parse_cgroup_cpu_stat,
    parse_cpuacct_usage,
    parse_proc_cgroup,
    parse_proc_stat,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._iperf3 import parse_iperf3_json
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError, is_count
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, version_line
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    fs_root_spec,
    run_module,
    run_until_listening,
    timeout_spec,
)

LABEL = "measure the offload dividend"
NOT_MEASURABLE = ("not measurable on a twin: %s does not exist, so this host has no CPU accounting to read "
                  "(a device twin moves no real bytes; run the measurement on real hosts or the container lab)")


def _read(path, parser):
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ToolError("%s failed: cannot read %s: %s" % (LABEL, path, exc.strerror)) from None
    try:
        return parser(text)
    except ParseError as exc:
        raise ToolError("%s failed: %s: %s" % (LABEL, path, exc)) from None


class CpuReader:
    """Which counters stand for the host's CPU, found once; ``sample()`` reads them."""

    def __init__(self, fs_root):
        self.root = fs_root
        self.stat_path = os.path.join(fs_root, "proc/stat")
        groups = _read(os.path.join(fs_root, "proc/1/cgroup"), parse_proc_cgroup)
        self.source, self.cgroup, self.cgroup_file = "proc-stat", None, None
        v1 = groups["v1"].get("cpuacct")
        if v1 and v1 != "/":
            self._pick("cgroup-v1", v1, "sys/fs/cgroup/cpuacct", "cpuacct.usage", parse_cpuacct_usage)
        v2 = groups["v2"]
        if self.cgroup is None and v2 and v2 not in ("/", "/init.scope"):
            self._pick("cgroup-v2", v2, "sys/fs/cgroup", "cpu.stat", parse_cgroup_cpu_stat)

    def _pick(self, source, group, mount, name, parser):
        path = os.path.join(self.root, mount, group.lstrip("/"), name)
        if os.path.isfile(path):
            if source == "cgroup-v2" and "usage_usec" not in _read(path, parser):
                return
            self.source, self.cgroup, self.cgroup_file, self.cgroup_parser = source, group, path, parser

    def sample(self):
        stat = _read(self.stat_path, parse_proc_stat)
        group = _read(self.cgroup_file, self.cgroup_parser) if self.cgroup_file else None
        return stat, group


RUN_DIR = "/run"
PIDFILE = "bluefleet-dividend-iperf3-%d.pid"


def receiver_pidfile(port):
    """Where the receiving end's iperf3 writes its PID (``-I``): /run, or the temporary folder without root."""
    folder = RUN_DIR if os.access(RUN_DIR, os.W_OK) else tempfile.gettempdir()
    return os.path.join(folder, PIDFILE % port)


def _iperf3_server_on(pid, port):
    """Is process ``pid`` an iperf3 server on ``port`` (its command line), not another program that got the PID?"""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = handle.read().decode("utf-8", "replace").split("\0")
    except OSError:
        return False
    ports = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-p"]
    return any(os.path.basename(arg) == "iperf3" for arg in argv) and "-s" in argv and ports[:1] == [str(port)]


def stop_leftover_receiver(port, wait=10.0):
    """Stop the iperf3 server a killed run left listening on ``port``; its PID, or None when there was none."""
    path = receiver_pidfile(port)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    pid = int(text) if is_count(text) else None
    if pid is None or not _iperf3_server_on(pid, port):
        with contextlib.suppress(OSError):
            os.unlink(path)  # stale: its iperf3 was killed before it could remove it
        return None
    # it may end by itself meanwhile (its client gone, it was a one-off server): a PID that is gone is stopped
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while _iperf3_server_on(pid, port):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + wait
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        os.unlink(path)
    return pid


def iperf_argv(params):
    argv = ["iperf3", "--json", "-p", str(params["port"])]
    if params["server"]:
        argv += ["-c", params["server"], "-n", "%dM" % params["size_mb"],
                 "--connect-timeout", str(min(params["timeout"], 30) * 1000)]
    else:
        argv += ["-s", "-1", "--idle-timeout", str(params["timeout"]), "-I", receiver_pidfile(params["port"])]
    if params["bind"]:
        argv += ["-B", params["bind"]]
    return argv


def check_params(params):
    for key, low, high in (("port", 1, 65535), ("size_mb", 1, 1 << 20), ("user_hz", 1, 100000)):
        if not low <= params[key] <= high:
            raise ToolError("%s failed: %s must be %d..%d, got %d" % (LABEL, key, low, high, params[key]))


def measure(runner, params):
    check_params(params)
    role = "client" if params["server"] else "server"
    out = {"changed": False, "measurable": False, "reason": None, "role": role, "path": params["route"],
           "pair": params["pair"], "measured_at": None, "cpu": None, "transfer": None, "cpu_s_per_gb": None,
           "tool_version": None, "stopped_leftover": None}
    stat_path = os.path.join(params["fs_root"], "proc/stat")
    if not os.path.exists(stat_path):
        out["reason"] = NOT_MEASURABLE % stat_path
        return out
    if role == "server":
        out["stopped_leftover"] = stop_leftover_receiver(params["port"])
        out["changed"] = out["stopped_leftover"] is not None
    reader = CpuReader(params["fs_root"])
    out["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    before = reader.sample()
    samples = [before]

    def refused(res):
        return bool(params["server"]) and "Connection refused" in res.stdout

    # the sending end stops at the timeout; the receiving end's own --idle-timeout ends it, plus a margin. The sending
    # end starts the moment its task runs: the receiving end's iperf3 gets connect_wait to listen; the counters are
    # read again before each new try
    result = run_until_listening(runner, iperf_argv(params), refused, max(0, params["connect_wait"]),
                                 timeout=params["timeout"] + (0 if params["server"] else 30),
                                 between=lambda: samples.append(reader.sample()))
    before = samples[-1]
    after = reader.sample()
    what = "%s: iperf3 %s %s" % (LABEL, "to " + params["server"] if params["server"] else "server", params["route"])
    if refused(result):
        what += " (no iperf3 server listened on %s port %d within connect_wait %d s)" % (
            params["server"], params["port"], params["connect_wait"])
    if result.timed_out:
        raise ToolError("%s failed: the transfer did not finish in %d s: raise timeout or lower size_mb"
                        % (what, params["timeout"]), result)
    try:
        report = parse_iperf3_json(result.stdout)
    except ParseError as exc:
        raise ToolError("%s failed: %s%s" % (what, exc, ": " + result.stderr.strip() if result.stderr.strip()
                                             else ""), result) from None
    if report["error"] or result.rc != 0:
        raise ToolError("%s failed: %s" % (what, report["error"] or "rc %d" % result.rc), result)
    try:
        stat = stat_seconds(before[0], after[0], params["user_hz"])
        group_s = cgroup_seconds(before[1], after[1]) if reader.cgroup_file else None
        host_s = group_s if group_s is not None else stat["busy"]
        nbytes = report["bytes_received"]
        out["transfer"] = {"bytes": nbytes, "seconds": round(report["seconds"], 3),
                           "throughput_gbps": round(gbps(nbytes, report["seconds"]), 4),
                           "retransmits": report["retransmits"]}
        out["cpu_s_per_gb"] = round(per_gb(host_s, nbytes), 4)
    except DividendError as exc:
        raise ToolError("%s failed: %s" % (what, exc), result) from None
    out["cpu"] = {"source": reader.source, "cgroup": reader.cgroup, "host_cpu_s": round(host_s, 4),
                  "cgroup_cpu_s": None if group_s is None else round(group_s, 4),
                  "proc_stat": {k: (round(v, 3) if not isinstance(v, dict) else {c: round(s, 3) for c, s in v.items()})
                                for k, v in stat.items()}}
    out["measurable"] = True
    out["tool_version"] = version_line(runner, ["iperf3", "--version"])
    return out


def argument_spec():
    return {
        "server": {"type": "str"},
        "bind": {"type": "str"},
        "port": {"type": "int", "default": 5201},
        "size_mb": {"type": "int", "default": 256},
        "route": {"type": "str", "choices": ["dpu", "host"], "default": "dpu", "aliases": ["path"],
                  "deprecated_aliases": [{"name": "path", "version": "2.0.0", "collection_name": "bluefleet.dpu"}]},
        "pair": {"type": "str", "default": ""},
        "user_hz": {"type": "int", "default": 100},
        "fs_root": fs_root_spec(),
        "timeout": timeout_spec(120),
        "connect_wait": {"type": "int", "default": 30},
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=False)
    run_module(module, LABEL, ToolRunner, lambda runner: measure(runner, module.params))


if __name__ == "__main__":
    main()
