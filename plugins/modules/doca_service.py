# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: doca_service
short_description: Deploy, update or remove a DOCA service as a static pod of the BlueField's kubelet
version_added: 0.1.0
description:
  - Runs on the BlueField's Arm side. A DOCA service (telemetry, HBN, Firefly, SNAP) runs as a static pod - a manifest
    in the standalone kubelet's folder (C(/etc/kubelet.d)) - with its configuration files in a host folder the pod
    mounts.
  - Builds the pod manifest from the service catalogue (or takes O(manifest)), checks it (YAML that parses, C(kind)
    Pod, every image pinned to a version tag other than C(latest) or to a sha256 digest), writes the configuration
    files and the manifest atomically, then waits until the kubelet runs the pod (C(crictl pods), C(crictl ps)).
  - The manifest carries the annotation C(bluefleet.io/config-hash), a hash of the configuration files, so a
    configuration change changes the manifest and the kubelet recreates exactly this pod. A run that changes
    nothing writes nothing and restarts nothing.
  - Bad input (an unknown service, an image that is not pinned, a manifest that does not parse or is not a Pod)
    fails before any file is written.
  - O(services) handles several services in one run - every service is checked first (all the bad ones named in
    one failure, nothing written), then the changed ones are written (each one's configuration files, then its
    manifest) and the kubelet is waited for, all of them within one O(wait_timeout). RV(services) has one result
    per service.
author:
  - bluefleet developers (!UNKNOWN)
options:
  name:
    description:
      - The service - C(telemetry) (DOCA Telemetry Service), C(hbn), C(firefly) (PTP) or C(snap).
      - Exactly one of O(name) and O(services) is required.
    type: str
  services:
    description:
      - Several services instead of O(name), each with its own options (those of the single service - O(state),
        O(version), O(image), O(manifest), O(config_files), O(config_dir), O(env), O(args)); O(manifest_dir),
        O(fs_root), O(wait), O(wait_timeout) and O(timeout) apply to all of them.
      - Every service is checked before any is written; a service named twice, or two services writing one file,
        fail the same way.
    type: list
    elements: dict
    suboptions:
      name:
        description: The service - C(telemetry), C(hbn), C(firefly) or C(snap).
        type: str
        required: true
      state:
        description: C(present) deploys or updates it, C(absent) removes it (see O(state)).
        type: str
        choices: [present, absent]
        default: present
      version:
        description: Image tag on the service's catalogue repository (see O(version)).
        type: str
      image:
        description: Whole image reference instead of O(services[].version).
        type: str
      manifest:
        description: A whole Pod manifest instead of the catalogue's (see O(manifest)).
        type: str
      config_files:
        description: Configuration files of the service, file name to content.
        type: dict
        default: {}
      config_dir:
        description: Folder for O(services[].config_files). Default - the catalogue's.
        type: path
      env:
        description: Environment variables of the service's container (catalogue manifest only).
        type: dict
        default: {}
      args:
        description: Arguments of the service's container (catalogue manifest only).
        type: list
        elements: str
        default: []
  state:
    description: C(present) deploys or updates the service, C(absent) removes its manifest (the kubelet stops it)
      and the configuration files named in O(config_files).
    type: str
    choices: [present, absent]
    default: present
  version:
    description: Image tag on the service's catalogue repository (C(nvcr.io/nvidia/doca/...)), e.g.
      C(1.16.5-doca2.6.0).
    type: str
  image:
    description: Whole image reference instead of O(version) (C(repo:TAG) or C(repo@sha256:DIGEST)).
    type: str
  manifest:
    description: A whole Pod manifest (YAML text) instead of the catalogue's. Its images must be pinned; the
      config-hash annotation and the C(bluefleet.io/service) label are added.
    type: str
  config_files:
    description: Configuration files of the service, file name to content, written to O(config_dir).
    type: dict
    default: {}
  config_dir:
    description: Folder (on the DPU) for O(config_files), mounted into the pod. Default - the catalogue's.
    type: path
  env:
    description: Environment variables of the service's container (catalogue manifest only).
    type: dict
    default: {}
  args:
    description: Arguments of the service's container (catalogue manifest only).
    type: list
    elements: str
    default: []
  manifest_dir:
    description: The kubelet's static-pod folder.
    type: path
    default: /etc/kubelet.d
  wait:
    description: After a change, wait until the pod of the new manifest is ready and all its containers run
      (after O(state=absent) - until it is gone).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the kubelet.
    type: int
    default: 180
  timeout:
    description: Seconds each command may run.
    type: int
    default: 60
extends_documentation_fragment:
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: Validates, reads and reports what would change; writes nothing.
    support: full
  diff_mode:
    description: The manifest and configuration files before and after.
    support: full
  platform:
    description: BlueField Arm systems with the standalone kubelet, containerd and crictl.
    platforms: posix
    support: full
notes:
  - crictl is looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
seealso:
  - module: bluefleet.dpu.dpu_info
"""

EXAMPLES = r"""
- name: DOCA Telemetry Service with a Prometheus endpoint
  bluefleet.dpu.doca_service:
    name: telemetry
    version: 1.16.5-doca2.6.0
    config_files:
      dts_config.ini: |
        prometheus=http://0.0.0.0:9100

- name: Remove HBN
  bluefleet.dpu.doca_service:
    name: hbn
    state: absent

- name: Telemetry and Firefly deployed and HBN removed in one run (all checked before anything is written)
  bluefleet.dpu.doca_service:
    services:
      - name: telemetry
        version: 1.16.5-doca2.6.0
        config_files:
          dts_config.ini: |
            prometheus=http://0.0.0.0:9100
      - name: firefly
        version: 1.5.0-doca2.9.0
      - name: hbn
        state: absent
  register: doca
"""

RETURN = r"""
check_mode_prediction:
  description:
    - Only in check mode. False - the outcome is only known after the module acts, so the resource keys
      show the current state; RV(changed) and the diff say what would change.
  returned: check mode
  type: bool
  sample: false
changed:
  description: True when a file was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
service:
  description: The service name.
  returned: with O(name)
  type: str
  sample: telemetry
manifest_path:
  description: The manifest's path on the DPU (without O(fs_root)).
  returned: with O(name)
  type: str
  sample: /etc/kubelet.d/doca_telemetry_standalone.yaml
images:
  description: The pinned images of the manifest (empty for O(state=absent)).
  returned: with O(name)
  type: list
  elements: str
config_hash:
  description: The hash of the configuration files carried in the manifest's annotation.
  returned: with O(name)
  type: str
changed_files:
  description: Paths (on the DPU) written or removed, or that would be in check mode (with O(services), those of
    every service).
  returned: always
  type: list
  elements: str
restarted:
  description: True when a running pod of this service was replaced by a new one (its id changed).
  returned: with O(name)
  type: bool
pod:
  description: The service's pod after the run as crictl reports it, or null when there is none (or crictl is
    missing and O(wait) is false). Keys id, name, state, config_hash and containers (name, id, state, attempt,
    restart_count, image_id - the sha256 id crictl reports).
  returned: with O(name)
  type: dict
previous_pod_id:
  description: The id of the service's pod before the run, or null.
  returned: with O(name)
  type: str
services:
  description:
    - With O(services), one result per service in the order given - C(service), C(state), C(changed) (its files
      were, or in check mode would be, written or removed), C(changed_files), C(manifest_path), C(images),
      C(config_hash), C(restarted), C(pod) and C(previous_pod_id), as the single-service keys of the same names.
  returned: with O(services)
  type: list
  elements: dict
  sample:
    - {service: telemetry, state: present, changed: true, restarted: false, previous_pod_id: null,
       manifest_path: /etc/kubelet.d/doca_telemetry_standalone.yaml, config_hash: 3f1c...,
       images: [nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0],
       changed_files: [/etc/kubelet.d/doca_telemetry_standalone.yaml], pod: null}
reset_required:
  description: Always C(none) - the kubelet applies a manifest change by itself.
  returned: always
  type: str
  sample: none
diff:
  description: Manifest and configuration file contents before and after, keyed by path (with O(services), the
    files of every service).
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(crictl --version), or null when crictl does not answer.
  returned: always
  type: str
"""

import functools
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._crictl import parse_pods_json, parse_ps_json
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_file
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
)

POLL_SECONDS = 1


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolError("read %s failed: %s" % (path, exc)) from exc


def write_atomic(path, content):
    try:
        write_file(path, content, mode=0o644, makedirs=True)
    except OSError as exc:
        raise ToolError("write %s failed: %s" % (path, exc)) from exc


def read_pod(runner, name, pod_name, allow_missing):
    """The service's pod as crictl reports it (None when there is none); None too when crictl is missing and
    ``allow_missing``. crictl lists the service's pods, then the containers of the one ``_doca.newest_ready_pod``
    picks (dpu_info's section doca_services picks the same from every pod and container: ``_doca.pick_pod``)."""
    what = "list the pods of %s with crictl" % name
    result = run_tool(runner, ["crictl", "pods", "--name", "^%s-" % pod_name, "-o", "json"], what,
                      allow_missing=allow_missing,
                      missing_hint="; crictl comes with the BlueField OS (kubelet + containerd)")
    if result is None:
        return None
    pod = _doca.newest_ready_pod(parse_output(parse_pods_json, result, what), pod_name)
    if pod is None:
        return None
    what = "list the containers of pod %s with crictl" % pod["name"]
    result = run_tool(runner, ["crictl", "ps", "-a", "--pod", pod["id"], "-o", "json"], what)
    return _doca.pod_view(pod, parse_output(parse_ps_json, result, what))


def read_targets(root, svc):
    """``svc`` (``_doca.want``) with what its files hold now and its plan of writes (read only); ToolError where a file
    cannot be read."""
    before, after, plan = {}, {}, []
    for path, content in svc["targets"]:
        current = read_text(_doca.under(root, path))
        before[path] = current
        after[path] = content if svc["present"] else None
        if (svc["present"] and current != content) or (not svc["present"] and current is not None):
            plan.append((path, content if svc["present"] else None))
    return dict(svc, before=before, after=after, plan=plan)


def prepare_all(params, specs):
    """Every service validated and its files read before any is written: all the bad ones named in one failure
    (``_doca.want_all``; its DocaError is a ToolError)."""
    return _doca.want_all(specs, params["manifest_dir"], read=functools.partial(read_targets, params["fs_root"]))


def write_plan(root, svc):
    for path, content in svc["plan"]:
        if content is None:
            os.unlink(_doca.under(root, path))
        else:
            write_atomic(_doca.under(root, path), content)


def wait_failed(params, waiting, pending, pods):
    """The ToolError of a wait that ran out: what is not done (each with its pod), and what is."""
    hint = "see `crictl ps -a` and the kubelet's log on the DPU"
    doing = dict((svc["name"], "run" if svc["present"] else "stop") for svc in waiting)
    if len(waiting) == 1:
        name = waiting[0]["name"]
        return ToolError("wait for the kubelet to %s %s failed: not done after %d s (pod: %r); %s"
                         % (doing[name], name, params["wait_timeout"], pods[name], hint), pod=pods[name])
    late = ", ".join("%s %s (pod: %r)" % (doing[svc["name"]], svc["name"], pods[svc["name"]]) for svc in pending)
    done = ", ".join(svc["name"] for svc in waiting if svc not in pending) or "none"
    return ToolError("wait for the kubelet failed: not done after %d s: %s (done: %s); %s"
                     % (params["wait_timeout"], late, done, hint), pods=pods)


def wait_for(runner, params, waiting):
    """Poll the kubelet until every service of ``waiting`` runs its new manifest (or is gone); one deadline for
    all of them, since the kubelet starts them side by side."""
    deadline = time.monotonic() + params["wait_timeout"]
    pods = dict((svc["name"], read_pod(runner, svc["name"], svc["entry"]["pod"], allow_missing=False))
                for svc in waiting)
    pending = [svc for svc in waiting if not _doca.ready(pods[svc["name"]], svc["digest"], svc["present"])]
    while pending:
        if time.monotonic() >= deadline:
            raise wait_failed(params, waiting, pending, pods)
        time.sleep(POLL_SECONDS)
        for svc in pending:
            pods[svc["name"]] = read_pod(runner, svc["name"], svc["entry"]["pod"], allow_missing=False)
        pending = [svc for svc in pending if not _doca.ready(pods[svc["name"]], svc["digest"], svc["present"])]
    return pods


def run_services(runner, params, specs, check_mode):
    """Validate every service, read what each has, write every plan in ONE place, then wait for the kubelet."""
    prepared = prepare_all(params, specs)
    old = dict((svc["name"], read_pod(runner, svc["name"], svc["entry"]["pod"], allow_missing=True))
               for svc in prepared)
    changed = any(svc["plan"] for svc in prepared)
    if changed and not check_mode:
        for svc in prepared:
            write_plan(params["fs_root"], svc)
    pods = dict(old)
    if not check_mode:
        waiting = [svc for svc in prepared if params["wait"]
                   and (svc["plan"] or not _doca.ready(old[svc["name"]], svc["digest"], svc["present"]))]
        pods.update(wait_for(runner, params, waiting) if waiting else {})
        for svc in prepared:
            if svc["plan"] and not params["wait"]:
                pods[svc["name"]] = read_pod(runner, svc["name"], svc["entry"]["pod"], allow_missing=True)
    results = []
    for svc in prepared:
        old_pod, pod = old[svc["name"]], pods[svc["name"]]
        results.append({
            "changed": bool(svc["plan"]),
            "service": svc["name"],
            "state": "present" if svc["present"] else "absent",
            "manifest_path": svc["manifest_path"],
            "images": svc["images"],
            "config_hash": svc["digest"],
            "changed_files": [path for path, _content in svc["plan"]],
            "restarted": (bool(old_pod and pod and old_pod["id"] != pod["id"])
                          or bool(old_pod and not svc["present"] and svc["plan"])),
            "pod": pod,
            "previous_pod_id": old_pod["id"] if old_pod else None,
        })
    before = dict((p, v) for svc in prepared for p, v in svc["before"].items() if v is not None)
    after = dict((p, v) for svc in prepared for p, v in svc["after"].items() if v is not None)
    return changed, results, make_diff(before, after)


def run_service(runner, params, check_mode):
    if params["services"] is None:
        changed, results, diff = run_services(runner, params, [dict((k, params[k]) for k in _doca.SERVICE_OPTIONS)],
                                              check_mode)
        result = dict(results[0], reset_required="none", diff=diff)
        result.pop("state")
        return result
    if not params["services"]:
        raise ToolError(_doca.NO_SERVICES)
    changed, results, diff = run_services(runner, params, params["services"], check_mode)
    return {
        "changed": changed,
        "services": results,
        "changed_files": [path for res in results for path in res["changed_files"]],
        "reset_required": "none",
        "diff": diff,
    }


argument_spec = _doca.argument_spec


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        supports_check_mode=True,
        **_doca.MODULE_RULES,
    )
    run_module(module, "configure DOCA service", ToolRunner,
               lambda runner: run_service(runner, module.params, module.check_mode),
               lambda result: ["crictl", "--version"], predicts=False)


if __name__ == "__main__":
    main()
