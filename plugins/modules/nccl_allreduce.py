#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_allreduce
short_description: Measure NCCL all-reduce bus bandwidth with nccl-tests all_reduce_perf and check it
version_added: 0.1.0
description:
  - Runs nccl-tests' C(all_reduce_perf) over the message sizes O(min_bytes) to O(max_bytes) on O(gpus) GPUs per
    process, with the NCCL settings in O(nccl_env), optionally behind a launcher (C(mpirun ...)) for a run across
    hosts, and reads its table.
  - With O(min_busbw) the task fails when the bus bandwidth of the largest message (out-of-place) is below it.
  - A failed run (C(NCCL WARN), C(Test NCCL failure), wrong results) fails the task with NCCL's lines.
  - A measurement changes nothing; it runs in check mode too.
author:
  - bluefleet developers (!UNKNOWN)
options:
  gpus:
    description: GPUs per process (C(-g)).
    type: int
    default: 1
  min_bytes:
    description: Smallest message (C(-b)), bytes with an optional K, M or G suffix.
    type: str
    default: "8"
  max_bytes:
    description: Largest message (C(-e)), bytes with an optional K, M or G suffix.
    type: str
    default: 128M
  factor:
    description: Size multiplier between rows (C(-f)).
    type: int
    default: 2
  launcher:
    description: Command put before C(all_reduce_perf) for a multi-host run (C([mpirun, -np, "16", -H, "a:8,b:8"])).
    type: list
    elements: str
    default: []
  nccl_env:
    description: NCCL settings for the run, name -> value (for example the C(nccl_settings) of the NCCL role).
    type: dict
    default: {}
  min_busbw:
    description: Fail when the bus bandwidth (GB/s) of the largest message is below this.
    type: float
  timeout:
    description: Seconds the run may take before it is stopped and the task fails.
    type: int
    default: 600
attributes:
  check_mode:
    description: The measurement is not run in check mode (it would load the fabric); the module returns
      C(changed=false), C(skipped=true) and the message C(skipped in check mode).
    support: full
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
  platform:
    description: Linux GPU hosts with nccl-tests built.
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.ib_write_bw
"""

EXAMPLES = r"""
- name: All-reduce on the 8 GPUs of this host, at least 300 GB/s bus bandwidth
  bluefleet.dpu.nccl_allreduce:
    gpus: 8
    max_bytes: 1G
    nccl_env: "{{ nccl_settings }}"
    min_busbw: 300
"""

RETURN = r"""
changed:
  description: Always false.
  returned: always
  type: bool
busbw:
  description: Bus bandwidth (GB/s) of the largest message, out-of-place.
  returned: when not in check mode
  type: float
avg_busbw:
  description: C(# Avg bus bandwidth) as the tool printed it (GB/s).
  returned: when not in check mode
  type: float
result:
  description: >-
    The table as the nccl-tests parser reads it - C(nccl_version), C(n_gpus), C(nranks), C(out_of_bounds) and
    C(rows) (C(size), C(time_us), C(algbw), C(busbw), C(wrong), C(in_place)).
  returned: when not in check mode
  type: dict
passed:
  description: True when O(min_busbw) is met (or not given).
  returned: when not in check mode
  type: bool
cmd:
  description: Every command run, as argv lists, in order.
  returned: always (empty in check mode)
  type: list
  elements: list
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
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nccl import parse_all_reduce
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    timeout_spec,
)

SIZE_RE = LazyPattern(r"^\d+[KMGkmg]?$")
ENV_RE = LazyPattern(r"^NCCL_[A-Z0-9_]+$")
SLOW_HINT = ("check the NCCL settings (NCCL_IB_HCA = the NICs closest to the GPUs, NCCL_IB_GID_INDEX, NCCL_IB_TC: "
             "playbooks/fabric.yml --tags nccl), nvidia_peermem (--tags gpudirect) and the RoCE QoS (--tags roce)")


def argv_for(params):
    env = ["%s=%s" % (k, params["nccl_env"][k]) for k in sorted(params["nccl_env"])]
    run = ["all_reduce_perf", "-b", params["min_bytes"], "-e", params["max_bytes"], "-f", str(params["factor"]),
           "-g", str(params["gpus"])]
    return (["env"] + env if env else []) + list(params["launcher"]) + run


def check_params(params):
    label = "measure NCCL all-reduce bandwidth failed"
    for key in ("min_bytes", "max_bytes"):
        if not SIZE_RE.match(params[key]):
            raise ToolError("%s: %s must be bytes with an optional K, M or G suffix, got %r"
                            % (label, key, params[key]))
    if params["gpus"] < 1 or params["factor"] < 2:
        raise ToolError("%s: gpus must be >= 1 and factor >= 2, got %d and %d"
                        % (label, params["gpus"], params["factor"]))
    bad = [k for k in params["nccl_env"] if not ENV_RE.match(str(k))]
    if bad:
        raise ToolError("%s: nccl_env names must be NCCL_*, got %s" % (label, ", ".join(map(str, bad))))


def run_allreduce(runner, params):
    check_params(params)
    what = "measure NCCL all-reduce bandwidth with all_reduce_perf"
    result = runner.run(argv_for(params))
    reason = error_reason(result)
    if reason:
        raise ToolError("%s failed: %s" % (what, reason), result)
    table = parse_output(parse_all_reduce, result, what)
    if table["errors"]:
        raise ToolError("%s failed: %s" % (what, "; ".join(table["errors"][:3])), result)
    if not table["rows"]:
        raise ToolError("%s failed: the tool printed no result row" % what, result)
    wrong = [r["size"] for r in table["rows"] if r["wrong"]]
    if wrong or table["out_of_bounds"]:
        raise ToolError("%s failed: wrong results at sizes %s (out of bounds: %s)"
                        % (what, wrong, table["out_of_bounds"]), result)
    busbw = table["rows"][-1]["busbw"]
    if params["min_busbw"] is not None and busbw < params["min_busbw"]:
        raise ToolError("%s failed: bus bandwidth %.2f GB/s at %d bytes is below min_busbw %g; %s"
                        % (what, busbw, table["rows"][-1]["size"], params["min_busbw"], SLOW_HINT), result,
                        busbw=busbw, passed=False)
    keep = ("nccl_version", "n_gpus", "nranks", "out_of_bounds", "rows")
    return {"changed": False, "busbw": busbw, "avg_busbw": table["avg_busbw"], "passed": True,
            "result": {k: table.get(k) for k in keep}}


def argument_spec():
    return {
        "gpus": {"type": "int", "default": 1},
        "min_bytes": {"type": "str", "default": "8"},
        "max_bytes": {"type": "str", "default": "128M"},
        "factor": {"type": "int", "default": 2},
        "launcher": {"type": "list", "elements": "str", "default": []},
        "nccl_env": {"type": "dict", "default": {}},
        "min_busbw": {"type": "float"},
        "timeout": timeout_spec(600),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    if module.check_mode:  # a measurement loads the fabric: never in check mode (issue 17)
        module.exit_json(changed=False, skipped=True, cmd=[],
                         msg="skipped in check mode: all_reduce_perf runs NCCL traffic on the GPUs and the fabric; "
                             "run without --check to measure")
    run_module(module, "measure NCCL all-reduce bandwidth", ToolRunner,
               lambda runner: run_allreduce(runner, module.params))


if __name__ == "__main__":
    main()
