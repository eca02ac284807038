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

Pure: no I/O, no AnsibleModule. ``DocaError`` for bad input (the module fails before anything changes).
"""

from __future__ import annotations

import hashlib

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern

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


class DocaError(ValueError):
    """Bad input for a DOCA service: the message names the input and what to do."""


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
