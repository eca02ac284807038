# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``ip xfrm state`` / ``ip xfrm policy`` as iproute2 prints them, for the SAs strongSwan installed.

Layout (shared/corpus/ip-xfrm/FORMAT-from-source.md, iproute2 ip/ipxfrm.c; samples
mlx5-packet-offload-tunnel-strongswan-state.txt / -policy.txt): a record line ``src A dst B`` at column 0,
attribute lines indented by one TAB (the template lines of a policy by two), the anti-replay block's
sub-lines by TAB + space, and for a packet-offloaded SA ``crypto offload parameters: dev X dir in|out mode
packet`` (policies: ``dev X mode packet``, no ``dir``).

What the twin models rather than reads (no capture shows a libipsec SA's kernel view, there is none):

- the key: iproute2 prints the SA's key material; libipsec keeps it in userspace, so the twin prints a
  stand-in of the right length derived from the SPI (never the real key);
- replay window: 32 on inbound SAs, 0 on outbound (strongSwan's default ``replay_window``); flag
  ``af-unspec`` as in the mlx5 sample; the non-ESN anti-replay line carries the packet counters strongSwan
  reports (``seq`` inbound, ``oseq`` outbound);
- policy priority: strongSwan's kernel-netlink ``get_priority`` for a default-priority policy (base 200000,
  doubled, minus 512 per prefix bit, minus 1; the mlx5 policy sample's /16 -> /16 gives 383615);
- order: per CHILD_SA the inbound SA first, then the outbound one; policies out, in, fwd (fwd is never
  offloaded).
"""

from __future__ import annotations

import hashlib

# strongSwan algorithm names -> kernel (crypto API) names, as ip xfrm prints them.
AEAD = {"AES_GCM_16": ("rfc4106(gcm(aes))", 128), "AES_GCM_12": ("rfc4106(gcm(aes))", 96),
        "AES_GCM_8": ("rfc4106(gcm(aes))", 64), "CHACHA20_POLY1305": ("rfc7539esp(chacha20,poly1305)", 128)}
ENC = {"AES_CBC": "cbc(aes)", "AES_CTR": "rfc3686(ctr(aes))", "3DES_CBC": "cbc(des3_ede)"}
INTEG = {"HMAC_SHA2_256_128": ("hmac(sha256)", 256, 128), "HMAC_SHA2_384_192": ("hmac(sha384)", 384, 192),
         "HMAC_SHA2_512_256": ("hmac(sha512)", 512, 256), "HMAC_SHA1_96": ("hmac(sha1)", 160, 96)}
SALT_BYTES = {"rfc4106(gcm(aes))": 4, "rfc7539esp(chacha20,poly1305)": 4, "rfc3686(ctr(aes))": 4}
PRIO_BASE = 200000


def _key(seed: str, nbytes: int) -> str:
    out = b""
    counter = 0
    while len(out) < nbytes:
        out += hashlib.sha256(("%s/%d" % (seed, counter)).encode()).digest()
        counter += 1
    return "0x" + out[:nbytes].hex()


def _algorithms(child: dict, seed: str) -> list[str]:
    encr = child.get("encr-alg", "")
    keysize = int(child.get("encr-keysize") or 128)
    if encr in AEAD:
        name, icv = AEAD[encr]
        return ["aead %s %s %d" % (name, _key(seed + "/aead", keysize // 8 + SALT_BYTES.get(name, 0)), icv)]
    lines = []
    integ = child.get("integ-alg")
    if integ:
        name, key_bits, trunc = INTEG.get(integ, (integ.lower(), 256, 128))
        lines.append("auth-trunc %s %s %d" % (name, _key(seed + "/auth", key_bits // 8), trunc))
    name = ENC.get(encr, encr.lower() or "ecb(cipher_null)")
    lines.append("enc %s %s" % (name, _key(seed + "/enc", keysize // 8 + SALT_BYTES.get(name, 0))))
    return lines


def state_records(sas: list[dict], offload_dev: str | None) -> str:
    """``sas``: CHILD_SAs as ``{local, remote, reqid, mode, spi-in, spi-out, packets-in, packets-out, encr-alg,
    encr-keysize, integ-alg, offload}``; ``offload`` True puts the packet-offload line on both SAs."""
    out = []
    for child in sas:
        mode = child.get("mode", "TUNNEL").lower()
        reqid = int(child.get("reqid") or 0)
        for direction in ("in", "out"):
            spi = child["spi-" + direction]
            src, dst = (child["remote"], child["local"]) if direction == "in" else (child["local"], child["remote"])
            out.append("src %s dst %s" % (src, dst))
            out.append("\tproto esp spi 0x%s reqid %d mode %s" % (spi.lower().zfill(8), reqid, mode))
            out.append("\treplay-window %d flag af-unspec" % (32 if direction == "in" else 0))
            out.extend("\t" + line for line in _algorithms(child, "%s/%s" % (spi, reqid)))
            packets = int(child.get("packets-" + direction) or 0)
            seq, oseq = (packets, 0) if direction == "in" else (0, packets)
            bitmap = (1 << min(packets, 32)) - 1 if direction == "in" else 0  # in-order packets seen
            out.append("\tanti-replay context: seq 0x%x, oseq 0x%x, bitmap 0x%08x" % (seq, oseq, bitmap))
            if child.get("offload") and offload_dev:
                out.append("\tcrypto offload parameters: dev %s dir %s mode packet" % (offload_dev, direction))
    return "".join(line + "\n" for line in out)


def _priority(prefix_s: int, prefix_d: int) -> int:
    return PRIO_BASE + PRIO_BASE - (prefix_s + prefix_d) * 512 - 1


def policy_records(sas: list[dict], offload_dev: str | None) -> str:
    out = []
    for child in sas:
        mode = child.get("mode", "TUNNEL").lower()
        reqid = int(child.get("reqid") or 0)
        for local_ts in child.get("local-ts", []):
            for remote_ts in child.get("remote-ts", []):
                for direction in ("out", "in", "fwd"):
                    src_ts, dst_ts = (local_ts, remote_ts) if direction == "out" else (remote_ts, local_ts)
                    tsrc, tdst = ((child["local"], child["remote"]) if direction == "out"
                                  else (child["remote"], child["local"]))
                    plen_s = int(src_ts.split("/")[1]) if "/" in src_ts else 32
                    plen_d = int(dst_ts.split("/")[1]) if "/" in dst_ts else 32
                    out.append("src %s dst %s" % (src_ts, dst_ts))
                    out.append("\tdir %s priority %d ptype main" % (direction, _priority(plen_s, plen_d)))
                    out.append("\ttmpl src %s dst %s" % (tsrc, tdst))
                    spi = child["spi-out"] if direction == "out" else child["spi-in"]
                    out.append("\t\tproto esp spi 0x%s reqid %d mode %s" % (spi.lower().zfill(8), reqid, mode))
                    if child.get("offload") and offload_dev and direction != "fwd":
                        out.append("\tcrypto offload parameters: dev %s mode packet" % offload_dev)
    return "".join(line + "\n" for line in out)
