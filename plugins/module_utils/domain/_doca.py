# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DOCA services a BlueField runs as static pods of its standalone kubelet, and their pod manifests.

Facts (and where they come from):
* Static-pod folder ``/etc/kubelet.d``; DOCA Telemetry Service's manifest is
  ``/etc/kubelet.d/doca_telemetry_standalone.yaml`` and its files live under
  ``/opt/mellanox/doca/services/telemetry/`` (``config`` mounted into the container); configuration file
  ``dts_config.ini`` (NVIDIA DOCA Telemetry Service Guide, DOCA 2.5 / 2.6).
* HBN: pod ``doca-hbn-service`` (the kubelet names it ``doca-hbn-service-<node>``), container ``doca-hbn``
  (shared/corpus/crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt).
* Images are published on NGC under ``nvcr.io/nvidia/doca/`` (doca_telemetry, doca_hbn, doca_firefly,
  doca_snap), tagged ``<service version>-doca<DOCA version>``.
* The pod / container names of Firefly and SNAP and the config folders of HBN, Firefly and SNAP follow
  NVIDIA's published YAML as far as known here; they are catalogue defaults a user can override
  (``config_dir``) and are not checked against a card.

What ``doca_service`` (the module), ``dpu_info`` (section ``doca_services``: preflight's read) and the filter
``bluefleet.dpu.doca_service_plan`` (the module's check, worked out on the controller from that read) share:

- ``argument_spec()`` and ``MODULE_RULES``: the module's options and their rules; ``desired(spec)`` and
  ``want(spec, manifest_dir)``: one service validated, its manifest rendered and the files it writes (in order);
  ``want_all(specs, manifest_dir, read)``: every service of one run validated (and, in the module, its files read)
  with the checks over all of them (a service named twice, two services writing one file), the bad ones named in one
  failure.
- ``under(root, path)``: where the module reads and writes ``path`` under its ``fs_root``.
- ``pick_pod(pods, containers, pod_name)``: the service's pod as the module reads it, from the parsed ``crictl pods -o
  json`` and ``crictl ps -a -o json``; ``ready(pod, digest, present)``: whether the module would wait for it.
- ``plan_from_read(read, params)``: the module's check-mode answer from a dpu_info read, or why it cannot be given.

Pure: no I/O, no AnsibleModule. ``DocaError`` (a ``_tooling.ToolError``) for bad input (the module fails before
anything changes).
"""

from __future__ import annotations

import hashlib
import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import fs_root_spec, timeout_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML is on every machine Ansible manages here
    HAS_YAML = False

CONFIG_HASH_ANNOTATION = "bluefleet.io/config-hash"
SERVICE_LABEL = "bluefleet.io/service"
MANIFEST_DIR = "/etc/kubelet.d"

SERVICES = {
    "telemetry": {
        "pod": "doca-telemetry-service",
        "container": "doca-telemetry-service",
        "manifest": "doca_telemetry_standalone.yaml",
        "image_repo": "nvcr.io/nvidia/doca/doca_telemetry",
        "config_dir": "/opt/mellanox/doca/services/telemetry/config",
        "health": "metrics",
    },
    "hbn": {
        "pod": "doca-hbn-service",
        "container": "doca-hbn",
        "manifest": "doca_hbn.yaml",
        "image_repo": "nvcr.io/nvidia/doca/doca_hbn",
        "config_dir": "/var/lib/hbn/etc/nvue.d",
        "health": "routes",
    },
    "firefly": {
        "pod": "doca-firefly",
        "container": "doca-firefly",
        "manifest": "doca_firefly.yaml",
        "image_repo": "nvcr.io/nvidia/doca/doca_firefly",
        "config_dir": "/etc/firefly",
        "health": "ptp",
    },
    "snap": {
        "pod": "doca-snap",
        "container": "doca-snap",
        "manifest": "doca_snap.yaml",
        "image_repo": "nvcr.io/nvidia/doca/doca_snap",
        "config_dir": "/etc/nvda_snap",
        "health": "namespace",
    },
}

_DIGEST = LazyPattern(r"^[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
                      r"@sha256:[0-9a-f]{64}$")
_TAGGED = LazyPattern(r"^(?P<repo>[a-z0-9]+(?:[._:/-][a-z0-9]+)*):(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$")
_VERSION_TAG = LazyPattern(r"^v?[0-9]+(?:\.[0-9]+)+(?:[-_.+][A-Za-z0-9.]+)*$")
_FILE_NAME = LazyPattern(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class DocaError(ToolError):
    """Bad input for a DOCA service: the message names the input and what to do. A ToolError, so that the module
    fails with it and a ``*_plan`` filter (``_read_plan.answer_check``) reports it as the module's refusal."""


def service(name):
    """The catalogue entry of ``name``; DocaError naming the known services otherwise."""
    if name not in SERVICES:
        raise DocaError("unknown DOCA service %r; known services: %s" % (name, ", ".join(sorted(SERVICES))))
    return SERVICES[name]


def image_for(name, version):
    return "%s:%s" % (service(name)["image_repo"], version)


def check_pinned(image, where="image"):
    """Raise DocaError unless ``image`` is pinned: ``repo@sha256:<64 hex>`` or ``repo:<version tag>`` where the
    tag looks like a version (``1.16.5-doca2.6.0``, ``v2.4.1``) and is not ``latest``. Returns the tag or
    digest."""
    if not isinstance(image, str) or not image:
        raise DocaError("%s is empty; give a pinned image (repo:VERSION or repo@sha256:DIGEST)" % where)
    if "@" in image:
        if not _DIGEST.match(image):
            raise DocaError("%s %r: a digest must be sha256: followed by 64 lower-case hex digits" % (where, image))
        return image.split("@", 1)[1]
    match = _TAGGED.match(image)
    if not match:
        raise DocaError("%s %r has no tag; pin it: repo:VERSION (e.g. %s:1.16.5-doca2.6.0) or repo@sha256:DIGEST"
                        % (where, image, image.split(":")[0]))
    tag = match.group("tag")
    if tag == "latest" or not _VERSION_TAG.match(tag):
        raise DocaError("%s %r: tag %r is not pinned to a version; use a release tag such as 1.16.5-doca2.6.0 "
                        "or a sha256 digest" % (where, image, tag))
    return tag


def config_hash(config_files):
    """Short sha256 over the config files (names and contents, name order)."""
    digest = hashlib.sha256()
    for name in sorted(config_files):
        digest.update(name.encode() + b"\0" + config_files[name].encode() + b"\0")
    return digest.hexdigest()[:16]


def check_config_files(config_files):
    for fname, content in config_files.items():
        if not _FILE_NAME.match(fname):
            raise DocaError("config file name %r must be a plain file name (no '/', not starting with '.')" % fname)
        if not isinstance(content, str):
            raise DocaError("config file %r: content must be text, got %s" % (fname, type(content).__name__))


def default_manifest(name, image, config_dir, env=None, args=None):
    """The pod a DOCA service runs as: host network, the config folder mounted, one container."""
    entry = service(name)
    container = {"name": entry["container"], "image": image, "imagePullPolicy": "IfNotPresent"}
    if args:
        container["args"] = list(args)
    if env:
        container["env"] = [{"name": str(k), "value": str(v)} for k, v in sorted(env.items())]
    container["volumeMounts"] = [{"name": "config", "mountPath": config_dir}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": entry["pod"], "namespace": "default", "labels": {SERVICE_LABEL: name},
                     "annotations": {}},
        "spec": {
            "hostNetwork": True,
            "restartPolicy": "Always",
            "containers": [container],
            "volumes": [{"name": "config", "hostPath": {"path": config_dir, "type": "DirectoryOrCreate"}}],
        },
    }


def parse_manifest(text):
    """A user-given manifest (YAML text) -> dict; DocaError when it does not parse or is not one Pod."""
    if not HAS_YAML:
        raise DocaError("the manifest option needs PyYAML on the DPU")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DocaError("manifest does not parse as YAML: %s" % " ".join(str(exc).split())) from exc
    return doc


def check_manifest(doc, name):
    """Raise DocaError unless ``doc`` is a Pod with a name and containers whose images are all pinned."""
    if not isinstance(doc, dict) or doc.get("kind") != "Pod":
        kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise DocaError("manifest for %s is not a Pod (kind: %r); a static pod manifest has kind: Pod" % (name, kind))
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise DocaError("manifest for %s has no metadata.name" % name)
    containers = (doc.get("spec") or {}).get("containers") if isinstance(doc.get("spec"), dict) else None
    if not isinstance(containers, list) or not containers:
        raise DocaError("manifest for %s has no spec.containers" % name)
    for ctr in containers:
        if not isinstance(ctr, dict) or not ctr.get("name"):
            raise DocaError("manifest for %s: a container has no name" % name)
        check_pinned(ctr.get("image"), "manifest for %s, container %s: image" % (name, ctr.get("name")))
    return doc


def finish_manifest(doc, name, digest):
    """Add the service label and the config-hash annotation (a changed config changes the manifest, so the
    kubelet recreates exactly this pod)."""
    meta = doc.setdefault("metadata", {})
    meta.setdefault("labels", {})
    meta["labels"] = dict(meta["labels"] or {}, **{SERVICE_LABEL: name})
    meta["annotations"] = dict(meta.get("annotations") or {}, **{CONFIG_HASH_ANNOTATION: digest})
    return doc


def render_manifest(doc):
    """YAML text of a manifest (stable: keys in the order given)."""
    if not HAS_YAML:
        raise DocaError("rendering a manifest needs PyYAML on the DPU")
    return "# Managed by bluefleet (bluefleet.dpu.doca_service); edits are overwritten.\n" + yaml.safe_dump(
        doc, default_flow_style=False, sort_keys=False)


def pinned_images(doc):
    return [ctr.get("image") for ctr in doc["spec"]["containers"]]


_BDEV = LazyPattern(r"^(?P<target>.+)n(?P<ns>[0-9]+)$")
SNAP_FIX = "fix doca_services_snap_targets / doca_services_snap_controllers / doca_services_snap_namespaces"


def check_snap(targets, controllers, namespaces):
    """Raise DocaError (naming the entry, what is wrong and the variable to fix) unless the SNAP storage settings
    hang together: every target has name, address and an NQN starting with ``nqn.``; controller names are unique
    and pf_id is a non-negative integer; every namespace has a unique positive nsid, a bdev ``<target>n<N>`` of a
    declared target (SPDK's bdev name for namespace N of an attached controller), a controller that is declared,
    and, when given, a positive integer ``size_bytes``."""
    names = {}
    for index, target in enumerate(targets or []):
        if not isinstance(target, dict):
            raise DocaError("doca_services_snap_targets[%d] must be a mapping, got %r; %s" % (index, target, SNAP_FIX))
        for key in ("name", "address", "nqn"):
            if not target.get(key):
                raise DocaError("doca_services_snap_targets[%d] (%s) has no %s; %s"
                                % (index, target.get("name", "no name"), key, SNAP_FIX))
        if not str(target["nqn"]).startswith("nqn."):
            raise DocaError("doca_services_snap_targets[%d] (%s): NQN %r must start with 'nqn.'; %s"
                            % (index, target["name"], target["nqn"], SNAP_FIX))
        names[str(target["name"])] = target
    ctrl_names = []
    for index, ctrl in enumerate(controllers or []):
        if not isinstance(ctrl, dict) or not ctrl.get("name"):
            raise DocaError("doca_services_snap_controllers[%d] has no name; %s" % (index, SNAP_FIX))
        if ctrl["name"] in ctrl_names:
            raise DocaError("doca_services_snap_controllers: controller %r is declared twice; %s"
                            % (ctrl["name"], SNAP_FIX))
        pf_id = ctrl.get("pf_id")
        if isinstance(pf_id, bool) or not isinstance(pf_id, int) or pf_id < 0:
            raise DocaError("doca_services_snap_controllers[%d] (%s): pf_id %r must be a non-negative integer; %s"
                            % (index, ctrl["name"], pf_id, SNAP_FIX))
        ctrl_names.append(ctrl["name"])
    seen = set()
    for index, ns in enumerate(namespaces or []):
        if not isinstance(ns, dict):
            raise DocaError("doca_services_snap_namespaces[%d] must be a mapping, got %r; %s" % (index, ns, SNAP_FIX))
        nsid = ns.get("nsid")
        where = "doca_services_snap_namespaces[%d] (nsid %s)" % (index, nsid)
        if isinstance(nsid, bool) or not isinstance(nsid, int) or nsid < 1:
            raise DocaError("%s: nsid must be a positive integer; %s" % (where, SNAP_FIX))
        if nsid in seen:
            raise DocaError("%s: nsid %d is used twice (an NSID is unique in the subsystem); %s"
                            % (where, nsid, SNAP_FIX))
        seen.add(nsid)
        if ns.get("controller") not in ctrl_names:
            raise DocaError("%s: controller %r is not declared; declared controllers: %s; %s"
                            % (where, ns.get("controller"), ", ".join(ctrl_names) or "none", SNAP_FIX))
        match = _BDEV.match(str(ns.get("bdev") or ""))
        if match is None or match.group("target") not in names:
            raise DocaError("%s: bdev %r is not <target>n<N> of a declared target (targets: %s); %s"
                            % (where, ns.get("bdev"), ", ".join(sorted(names)) or "none", SNAP_FIX))
        size = ns.get("size_bytes")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
            raise DocaError("%s: size_bytes %r must be a positive integer (bytes); %s" % (where, size, SNAP_FIX))


# ---- the doca_service module: its options, one service's files, its pod ------------------------------------------

SERVICE_OPTIONS = ("name", "state", "version", "image", "manifest", "config_files", "config_dir", "env", "args")


def _service_options():
    """A service's options but its name (new dicts each call: a spec is the caller's to change)."""
    return {
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "version": {"type": "str"},
        "image": {"type": "str"},
        "manifest": {"type": "str"},
        "config_files": {"type": "dict", "default": {}},
        "config_dir": {"type": "path"},
        "env": {"type": "dict", "default": {}},
        "args": {"type": "list", "elements": "str", "default": []},
    }


def argument_spec():
    """doca_service's options (the module's ``argument_spec``, and the filter's check of the options it is given): one
    service's (``name`` and the options of ``_service_options``), or ``services``, a list of them."""
    service = dict(_service_options(), name={"type": "str", "required": True})
    return dict(
        _service_options(),
        name={"type": "str"},
        services={"type": "list", "elements": "dict", "options": service,
                  "mutually_exclusive": [("version", "image", "manifest")],
                  "required_if": [("state", "present", ("version", "image", "manifest"), True)]},
        manifest_dir={"type": "path", "default": MANIFEST_DIR},
        fs_root=fs_root_spec(),
        wait={"type": "bool", "default": True},
        wait_timeout={"type": "int", "default": 180},
        timeout=timeout_spec(60),
    )


# doca_service's AnsibleModule rules besides the argument spec
MODULE_RULES = {
    "mutually_exclusive": [("name", "services"), ("version", "image", "manifest", "services")]
    + [("services", option) for option in ("state", "config_files", "config_dir", "env", "args")],
    "required_one_of": [("name", "services")],
    "required_if": [("state", "present", ("version", "image", "manifest", "services"), True)],
}


def under(root, path):
    """``path`` (as the DPU sees it) under ``root``, as doca_service reads and writes it."""
    return os.path.join(root, path.lstrip("/")) if root not in ("", "/") else path


def desired(params):
    """Validate one service and build (manifest text or None, config files, images, digest, config dir)."""
    name = params["name"]
    entry = service(name)
    config_dir = params["config_dir"] or entry["config_dir"]
    files = params["config_files"] or {}
    check_config_files(files)
    digest = config_hash(files)
    if params["state"] == "absent":
        return None, files, [], digest, config_dir
    if params["manifest"] is not None:
        doc = check_manifest(parse_manifest(params["manifest"]), name)
    else:
        image = params["image"] or image_for(name, params["version"])
        check_pinned(image, "image of %s" % name)
        doc = default_manifest(name, image, config_dir, params["env"], params["args"])
    doc = finish_manifest(doc, name, digest)
    return render_manifest(doc), files, pinned_images(doc), digest, config_dir


def want(spec, manifest_dir):
    """One service of doca_service (its options, as validated) and the files it writes: ``targets``, (path, content)
    in the order the module writes them (the config files by name, the manifest last: the kubelet must see the new
    config files first); DocaError for bad input (``desired``)."""
    text, files, images, digest, config_dir = desired(spec)
    entry = SERVICES[spec["name"]]
    manifest_path = os.path.join(manifest_dir, entry["manifest"])
    targets = [(os.path.join(config_dir, fname), files[fname]) for fname in sorted(files)]
    targets.append((manifest_path, text))
    return {"name": spec["name"], "entry": entry, "present": spec["state"] == "present",
            "manifest_path": manifest_path, "images": images, "digest": digest, "targets": targets}


def twice_problem(specs):
    """The module's refusal of a service listed twice, or None."""
    names = [spec["name"] for spec in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return ("configure DOCA services failed: %s listed more than once in services; give each service once (state "
                "present or absent); nothing was written" % ", ".join(twice))
    return None


def shared_problem(paths_of):
    """The module's refusal of two services writing one file (``paths_of``: (service, its paths) in order), or
    None."""
    owners = {}
    for name, paths in paths_of:
        for path in paths:
            owners.setdefault(path, []).append(name)
    shared = sorted((path, names) for path, names in owners.items() if len(names) > 1)
    if shared:
        return ("configure DOCA services failed: %s is a file of %s; give each service its own config_dir; nothing "
                "was written" % (shared[0][0], " and ".join(shared[0][1])))
    return None


def newest_ready_pod(pods, pod_name):
    """The service's pod among ``pods`` (``_crictl.parse_pods_json``), or None: the newest ready one (SANDBOX_READY,
    by creation) whose name matches ``^<pod_name>-`` - the kubelet names a static pod ``<name>-<node>``; a catalogue
    pod name has no regular-expression character, so the match is a prefix."""
    ready_pods = [p for p in pods if p["state"] == "SANDBOX_READY" and p["name"].startswith(pod_name + "-")]
    if not ready_pods:
        return None
    return max(ready_pods, key=lambda p: p["created_ns"])


def pod_view(pod, containers):
    """What doca_service reports of ``pod``: its id, name, state, config hash and the latest container of each name
    (by creation) among ``containers`` (``_crictl.parse_ps_json``) that belong to it."""
    latest = {}
    for ctr in sorted((c for c in containers if c["pod_id"] == pod["id"]), key=lambda c: c["created_ns"]):
        latest[ctr["name"]] = ctr
    return {
        "id": pod["id"],
        "name": pod["name"],
        "state": pod["state"],
        "config_hash": pod["annotations"].get(CONFIG_HASH_ANNOTATION),
        "containers": [{"name": c["name"], "id": c["id"], "state": c["state"], "attempt": c["attempt"],
                        "restart_count": c["restart_count"], "image_id": c["image_id"]}
                       for c in latest.values()],
    }


def pick_pod(pods, containers, pod_name):
    """The service's pod as doca_service reads it, or None: ``newest_ready_pod`` and ``pod_view``. The module asks
    crictl for the service's pods and that pod's containers only (``--name``, ``--pod``); dpu_info's section
    doca_services lists every pod and container once (``crictl pods -o json``, ``crictl ps -a -o json``) and picks
    the same."""
    pod = newest_ready_pod(pods, pod_name)
    return None if pod is None else pod_view(pod, containers)


def ready(pod, digest, present):
    """Whether the kubelet runs what the service's manifest asks: a pod with the config hash ``digest`` whose
    containers all run (``present``), or no pod (removed). doca_service waits until it does."""
    if not present:
        return pod is None
    return (pod is not None and pod["config_hash"] == digest and bool(pod["containers"])
            and all(c["state"] == "CONTAINER_RUNNING" for c in pod["containers"]))


# ---- doca_service's check from dpu_info's section doca_services (the filter doca_service_plan) ---------------------

def _content_sha(content):
    """sha256 of the bytes doca_service writes for ``content``; None where its read of the file could never equal
    ``content`` (a carriage return: it reads text with universal newlines), so it writes the file on every run."""
    if "\r" in content:
        return None
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _target_changes(section, svc, path, content):
    """Whether doca_service would write (or remove) ``path``, or a reason (str) the section cannot say."""
    files = section["services"].get(svc["name"]) or {}
    if path == svc["manifest_path"]:
        state = files.get("manifest")
    else:
        if files.get("config_error"):
            return "the read of %s failed: %s" % (files.get("config_dir"), files["config_error"])
        state = (files.get("config_files") or {}).get(os.path.basename(path))
    if isinstance(state, dict) and state.get("error"):
        return "%s was not read: %s" % (path, state["error"])
    if not svc["present"]:
        return state is not None  # anything there: the module removes it (or fails, where it is a directory)
    if state is None or not state["file"]:
        return True
    return state["sha256"] != _content_sha(content)


def _section_problem(section, params, wants):
    """Why dpu_info's section doca_services cannot answer for these services, or None."""
    if not isinstance(section, dict) or not section.get("available"):
        return "the read has no doca_services section"
    if section.get("manifest_dir") != params["manifest_dir"]:
        return "the manifests were read in %s, not %s" % (section.get("manifest_dir"), params["manifest_dir"])
    for svc in wants:
        for path, _content in svc["targets"]:
            if under(section.get("root") or "/", path) != under(params["fs_root"], path):
                return "the files were read under %s, not %s" % (section.get("root"), params["fs_root"])
    pods = section.get("pods") or {}
    if not pods.get("available"):
        return "the read has no pods: %s" % pods.get("reason", "not read")
    for spec in params["services"]:
        if spec["config_dir"]:
            return "service %s sets config_dir; the read has the catalogue's folders only" % spec["name"]
        if spec["name"] not in section.get("services", {}) or spec["name"] not in pods.get("services", {}):
            return "the read has no %s" % spec["name"]
    return None


def plan_from_read(read, params):
    """doca_service's check-mode answer for ``params`` (its options, validated, with ``services``) from dpu_info's
    section doca_services in ``read``: ``{answered, why}`` and, when answered, ``changes`` (each path the module
    would write or remove, and ``pod of NAME`` for each service whose pod it would wait for: not ready for its
    config hash, or still there after a removal) and the module's check-mode result keys but ``diff`` (``changed``,
    ``changed_files``, ``services``, ``reset_required``). The services must pass the module's checks
    (``check_services``)."""
    section = read.get("doca_services")
    wants = [want(spec, params["manifest_dir"]) for spec in params["services"]]
    why = _section_problem(section, params, wants)
    if why:
        return {"answered": False, "why": why}
    results, changes, waits = [], [], []
    for svc in wants:
        changed_files = []
        for path, content in svc["targets"]:
            differs = _target_changes(section, svc, path, content)
            if isinstance(differs, str):
                return {"answered": False, "why": differs}
            if differs:
                changed_files.append(path)
        pod = section["pods"]["services"][svc["name"]]
        if not ready(pod, svc["digest"], svc["present"]):
            waits.append("pod of %s" % svc["name"])
        changes.extend(changed_files)
        results.append({
            "changed": bool(changed_files),
            "service": svc["name"],
            "state": "present" if svc["present"] else "absent",
            "manifest_path": svc["manifest_path"],
            "images": svc["images"],
            "config_hash": svc["digest"],
            "changed_files": changed_files,
            "restarted": bool(pod and not svc["present"] and changed_files),
            "pod": pod,
            "previous_pod_id": pod["id"] if pod else None,
        })
    return {"answered": True, "why": "", "changes": changes + waits, "changed": bool(changes), "services": results,
            "changed_files": changes, "reset_required": "none"}


# The module's refusal of an empty services list.
NO_SERVICES = ("configure DOCA services failed: services is empty; give at least one service (name and version, image "
               "or manifest, or state absent)")


def want_all(specs, manifest_dir, read=None):
    """Every service of one run validated (``want``), and with ``read`` its files read, before any is written: the
    services' wants (``read``'s result for each, with ``read``), or DocaError with the module's message - a service
    named twice; every service that fails its checks (or whose files ``read`` cannot read, ToolError) named in one
    failure; two services writing one file."""
    problem = twice_problem(specs)
    if problem:
        raise DocaError(problem)
    wants, errors = [], []
    for spec in specs:
        try:
            svc = want(spec, manifest_dir)
        except DocaError as exc:
            errors.append("configure DOCA service %s failed: %s" % (spec["name"], exc))
            continue
        try:
            wants.append(read(svc) if read else svc)
        except ToolError as exc:
            errors.append(exc.msg)
    if errors:
        raise DocaError("; ".join(errors) + ("; nothing was written" if len(specs) > 1 else ""))
    problem = shared_problem((svc["name"], [path for path, _content in svc["targets"]]) for svc in wants)
    if problem:
        raise DocaError(problem)
    return wants


def check_services(params):
    """The module's checks of ``services`` (its options, validated) before it reads anything: DocaError with its
    message, as the module fails."""
    if params["services"] is None:
        raise DocaError("configure DOCA service failed: the plan takes services, not name")
    if not params["services"]:
        raise DocaError(NO_SERVICES)
    want_all(params["services"], params["manifest_dir"])
