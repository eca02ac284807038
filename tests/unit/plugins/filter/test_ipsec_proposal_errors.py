"""plugins/filter/ipsec_proposal_errors.py: strongSwan's proposal grammar (docs.strongswan.org config/proposals)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.filter.ipsec_proposal_errors import proposal_errors

VALID_IKE = ["aes256gcm16-prfsha256-ecp256", "aes256gcm16-aes192gcm16-prfsha384-prfsha256-ecp384-modp3072",
             "aes256-sha256-modp3072", "aes128-sha1-modp2048,aes256gcm16-prfsha384-x25519", "default",
             "chacha20poly1305-prfsha256-curve25519", "aes256gcm16-prfsha384-ecp384-ke1_mlkem768"]
VALID_ESP = ["aes256gcm16", "aes256gcm16-aes128gcm16", "aes256-sha256", "aes128gcm16-esn", "aes256gcm16-ecp256",
             "default"]


@pytest.mark.parametrize("value", VALID_IKE)
def test_valid_ike(value):
    assert proposal_errors(value, "ike") == []


@pytest.mark.parametrize("value", VALID_ESP)
def test_valid_esp(value):
    assert proposal_errors(value, "esp") == []


@pytest.mark.parametrize("value, kind, words", [
    ("rot13-md4", "ike", ["unknown algorithm keyword(s) 'rot13', 'md4'"]),
    ("rot13-md4", "esp", ["unknown algorithm keyword(s) 'rot13', 'md4'"]),
    ("aes256gcm16-sha256-ecp256", "ike", ["mixes AEAD and classic"]),
    ("aes256gcm16-aes256-prfsha256-ecp256", "ike", ["mixes AEAD and classic"]),
    ("aes256gcm16-ecp256", "ike", ["needs a PRF"]),
    ("aes256gcm16-prfsha256", "ike", ["needs a key exchange method"]),
    ("aes256-modp2048", "ike", ["needs an integrity algorithm"]),
    ("sha256-ecp256", "ike", ["has no encryption algorithm"]),
    ("aes256gcm16-prfsha256", "esp", ["PRF belongs in the IKE proposals"]),
    ("aesgcm16", "esp", ["unknown algorithm keyword(s) 'aesgcm16'"]),
    ("", "esp", ["give strongSwan proposals"]),
    ("aes256gcm16,rot13", "esp", ["proposal 'rot13'"]),
])
def test_invalid_names_the_problem(value, kind, words):
    errors = proposal_errors(value, kind, "ipsec_x")
    assert errors, value
    text = "; ".join(errors)
    assert text.startswith("ipsec_x")
    for word in words:
        assert word in text, text


def test_unknown_kind():
    with pytest.raises(AnsibleFilterError):
        proposal_errors("aes256gcm16", "ah")
