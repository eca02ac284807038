"""crictl parsers (pods / images JSON, tables) and the DOCA service catalogue (_doca).

The ``ps -o json`` capture is tested by the fixture suite (fixtures/parsers/crictl-ps-json). No capture of
``crictl pods -o json``, ``crictl images -o json`` or of the tables exists (corpus INDEX); the samples below
follow the CRI API messages and cri-tools' table code (cmd/crictl/container.go, sandbox.go, commit 0145dc7f):
header words, tabwriter padding (min width 20, padding 3), 13-character ids, "About a minute ago".
"""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _crictl
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from hypothesis import given
from hypothesis import strategies as st

PODS_JSON = """{
  "items": [
    {
      "id": "b5703f93d448f305b391c2583384b7d1a4e2266c35d12b0e0f2f01fe5083f93d",
      "metadata": {
        "name": "doca-hbn-service-dpu1",
        "uid": "949491dc6d16952d446a7d0e80da5b18",
        "namespace": "default",
        "attempt": 0
      },
      "state": "SANDBOX_READY",
      "createdAt": "1678127057000000000",
      "labels": {
        "io.kubernetes.pod.name": "doca-hbn-service-dpu1"
      },
      "annotations": {
        "bluefleet.io/config-hash": "0123456789abcdef",
        "kubernetes.io/config.source": "file"
      },
      "runtimeHandler": ""
    }
  ]
}
"""

IMAGES_JSON = """{
  "images": [
    {
      "id": "sha256:05f1047133f9852bd739590fa53071cc6f6eb7cce0a695ce981ddba81317c368",
      "repoTags": [
        "nvcr.io/nvidia/doca/doca_hbn:2.4.1-doca2.9.1"
      ],
      "repoDigests": [
      ],
      "size": "1048576",
      "uid": null,
      "username": "",
      "spec": null,
      "pinned": false
    }
  ]
}
"""

PS_TABLE = (
    "CONTAINER           IMAGE               CREATED              STATE               NAME                "
    "ATTEMPT             POD ID              POD                     NAMESPACE\n"
    "f11d4746b230d       05f1047133f98       About a minute ago   Running             doca-hbn            "
    "0                   b5703f93d448f       doca-hbn-service-dpu1   default\n"
)

PODS_TABLE = (
    "POD ID              CREATED             STATE               NAME                    NAMESPACE           "
    "ATTEMPT             RUNTIME\n"
    "b5703f93d448f       2 hours ago         Ready               doca-hbn-service-dpu1   default             "
    "0                   (default)\n"
)


def test_pods_json():
    (pod,) = _crictl.parse_pods_json(PODS_JSON)
    assert pod["name"] == "doca-hbn-service-dpu1"
    assert pod["state"] == "SANDBOX_READY"
    assert pod["created_ns"] == 1678127057000000000
    assert pod["annotations"]["bluefleet.io/config-hash"] == "0123456789abcdef"


def test_images_json():
    (img,) = _crictl.parse_images_json(IMAGES_JSON)
    assert img["repo_tags"] == ["nvcr.io/nvidia/doca/doca_hbn:2.4.1-doca2.9.1"]
    assert img["size"] == 1048576
    assert _crictl.image_tags([img]) == {img["id"]: img["repo_tags"]}


def test_empty_lists():
    assert _crictl.parse_ps_json('{\n  "containers": [\n  ]\n}\n') == []
    assert _crictl.parse_pods_json('{\n  "items": [\n  ]\n}\n') == []


def test_tables():
    (row,) = _crictl.parse_ps_table(PS_TABLE)
    assert row == {"container": "f11d4746b230d", "image": "05f1047133f98", "created": "About a minute ago",
                   "state": "Running", "name": "doca-hbn", "attempt": 0, "pod_id": "b5703f93d448f",
                   "pod": "doca-hbn-service-dpu1", "namespace": "default"}
    (pod,) = _crictl.parse_pods_table(PODS_TABLE)
    assert pod["state"] == "Ready" and pod["runtime"] == "(default)" and pod["created"] == "2 hours ago"


@pytest.mark.parametrize("text, reason", [
    ("not json", "not JSON"),
    ('{"containers": [{"id": "x", "metadata": {"name": "a"}, "state": "CONTAINER_WEIRD"}]}', "unknown container"),
    ('{"containers": [{"metadata": {"name": "a"}}]}', "without id"),
    ('{"other": []}', "expected an object"),
    ('{"containers": {"id": 1}}', "not a list"),
])
def test_ps_json_rejects(text, reason):
    with pytest.raises(ParseError, match=reason):
        _crictl.parse_ps_json(text)


def test_table_rejects_unknown_header_and_short_rows():
    with pytest.raises(ParseError, match="unknown header"):
        _crictl.parse_ps_table("ID   IMAGE\n")
    with pytest.raises(ParseError, match="columns"):
        _crictl.parse_ps_table(PS_TABLE.splitlines()[0] + "\nabc   def\n")


@given(st.text(max_size=300))
def test_parsers_raise_only_parse_error(text):
    for parser in (_crictl.parse_ps_json, _crictl.parse_pods_json, _crictl.parse_images_json,
                   _crictl.parse_ps_table, _crictl.parse_pods_table):
        try:
            parser(text)
        except ParseError:
            pass


# ---- catalogue ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("image, pin", [
    ("nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0", "1.16.5-doca2.6.0"),
    ("nvcr.io/nvidia/doca/doca_hbn:v2.4.1", "v2.4.1"),
    ("registry.local:5000/doca/doca_snap@sha256:" + "a" * 64, "sha256:" + "a" * 64),
])
def test_pinned_images(image, pin):
    assert _doca.check_pinned(image) == pin


@pytest.mark.parametrize("image, reason", [
    ("nvcr.io/nvidia/doca/doca_hbn:latest", "not pinned"),
    ("nvcr.io/nvidia/doca/doca_hbn", "has no tag"),
    ("nvcr.io/nvidia/doca/doca_hbn:stable", "not pinned"),
    ("nvcr.io/nvidia/doca/doca_hbn@sha256:abc", "64 lower-case hex"),
    ("", "empty"),
])
def test_unpinned_images(image, reason):
    with pytest.raises(_doca.DocaError, match=reason):
        _doca.check_pinned(image)


def test_unknown_service_names_the_known_ones():
    with pytest.raises(_doca.DocaError, match="unknown DOCA service 'dns'; known services: firefly, hbn, snap, "
                                              "telemetry"):
        _doca.service("dns")


def test_manifest_checks():
    with pytest.raises(_doca.DocaError, match="does not parse"):
        _doca.parse_manifest("kind: Pod\n  spec: [\n")
    with pytest.raises(_doca.DocaError, match="is not a Pod"):
        _doca.check_manifest(_doca.parse_manifest("kind: Deployment\n"), "hbn")
    with pytest.raises(_doca.DocaError, match="container x: image .* not pinned"):
        _doca.check_manifest({"kind": "Pod", "metadata": {"name": "p"},
                              "spec": {"containers": [{"name": "x", "image": "a/b:latest"}]}}, "hbn")


def test_config_hash_follows_content_and_names():
    one = _doca.config_hash({"a.ini": "x=1\n"})
    assert one == _doca.config_hash({"a.ini": "x=1\n"})
    assert one != _doca.config_hash({"a.ini": "x=2\n"})
    assert one != _doca.config_hash({"b.ini": "x=1\n"})
    with pytest.raises(_doca.DocaError, match="plain file name"):
        _doca.check_config_files({"../etc/passwd": ""})


def test_default_manifest_round_trips_with_annotation():
    doc = _doca.default_manifest("telemetry", "nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0",
                                 "/opt/mellanox/doca/services/telemetry/config", {"A": 1}, ["--x"])
    doc = _doca.finish_manifest(doc, "telemetry", "feedc0de")
    text = _doca.render_manifest(doc)
    back = _doca.check_manifest(_doca.parse_manifest(text), "telemetry")
    assert back["metadata"]["annotations"][_doca.CONFIG_HASH_ANNOTATION] == "feedc0de"
    assert back["metadata"]["labels"][_doca.SERVICE_LABEL] == "telemetry"
    assert back["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    assert text == _doca.render_manifest(_doca.parse_manifest(text))


@given(st.text(max_size=120))
def test_check_pinned_raises_only_doca_error(image):
    try:
        pin = _doca.check_pinned(image)
    except _doca.DocaError:
        return
    assert pin != "latest" and (pin.startswith("sha256:") or pin[0].isdigit() or pin[0] == "v")
