# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bfb_install
short_description: Install a BFB bundle on the paired BlueField DPU from its GPU host over rshim
version_added: 0.1.0
description:
  - Runs on the GPU host that holds the BlueField (delegate the DPU's task to C(bluefleet_host)) and makes the
    DPU run the release O(version) by pushing O(bfb) with C(bfb-install --rshim rshimN --bfb FILE [--config
    bf.cfg]).
  - Reads the DPU first - C(bfver) through O(dpu_command) - and does nothing when it already reports O(version)
    (its C(OS Release Version), the line C(/etc/mlnx-release) holds).
  - Preflight, before anything is touched - the file is readable; its sha256 equals O(sha256) when given; the
    rshim device O(rshim) is present (its C(misc) file reads), not in drop mode (held by the BMC or another
    backend); the card's generation (C(DEV_INFO)) equals O(generation) when given; the card's mode
    (C(BF_MODE) - DPU or NIC mode, which decides the console marker that ends the install).
  - Installs once, bounded by O(timeout), and reads the console bfb-install prints for the finish markers
    (C(Installation finished), C(DPU is ready), C(Linux up), C(Rebooting...), C(In Enhanced NIC mode),
    C(Runtime upgrade finished)) and for the errors (C(Invalid FW Package), C(INTEGRITY_FAIL),
    C(CRITICAL ERROR), C(BlueField Update Failed), C(Error - ...)). Then waits up to O(ready_timeout) until the DPU
    answers O(dpu_command) again, and fails unless it reports O(version).
  - The bf.cfg is built from O(bf_cfg), O(bf_cfg_secrets), O(ubuntu_password_hash), O(nic_firmware_update) and
    O(hostname), written mode 0600 to a private temporary directory, passed with C(--config) and deleted
    afterwards. Secret values never appear in the results.
  - RV(reset_required) - C(power_cycle) when the NIC firmware the bundle carried waits for activation (the
    installer's C(mlxfwreset -l 3) was not supported), else C(none) (the DPU rebooted itself). Known only when
    O(device) is set; in check mode the worst case is reported.
author:
  - bluefleet developers (!UNKNOWN)
options:
  bfb:
    description: Path of the BFB bundle on the GPU host.
    type: path
    required: true
  version:
    description:
      - The release the DPU reports once the bundle runs - the C(OS Release Version) of C(bfver), the line of
        C(/etc/mlnx-release) (C(bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod)). Compared as text.
    type: str
    required: true
  sha256:
    description: Expected sha256 of O(bfb) (64 hex digits, as C(sha256sum) prints it), checked before the push.
    type: str
  generation:
    description: The BlueField generation the bundle is built for. When set, a card whose C(DEV_INFO) names another
      generation is refused before the push. Leave unset for a bundle made for several generations.
    type: int
    choices: [2, 3]
  rshim:
    description:
      - The rshim device directory of the DPU on this host. bfb-install gets its last part (C(rshim0)).
      - Its C(misc) file is read in the preflight.
    type: path
    default: /dev/rshim0
  dpu_command:
    description:
      - argv prefix that runs a command on the DPU's Arm OS from this host, e.g.
        C([ssh, -o, BatchMode=yes, ubuntu@192.168.100.2]) over C(tmfifo_net0). The module appends C(bfver).
      - A non-zero exit status means the DPU does not answer.
    type: list
    elements: str
    required: true
  device:
    description: The card as the host's tools take it in C(-d) (C(/dev/mst/mt41692_pciconf0)). When set, the NIC
      firmware (C(flint -d DEV q)) is reported before and after, and RV(reset_required) says whether it waits.
    type: str
  bf_cfg:
    description:
      - bf.cfg settings, C(KEY -> value) (C(UPDATE_DPU_OS), C(UPDATE_ATF_UEFI), C(NET_RSHIM_MAC), ...). Booleans are
        written C(yes) / C(no). Keys that look like credentials are refused here - use O(bf_cfg_secrets).
    type: dict
    default: {}
  bf_cfg_secrets:
    description: bf.cfg settings that are credentials (C(BMC_PASSWORD), ...). Never returned nor logged.
    type: dict
    default: {}
  ubuntu_password_hash:
    description: crypt(3) hash of the password of the Arm OS user C(ubuntu) (C(openssl passwd -1)), written as
      C(ubuntu_PASSWORD). Keep it in a vaulted variable. A clear-text password is refused.
    type: str
  nic_firmware_update:
    description: Let the installer update the NIC firmware from the bundle (C(WITH_NIC_FW_UPDATE)). Unset - the
      bundle's default.
    type: bool
  hostname:
    description: Host name of the DPU's Arm OS, written to C(/etc/hostname) of the new system by a C(bfb_modify_os)
      function in bf.cfg.
    type: str
  timeout:
    description: Seconds C(bfb-install) may run (push and install take 10 to 15 minutes on hardware). Run the task
      with C(async) longer than O(timeout) + O(ready_timeout).
    type: int
    default: 1800
  ready_timeout:
    description: Seconds to wait, after the install, until the DPU answers O(dpu_command).
    type: int
    default: 900
  poll_interval:
    description: Seconds between two tries of O(dpu_command) while waiting.
    type: int
    default: 10
attributes:
  check_mode:
    description: Runs the preflight and reads the DPU; reports whether it would install; pushes nothing.
    support: full
  diff_mode:
    description: DPU release and NIC firmware before and after.
    support: full
  platform:
    description: Linux GPU hosts with the rshim service and bfb-install.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - The DPU's runtime settings are gone after the install (it reboots); run the DPU configuration again.
seealso:
  - module: bluefleet.dpu.nic_firmware
  - module: bluefleet.dpu.fw_reset
"""

EXAMPLES = r"""
- name: Install the DOCA bundle on the DPU from its host (async, bounded)
  bluefleet.dpu.bfb_install:
    bfb: /srv/bfb/bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod.bfb
    sha256: "{{ bfb_sha256 }}"
    version: bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod
    generation: 3
    rshim: "/dev/{{ bluefleet_rshim }}"
    device: /dev/mst/mt41692_pciconf0
    dpu_command: [ssh, -o, BatchMode=yes, "ubuntu@192.168.100.2"]
    ubuntu_password_hash: "{{ vault_dpu_ubuntu_password_hash }}"
    hostname: "{{ inventory_hostname }}"
    nic_firmware_update: true
    bf_cfg:
      UPDATE_ATF_UEFI: true
  delegate_to: "{{ bluefleet_host }}"
  async: 3000
  poll: 30
  register: bfb

- name: On the device twin (sim inventory)
  bluefleet.dpu.bfb_install:
    bfb: /tmp/bf-bundle.bfb
    version: bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod
    rshim: "{{ hostvars[bluefleet_host].bluefleet_environment.DPUSIM_ROOT }}/dev/{{ bluefleet_rshim }}"
    dpu_command: [env, "DPUSIM_ROOT={{ bluefleet_environment.DPUSIM_ROOT }}", "PATH={{ bluefleet_environment.PATH }}"]
    poll_interval: 1
  delegate_to: "{{ bluefleet_host }}"
  environment: "{{ hostvars[bluefleet_host].bluefleet_environment }}"
"""

RETURN = r"""
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed:
  description: True when the bundle was installed (or, in check mode, would be).
  returned: always
  type: bool
versions:
  description: C(before) and C(after), each with C(release) (null when the DPU did not answer) and C(nic_firmware)
    (C(flashed), C(running); null without O(device)). In check mode C(after) is the expected state.
  returned: always
  type: dict
  sample: {"before": {"release": "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod", "nic_firmware": null},
           "after": {"release": "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod", "nic_firmware": null}}
dpu:
  description: The DPU after the run - C(release), C(answers) (it answered O(dpu_command)).
  returned: always
  type: dict
rshim:
  description: What the preflight read - C(path), C(dev_name), C(dev_info), C(generation), C(mode) (C(dpu), C(nic) or
    null when misc does not say).
  returned: always
  type: dict
console:
  description: The outcome of bfb-install - C(marker) (the finish marker seen), C(log) (console lines
    C(LEVEL[SOURCE] - message)), C(seconds) it ran. Empty when nothing was installed.
  returned: always
  type: dict
bf_cfg:
  description: The bf.cfg settings passed, secret values replaced by C(********); empty when no bf.cfg was used.
  returned: always
  type: dict
reset_required:
  description: C(none) or C(power_cycle) (reset classes of the bluefleet reset planner), see the description.
  returned: always
  type: str
reset_reason:
  description: Why RV(reset_required) is needed, empty when it is C(none).
  returned: always
  type: str
diff:
  description: DPU release and NIC firmware before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order (the bf.cfg path is a temporary file, deleted).
  returned: always
  type: list
  elements: list
tool_version:
  description: The version of the rshim package that ships C(bfb-install) (C(dpkg-query)); C(bfb-install) has no
    C(--version). Null where dpkg does not know the package (rshim built from source).
  returned: always
  type: str
"""

import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._bfb import (
    BfbError,
    bf_cfg_settings,
    classify_console,
    generation,
    masked,
    misc_mode,
    misc_problem,
    render_bf_cfg,
    scrub,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import flint_versions, pick_tool
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import change_reset
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._bf_release import parse_bfver
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rshim import parse_bfb_install, parse_rshim_misc
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_file
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import (
    ToolRunner,
    error_reason,
    tool_missing,
    version_line,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    is_sha256,
    nonpositive_seconds,
    sha256_of,
    timeout_spec,
    with_change_time,
    without_unasked_diff,
)

LABEL = "install BFB"


def failure_details(exc, secrets):
    """``fail_json`` keys of a ToolError, with the secrets scrubbed out of the command's output."""
    out = exc.details(with_cmd=False)
    for key in ("stdout", "stderr"):
        if key in out:
            out[key] = scrub(out[key], secrets)
    return out


class Dpu:
    """The host's view of one DPU: its rshim, its card (flint) and its Arm OS (dpu_command)."""

    def __init__(self, runner, params):
        self.runner = runner
        self.p = params

    @staticmethod
    def sleep(seconds):
        time.sleep(seconds)

    @staticmethod
    def clock():
        return time.monotonic()

    def check_file(self):
        path = self.p["bfb"]
        try:
            with open(path, "rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise ToolError("%s failed: cannot read the bundle %s: %s; copy it to this host first"
                            % (LABEL, path, exc.strerror or exc)) from exc
        if self.p["sha256"] is None:
            return None
        want = self.p["sha256"].lower()
        if not is_sha256(want):
            raise ToolError("%s failed: sha256 must be 64 hex digits, got %r" % (LABEL, self.p["sha256"]))
        digest = sha256_of(path)
        if digest != want:
            raise ToolError("%s failed: the bundle %s has sha256 %s, expected %s; the file is damaged or not the "
                            "one meant, download it again" % (LABEL, path, digest, want))
        return digest

    def rshim(self):
        path = self.p["rshim"].rstrip("/") or "/"
        misc_path = os.path.join(path, "misc")
        try:
            with open(misc_path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as exc:
            raise ToolError("%s failed: the rshim device %s is not present on this host (%s: %s); start the rshim "
                            "service (systemctl start rshim), and if the BMC owns the rshim, release it there first"
                            % (LABEL, path, misc_path, exc.strerror or exc)) from exc
        try:
            misc = parse_rshim_misc(text)
        except ParseError as exc:
            raise ToolError("%s failed: %s: %s" % (LABEL, misc_path, exc)) from exc
        problem = misc_problem(misc, path)
        if problem:
            raise ToolError("%s failed: %s" % (LABEL, problem))
        gen = generation(misc.get("dev_info"))
        info = {"path": path, "dev_name": misc.get("dev_name"), "dev_info": misc.get("dev_info"), "generation": gen,
                "mode": misc_mode(misc.get("bf_mode"))}
        if self.p["generation"] is not None and gen != self.p["generation"]:
            raise ToolError("%s failed: the bundle is for BlueField-%d and the card on %s is %s; use the bundle for "
                            "BlueField-%s" % (LABEL, self.p["generation"], path, misc.get("dev_info"), gen),
                            rshim=info)
        return info

    def release(self):
        """The DPU's OS release, or None when it does not answer (and the result of the try)."""
        result = self.runner.run(list(self.p["dpu_command"]) + ["bfver"], timeout=min(120, self.p["ready_timeout"]))
        if error_reason(result):
            return None, result
        try:
            data = parse_bfver(result.stdout)
        except ParseError as exc:
            raise ToolError("%s failed: read the DPU's release with bfver: %s" % (LABEL, exc), result) from exc
        return data["os_release_version"], result

    def nic_firmware(self):
        if not self.p["device"]:
            return None
        tool = pick_tool(self.runner, "flint")
        what = "query NIC firmware of %s with %s" % (self.p["device"], tool)
        return flint_versions(self.runner, self.p["device"], what, tool=tool)

    def install(self, cfg_text):
        """Run bfb-install once (bf.cfg in a private 0600 file, deleted afterwards); return (console, result)."""
        rshim = os.path.basename(self.p["rshim"].rstrip("/"))
        bfb = self.p["bfb"]
        workdir = None
        try:
            cfg_path = None
            if cfg_text or any(c.isspace() for c in bfb):
                workdir = tempfile.mkdtemp(prefix="bluefleet-bfcfg-")
            if any(c.isspace() for c in bfb):
                # bfb-install breaks on a path with spaces: give it a link without any, in the private folder
                link = os.path.join(workdir, "bundle.bfb")
                os.symlink(os.path.abspath(bfb), link)
                bfb = link
            if cfg_text:
                cfg_path = os.path.join(workdir, "bf.cfg")
                write_file(cfg_path, cfg_text, mode=0o600)
            argv = install_argv(rshim, bfb, cfg_path)
            started = self.clock()
            result = self.runner.run(argv, timeout=self.p["timeout"])
            seconds = round(self.clock() - started, 1)
        finally:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
        if tool_missing(result):
            raise ToolError("%s failed: bfb-install not found on PATH; install the rshim package on this host"
                            % LABEL, result)
        try:
            parsed = parse_bfb_install(result.stdout + "\n" + result.stderr)
        except ParseError:
            parsed = {"log": [], "errors": [line.strip() for line in (result.stdout + result.stderr).splitlines()
                                            if line.strip().startswith("Error:")]}
        outcome = classify_console(parsed, result.rc, result.timed_out)
        console = {"marker": outcome["marker"], "seconds": seconds,
                   "log": ["%s[%s]: %s" % (e["level"], e["source"], e["message"]) for e in parsed.get("log", [])
                           if e.get("level")]}
        if not outcome["ok"]:
            raise ToolError("%s failed: %s" % (LABEL, outcome["reason"]), result, console=console,
                            failure=outcome["kind"])
        return console

    def wait_ready(self):
        deadline = self.clock() + self.p["ready_timeout"]
        while True:
            release, result = self.release()
            if release is not None or self.clock() >= deadline:
                return release, result
            self.sleep(self.p["poll_interval"])


# bfb-install has no --version (rshim-user-space's script rejects it): the version is the rshim package's.
TOOL_VERSION_ARGV = ("dpkg-query", "-W", "-f=${Version}\\n", "rshim")


def install_argv(rshim, bfb, config=None):
    """``bfb-install --rshim rshimN --bfb FILE [--config FILE]`` (rshim-user-space 2.8)."""
    return ["bfb-install", "--rshim", rshim, "--bfb", bfb] + (["--config", config] if config else [])


def build_cfg(p):
    try:
        values, secret_keys = bf_cfg_settings(p["bf_cfg"], p["bf_cfg_secrets"], p["ubuntu_password_hash"],
                                              p["nic_firmware_update"])
        text = render_bf_cfg(values, p["hostname"])
    except BfbError as exc:
        raise ToolError("%s failed: %s" % (LABEL, exc)) from exc
    shown = masked(values, secret_keys)
    if p["hostname"] is not None:
        shown["bfb_modify_os"] = "hostname %s" % p["hostname"]
    return text, shown, [values[key] for key in secret_keys]


def run_install(runner, p, check_mode, dpu=None):
    dpu = dpu or Dpu(runner, p)
    cfg_text, cfg_shown, secrets = build_cfg(p)
    dpu.check_file()
    rshim = dpu.rshim()
    release, probe = dpu.release()
    fw_before = dpu.nic_firmware()
    before = {"release": release, "nic_firmware": fw_before}
    changed = release != p["version"]
    after = before
    console = {}
    answers = release is not None
    if changed and check_mode:
        after = {"release": p["version"], "nic_firmware": fw_before}
    if changed and not check_mode:
        console = dpu.install(cfg_text)
        release, probe = dpu.wait_ready()
        if release is None:
            raise ToolError("%s failed: the bundle was installed (%s) but the DPU did not answer %s within %d s "
                            "(last try: %s); read %s/misc for its console, then write 'SW_RESET 1' there or "
                            "power-cycle the server"
                            % (LABEL, console["marker"], " ".join(p["dpu_command"] + ["bfver"]), p["ready_timeout"],
                               error_reason(probe), rshim["path"]), probe, console=console, failure="dpu_down")
        answers = True
        after = {"release": release, "nic_firmware": dpu.nic_firmware()}
        if release != p["version"]:
            raise ToolError("%s failed: bfb-install finished (%s) but the DPU reports %s, not %s; check that "
                            "version names the release this bundle installs"
                            % (LABEL, console["marker"], release, p["version"]), console=console)
    if changed and check_mode:
        if p["nic_firmware_update"] is False:
            reset, reason = change_reset({"kind": "bfb_os"})
        else:
            reset, reason = change_reset({"kind": "bfb_nic_firmware"})
            reason = "worst case, known after the install: " + reason
    else:
        fw = after["nic_firmware"]
        if fw and fw["flashed"] != fw["running"]:
            reset, reason = change_reset({"kind": "bfb_nic_firmware"})
        else:
            reset, reason = "none", ""
    return {
        "changed": changed,
        "versions": {"before": before, "after": after},
        "dpu": {"release": after["release"], "answers": answers},
        "rshim": rshim,
        "console": console,
        "bf_cfg": cfg_shown if cfg_text else {},
        "reset_required": reset,
        "reset_reason": reason,
        "diff": make_diff(before, after, "DPU before", "DPU after"),
    }, secrets


def argument_spec():
    return {
        "bfb": {"type": "path", "required": True},
        "version": {"type": "str", "required": True},
        "sha256": {"type": "str"},
        "generation": {"type": "int", "choices": [2, 3]},
        "rshim": {"type": "path", "default": "/dev/rshim0"},
        "dpu_command": {"type": "list", "elements": "str", "required": True},
        "device": device_spec(),
        "bf_cfg": {"type": "dict", "default": {}},
        "bf_cfg_secrets": {"type": "dict", "default": {}, "no_log": True},
        "ubuntu_password_hash": {"type": "str", "no_log": True},
        "nic_firmware_update": {"type": "bool"},
        "hostname": {"type": "str"},
        "timeout": timeout_spec(1800),
        "ready_timeout": {"type": "int", "default": 900},
        "poll_interval": {"type": "int", "default": 10},
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    problem = nonpositive_seconds(p, LABEL, ("timeout", "ready_timeout", "poll_interval"))
    if problem:
        module.fail_json(msg=problem)
    if not p["dpu_command"]:
        module.fail_json(msg="%s failed: dpu_command is empty; give the argv that runs a command on the DPU "
                             "(e.g. [ssh, ubuntu@192.168.100.2])" % LABEL)
    runner = ToolRunner(timeout=p["timeout"])
    secrets = [p["ubuntu_password_hash"]] + [str(v) for v in (p["bf_cfg_secrets"] or {}).values()]
    try:
        result, secrets = run_install(runner, p, module.check_mode)
    except ToolError as exc:
        module.fail_json(msg=scrub(exc.msg, secrets), cmd=[list(a) for a in runner.cmd],
                         **failure_details(exc, secrets))
    result["tool_version"] = version_line(runner, TOOL_VERSION_ARGV)
    result["cmd"] = [list(a) for a in runner.cmd]
    if module.check_mode:
        result["check_mode_prediction"] = True
    module.exit_json(**without_unasked_diff(module, with_change_time(module, result)))


if __name__ == "__main__":
    main()
