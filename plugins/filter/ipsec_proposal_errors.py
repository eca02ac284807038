# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.ipsec_proposal_errors``: what is wrong with a swanctl.conf ``proposals`` or ``esp_proposals``.

strongSwan's proposal grammar (https://docs.strongswan.org/docs/latest/config/proposals.html, and the keyword
table ``src/libstrongswan/crypto/proposal/proposal_keywords_static.txt`` of strongswan/strongswan): proposals are
separated by commas, each is a list of algorithm keywords separated by dashes; ``default`` stands for the built-in
proposals. Rules checked here, the ones strongSwan refuses a proposal for: every keyword is known; a proposal has
an encryption algorithm; AEAD (GCM, CCM, ChaCha20-Poly1305, GMAC) and classic algorithms are not mixed in one
proposal; an IKE proposal has a key exchange method, and a PRF or an integrity algorithm to derive it from; a classic
(non-AEAD) IKE proposal has an integrity algorithm. The result is a list of messages, empty when all is well.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_SIZE = r"(128|192|256)"
_ICV = r"(8|64|12|96|16|128)"
AEAD = re.compile(r"^(aes%s(gcm|ccm)%s?|aes%sgmac|camellia%sccm%s|chacha20poly1305(compat)?)$"
                  % (_SIZE, _ICV, _SIZE, _SIZE, _ICV))
CLASSIC = re.compile(r"^(null|des|3des|cast128|aes(%s(ctr)?)?|camellia(%s(ctr)?)?|blowfish%s?|serpent%s?|twofish%s?)$"
                     % (_SIZE, _SIZE, _SIZE, _SIZE, _SIZE))
INTEGRITY = re.compile(r"^(sha|sha1|sha1_160|sha256|sha2_256|sha256_96|sha2_256_96|sha384|sha2_384|sha512|sha2_512"
                       r"|md5|md5_128|aesxcbc|camelliaxcbc|aescmac)$")
PRF = re.compile(r"^prf(sha1|sha256|sha384|sha512|md5|aesxcbc|camelliaxcbc|aescmac)$")
KE = re.compile(r"^(ke[1-7]_)?(none|modpnone|modpnull|modp(768|1024|1536|2048|3072|4096|6144|8192|1024s160|2048s224"
                r"|2048s256)|ecp(192|224|256|384|521|224bp|256bp|384bp|512bp)|curve25519|x25519|curve448|x448"
                r"|mlkem(512|768|1024))$")
ESN = re.compile(r"^(no)?esn$")
KINDS = ("ike", "esp")


def _kind(word):
    for name, pattern in (("aead", AEAD), ("classic", CLASSIC), ("integrity", INTEGRITY), ("prf", PRF),
                          ("ke", KE), ("esn", ESN)):
        if pattern.match(word):
            return name
    return None


def proposal_errors(proposals, kind="ike", name="ipsec_proposals"):
    """Messages naming ``name`` and each problem of the comma-separated ``proposals``; [] when valid."""
    if kind not in KINDS:
        raise AnsibleFilterError("ipsec_proposal_errors: kind must be one of %s, got %r" % (", ".join(KINDS), kind))
    if not isinstance(proposals, str) or not proposals.strip():
        return ["%s=%r: give strongSwan proposals such as %s" % (
            name, proposals, "aes256gcm16-prfsha256-ecp256" if kind == "ike" else "aes256gcm16")]
    errors = []
    for proposal in (p.strip() for p in proposals.split(",")):
        if proposal == "default":
            continue
        words = proposal.lower().split("-")
        kinds = [_kind(w) for w in words]
        unknown = [w for w, k in zip(words, kinds, strict=True) if k is None]
        where = "%s: proposal %r" % (name, proposal)
        if unknown:
            errors.append("%s: unknown algorithm keyword(s) %s (strongSwan keywords: e.g. aes256gcm16, aes256, "
                          "sha256, prfsha384, ecp384, modp3072, x25519)" % (where, ", ".join(repr(w) for w in unknown)))
            continue
        if "aead" not in kinds and "classic" not in kinds:
            errors.append("%s has no encryption algorithm (e.g. aes256gcm16)" % where)
            continue
        if "aead" in kinds and ("classic" in kinds or "integrity" in kinds):
            errors.append("%s mixes AEAD and classic encryption/integrity algorithms; strongSwan needs them in "
                          "separate proposals (e.g. aes256gcm16,aes256-sha256)" % where)
            continue
        if kind == "ike":
            if "classic" in kinds and "integrity" not in kinds:
                errors.append("%s: a classic IKE cipher needs an integrity algorithm (e.g. -sha256)" % where)
            elif "prf" not in kinds and "integrity" not in kinds:
                errors.append("%s: an AEAD IKE proposal needs a PRF (e.g. -prfsha256)" % where)
            if "ke" not in kinds:
                errors.append("%s: an IKE proposal needs a key exchange method (e.g. -ecp256)" % where)
        elif "prf" in kinds:
            errors.append("%s: a PRF belongs in the IKE proposals (ipsec_proposals), not in ESP ones" % where)
    return errors


class FilterModule:
    def filters(self):
        return {"ipsec_proposal_errors": proposal_errors}
