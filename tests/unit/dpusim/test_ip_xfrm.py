"""Twin ``ip xfrm state|policy``: the SAs strongSwan reports, in iproute2's layout, offloaded only when the card runs
IPsec full offload in switchdev and the CHILD_SA asked for hw_offload = packet. Transcripts are compared with the
corpus samples (ip-xfrm/mlx5-packet-offload-tunnel-strongswan-{state,policy}.txt, published with tabs expanded)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from dpusim import driver, linux_state
from dpusim.render import xfrm as render
from dpusim.tools import ip as ip_tool

# `swanctl --list-sas --raw` of strongSwan 6.0.1 (trixie, kernel-libipsec) in the bluefleet lab, 2026-12-02.
RAW = ("list-sa event {bf-dpu2 {uniqueid=1 version=2 state=ESTABLISHED local-host=192.168.61.1 local-port=4500 "
       "local-id=dpu1 remote-host=192.168.61.2 remote-port=4500 remote-id=dpu2 initiator=yes "
       "initiator-spi=fe0a28eeb892110b responder-spi=4eadf29d9ff47bbe encr-alg=AES_GCM_16 encr-keysize=256 "
       "prf-alg=PRF_HMAC_SHA2_256 dh-group=ECP_256 established=121 rekey-time=13796 child-sas {bf-dpu2-vtep-2 "
       "{name=bf-dpu2-vtep uniqueid=2 reqid=1 state=INSTALLED mode=TUNNEL protocol=ESP spi-in=b919072d "
       "spi-out=82c18df2 encr-alg=AES_GCM_16 encr-keysize=256 bytes-in=3258 packets-in=7 use-in=75 bytes-out=3258 "
       "packets-out=7 use-out=75 rekey-time=3170 life-time=3839 install-time=121 local-ts=[172.30.0.1/32] "
       "remote-ts=[172.30.0.2/32]}}}}\nlist-sas reply {}\n")

CONF = """connections {
    bf-dpu2 {
        local { auth = psk
                id = dpu1 }
        children {
            bf-dpu2-vtep {
                local_ts = 172.30.0.1/32
                hw_offload = %s   # BlueField full offload
            }
        }
    }
}
"""


def corpus_body(corpus: Path, name: str) -> list[str]:
    text = (corpus / "ip-xfrm" / name).read_text()
    return [line for line in text.split("# ---\n", 1)[1].splitlines() if line.strip()]


def test_state_record_matches_the_mlx5_packet_offload_sample(corpus_dir):
    sample = corpus_body(corpus_dir, "mlx5-packet-offload-tunnel-strongswan-state.txt")
    child = {"local": "192.169.101.2", "remote": "192.169.101.1", "reqid": "1", "mode": "TUNNEL",
             "spi-in": "0badf00d", "spi-out": "c88b7652", "encr-alg": "AES_GCM_16", "encr-keysize": "128",
             "packets-out": "0", "offload": True}
    out = render.state_records([child], "eth2").expandtabs(8).splitlines()
    out_sa = out[out.index("src 192.169.101.2 dst 192.169.101.1"):]
    assert out_sa[0] == sample[0]
    assert out_sa[1] == sample[1]  # proto esp spi 0xc88b7652 reqid 1 mode tunnel
    assert out_sa[-1] == sample[-1]  # crypto offload parameters: dev eth2 dir out mode packet
    aead = re.compile(r"^        aead rfc4106\(gcm\(aes\)\) 0x[0-9a-f]{40} 128$")  # 128-bit key + 32-bit salt
    assert aead.match(sample[3]) and aead.match(out_sa[3])
    assert out_sa[2].startswith("        replay-window 0 flag af-unspec")
    assert "crypto offload parameters: dev eth2 dir in mode packet" in "\n".join(out)


def test_policy_record_equals_the_mlx5_packet_offload_sample(corpus_dir):
    sample = corpus_body(corpus_dir, "mlx5-packet-offload-tunnel-strongswan-policy.txt")
    child = {"local": "192.169.101.2", "remote": "192.169.101.1", "reqid": "1", "mode": "TUNNEL",
             "spi-in": "0badf00d", "spi-out": "c88b7652", "local-ts": ["192.170.0.0/16"],
             "remote-ts": ["192.170.0.0/16"], "offload": True}
    out = render.policy_records([child], "eth2").expandtabs(8).splitlines()
    assert out[:5] == sample  # dir out, priority 383615 (strongSwan get_priority), tmpl, offload without dir
    assert "dir fwd" in out[11] and not any("offload" in line for line in out[11:])


def test_vici_raw_and_swanctl_conf_parsing(tmp_path):
    sas = ip_tool.parse_vici_raw(RAW)
    child = sas["list-sa event"]["bf-dpu2"]["child-sas"]["bf-dpu2-vtep-2"]
    assert child["spi-out"] == "82c18df2" and child["local-ts"] == ["172.30.0.1/32"]
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "bluefleet.conf").write_text(CONF % "packet")
    assert ip_tool.child_offload_modes(tmp_path) == {"bf-dpu2-vtep": "packet"}


@pytest.mark.parametrize("argv, what", [
    (["xfrm", "state"], "state"), (["x", "s"], "state"), (["xfrm", "state", "list"], "state"),
    (["-4", "xfrm", "policy", "show"], "policy"), (["x", "p"], "policy"),
    (["xfrm", "state", "flush"], None), (["-s", "xfrm", "state"], None), (["link", "show"], None), (["a"], None),
])
def test_which_calls_the_twin_answers(argv, what):
    assert ip_tool._xfrm_request(argv) == what


@pytest.fixture
def lab(twin, tmp_path, monkeypatch):
    """A DPU twin with a fake swanctl (printing RAW) first on PATH and its swanctl configuration."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (tmp_path / "raw.txt").write_text(RAW)
    script = bindir / "swanctl"
    script.write_text("#!/bin/sh\ncat %s\n" % (tmp_path / "raw.txt"))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % bindir)
    conf = tmp_path / "swanctl"
    (conf / "conf.d").mkdir(parents=True)
    (conf / "conf.d" / "bluefleet.conf").write_text(CONF % "packet")
    monkeypatch.setenv("DPUSIM_SWANCTL_DIR", str(conf))
    return twin("bluefield3", role="dpu"), conf


def _full_offload(t, on: bool):
    with t.edit() as node:
        path = driver.conf_path(node)
        text = path.read_text()
        path.write_text(re.sub(r'IPSEC_FULL_OFFLOAD="\w+"', 'IPSEC_FULL_OFFLOAD="%s"' % ("yes" if on else "no"), text))
        driver.restart(node)


def test_sas_listed_without_offload_until_the_card_runs_full_offload(lab):
    t, conf = lab
    rc, out, _ = t.run("ip", "xfrm", "state")
    assert rc == 0 and out.count("src ") == 2 and "offload" not in out
    assert "src 192.168.61.1 dst 192.168.61.2\n\tproto esp spi 0x82c18df2 reqid 1 mode tunnel\n" in out
    _full_offload(t, True)
    rc, out, _ = t.run("ip", "xfrm", "state")
    assert "\tcrypto offload parameters: dev p0 dir out mode packet\n" in out
    assert "\tcrypto offload parameters: dev p0 dir in mode packet\n" in out
    rc, out, _ = t.run("ip", "x", "p")
    assert out.count("crypto offload parameters: dev p0 mode packet") == 2  # out + in, not fwd


def test_no_offload_in_legacy_eswitch_or_without_hw_offload_packet(lab):
    t, conf = lab
    _full_offload(t, True)
    (conf / "conf.d" / "bluefleet.conf").write_text(CONF % "no")
    assert "offload" not in t.run("ip", "xfrm", "state")[1]
    (conf / "conf.d" / "bluefleet.conf").write_text(CONF % "packet")
    with t.edit() as node:
        for nd in linux_state.card_netdevs(node):
            if nd["kind"] == "uplink":
                linux_state.set_eswitch(node, nd["pci"], {"mode": "legacy"})
    assert "offload" not in t.run("ip", "xfrm", "state")[1]


def test_without_strongswan_no_sa_is_listed(twin, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no swanctl, no real ip
    t = twin("bluefield3", role="dpu")
    assert t.run("ip", "xfrm", "state") == (0, "", "")


# --- issue 18 (3): a strongSwan older than 5.9.10 discards a connection with hw_offload = packet -------------------
# Real charon 5.9.8 (Debian 12): "invalid value for: hw_offload, config discarded", swanctl --load-all exits 22
# (tests/realtools test_swanctl_configuration_is_loaded_by_a_real_charon). The twin claims the card OS's version.

def test_bluefield_images_claim_the_bfb_strongswan(lab):
    t, _ = lab
    with t.edit() as node:
        assert ip_tool.strongswan_version(node) == (5, 9, 10)


@pytest.mark.parametrize("version, hw_offload, listed", [
    ("5.9.8", "packet", 0), ("5.9.8", "crypto", 0), ("5.9.8", "no", 2), ("5.9.10", "packet", 2), ("6.0.1", "packet", 2),
])
def test_an_older_strongswan_lists_no_sa_of_a_packet_offload_connection(lab, monkeypatch, version, hw_offload,
                                                                        listed):
    t, conf = lab
    _full_offload(t, True)
    (conf / "conf.d" / "bluefleet.conf").write_text(CONF % hw_offload)
    with t.edit() as node:
        node.card().data["dpu_os"]["strongswan"] = version
    rc, out, _ = t.run("ip", "xfrm", "state")
    assert rc == 0 and out.count("src ") == listed
    assert ("mode packet" in out) == (listed and hw_offload == "packet")


def test_the_environment_overrides_the_claimed_version(lab, monkeypatch):
    t, _ = lab
    monkeypatch.setenv("DPUSIM_STRONGSWAN_VERSION", "5.9.5")
    assert t.run("ip", "xfrm", "state")[1] == ""
