# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``crictl`` of the BlueField's standalone kubelet. Kinds: ``crictl-ps-json``, ``crictl-pods-json``,
``crictl-images-json``, ``crictl-ps-table``, ``crictl-pods-table``.

Layouts:
* ``crictl ps -o json``: shared/corpus/crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt (a DOCA HBN static pod).
  ``image.image`` is the image id (sha256), not the tag: the tag comes from ``crictl images -o json``.
* ``crictl pods -o json`` / ``crictl images -o json``: the CRI API messages ListPodSandboxResponse (``items``)
  and ListImagesResponse (``images``) in protobuf JSON (k8s.io/cri-api runtime/v1 api.proto; no capture).
* Tables: cri-tools cmd/crictl/container.go and sandbox.go (commit 0145dc7f): header
  ``CONTAINER IMAGE CREATED STATE NAME ATTEMPT POD ID POD NAMESPACE`` (older releases stop at ``POD ID``
  or ``POD``) and ``POD ID CREATED STATE NAME NAMESPACE ATTEMPT RUNTIME``, columns padded by text/tabwriter
  (at least 3 spaces between cells); CREATED holds spaces (``About a minute ago``).
"""

from __future__ import annotations

import json

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

KIND_PS = "crictl-ps-json"
KIND_PODS = "crictl-pods-json"
KIND_IMAGES = "crictl-images-json"
KIND_PS_TABLE = "crictl-ps-table"
KIND_PODS_TABLE = "crictl-pods-table"

CONTAINER_STATES = ("CONTAINER_CREATED", "CONTAINER_RUNNING", "CONTAINER_EXITED", "CONTAINER_UNKNOWN")
POD_STATES = ("SANDBOX_READY", "SANDBOX_NOTREADY")


def _load(kind, text, key):
    if not isinstance(text, str):
        raise TypeError("parsers take str, got %s" % type(text).__name__)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(kind, "not JSON (%s)" % exc) from exc
    if not isinstance(doc, dict) or key not in doc and doc:
        raise ParseError(kind, "expected an object with %r" % key)
    items = doc.get(key) or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ParseError(kind, "%r is not a list of objects" % key)
    return items


def _str_map(kind, value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(kind, "%s is not an object" % what)
    return dict((str(k), str(v)) for k, v in value.items())


def _int(kind, value, what):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ParseError(kind, "%s is not an integer: %r" % (what, value)) from None


def parse_ps_json(text):
    """``crictl ps -o json`` -> list of containers: id, pod_id, name, attempt, image_id, image_ref, state,
    created_ns, pod_name, pod_namespace, pod_uid, restart_count (int or None), labels, annotations."""
    out = []
    for item in _load(KIND_PS, text, "containers"):
        meta = item.get("metadata") or {}
        if not item.get("id") or not isinstance(meta, dict) or not meta.get("name"):
            raise ParseError(KIND_PS, "a container without id or metadata.name")
        state = item.get("state")
        if state not in CONTAINER_STATES:
            raise ParseError(KIND_PS, "unknown container state %r" % (state,))
        labels = _str_map(KIND_PS, item.get("labels"), "labels")
        annotations = _str_map(KIND_PS, item.get("annotations"), "annotations")
        restarts = annotations.get("io.kubernetes.container.restartCount")
        image = item.get("image") or {}
        out.append({
            "id": item["id"],
            "pod_id": item.get("podSandboxId", ""),
            "name": meta["name"],
            "attempt": _int(KIND_PS, meta.get("attempt", 0), "metadata.attempt"),
            "image_id": image.get("image", "") if isinstance(image, dict) else "",
            "image_ref": item.get("imageRef", ""),
            "state": state,
            "created_ns": _int(KIND_PS, item.get("createdAt", 0), "createdAt"),
            "pod_name": labels.get("io.kubernetes.pod.name"),
            "pod_namespace": labels.get("io.kubernetes.pod.namespace"),
            "pod_uid": labels.get("io.kubernetes.pod.uid"),
            "restart_count": None if restarts is None else _int(KIND_PS, restarts, "restartCount"),
            "labels": labels,
            "annotations": annotations,
        })
    return out


def parse_pods_json(text):
    """``crictl pods -o json`` -> list of pods: id, name, uid, namespace, attempt, state, created_ns, labels,
    annotations, runtime_handler."""
    out = []
    for item in _load(KIND_PODS, text, "items"):
        meta = item.get("metadata") or {}
        if not item.get("id") or not isinstance(meta, dict) or not meta.get("name"):
            raise ParseError(KIND_PODS, "a pod without id or metadata.name")
        if item.get("state") not in POD_STATES:
            raise ParseError(KIND_PODS, "unknown pod state %r" % (item.get("state"),))
        out.append({
            "id": item["id"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "namespace": meta.get("namespace", ""),
            "attempt": _int(KIND_PODS, meta.get("attempt", 0), "metadata.attempt"),
            "state": item["state"],
            "created_ns": _int(KIND_PODS, item.get("createdAt", 0), "createdAt"),
            "labels": _str_map(KIND_PODS, item.get("labels"), "labels"),
            "annotations": _str_map(KIND_PODS, item.get("annotations"), "annotations"),
            "runtime_handler": item.get("runtimeHandler", ""),
        })
    return out


def parse_images_json(text):
    """``crictl images -o json`` -> list of images: id, repo_tags, repo_digests, size (int or None)."""
    out = []
    for item in _load(KIND_IMAGES, text, "images"):
        if not item.get("id"):
            raise ParseError(KIND_IMAGES, "an image without id")
        tags = item.get("repoTags") or []
        digests = item.get("repoDigests") or []
        if not isinstance(tags, list) or not isinstance(digests, list):
            raise ParseError(KIND_IMAGES, "repoTags / repoDigests are not lists")
        size = item.get("size")
        out.append({"id": item["id"], "repo_tags": [str(t) for t in tags], "repo_digests": [str(d) for d in digests],
                    "size": None if size in (None, "") else _int(KIND_IMAGES, size, "size")})
    return out


_GAP = LazyPattern(r" {2,}")
PS_HEADERS = (
    ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD", "NAMESPACE"],
    ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"],
    ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID"],
)
PODS_HEADERS = (
    ["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"],
    ["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT"],
)


def _table(kind, text, headers):
    lines = [line for line in split_lines(text) if line.strip()]
    if not lines:
        return []
    head = _GAP.split(lines[0].strip())
    if head not in [list(h) for h in headers]:
        raise ParseError(kind, "unknown header %r" % (head,), 1, lines[0])
    keys = [h.lower().replace(" ", "_") for h in head]
    rows = []
    for no, line in enumerate(lines[1:], start=2):
        cells = _GAP.split(line.strip())
        if len(cells) != len(keys):
            raise ParseError(kind, "expected %d columns, found %d" % (len(keys), len(cells)), no, line)
        row = dict((key, cells[i]) for i, key in enumerate(keys))
        row["attempt"] = _int(kind, row["attempt"], "ATTEMPT")
        rows.append(row)
    return rows


def parse_ps_table(text):
    """``crictl ps [-a]`` table -> list of dicts keyed by the lower-cased headers (``pod_id``, ...)."""
    return _table(KIND_PS_TABLE, text, PS_HEADERS)


def parse_pods_table(text):
    """``crictl pods`` table -> list of dicts keyed by the lower-cased headers."""
    return _table(KIND_PODS_TABLE, text, PODS_HEADERS)


def image_tags(images):
    """{image id: [repo tags]} from ``parse_images_json``."""
    return dict((img["id"], img["repo_tags"]) for img in images)


# Only the layout with a real capture is registered (``bluefleet parse``, the fixture suite); the others are
# written from the cri-tools source and tested in tests/unit/module_utils/test_crictl.py.
def parse_ps_json_kind(text):
    """The ``crictl-ps-json`` kind as every parser kind answers (a mapping): ``{"containers": [...]}``."""
    return {"containers": parse_ps_json(text)}


PARSERS = {KIND_PS: parse_ps_json_kind}
