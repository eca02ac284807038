"""The HTML report in a real browser: headless Chromium (Debian `chromium`, `scripts/ensure-chromium.sh`).

Chromium runs the page's own JavaScript: the filter applied from the URL's `#q=` / `#status=`, a cell
clicked from `#open=HOST|CHECK` (the same click handler a person triggers), then `--dump-dom` gives the
DOM after the script ran and `--screenshot` keeps a picture of the open evidence.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bluefleet import report

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = ROOT / "tests" / "output" / "report-browser"


def _fixture():
    spec = importlib.util.spec_from_file_location("report_fixture", ROOT / "tests/unit/bluefleet/report_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def chromium() -> str:
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "ensure-chromium.sh")], capture_output=True, text=True,
                          timeout=900, check=False)
    path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and path and shutil.which(path), (
        "headless Chromium is needed for this test and could not be installed: %s" % proc.stderr.strip())
    return path


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    fixture = _fixture()
    runs = tmp_path_factory.mktemp("runs")
    report.write_report(fixture.make_run_folder(runs / "20261202T100000Z"))
    folder = fixture.make_run_folder(runs / "20261202T110000Z", failing="node2-dpu",
                                     running={"node2-dpu": "32.41.1000"})
    return report.write_report(folder)["html"]


def browse(chromium: str, url: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
           "--virtual-time-budget=5000", *extra, url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, "chromium failed (rc=%s): %s" % (proc.returncode, proc.stderr[-2000:])
    return proc


def rows(dom: str) -> dict[str, bool]:
    """host -> visible, for the rows of the check matrix."""
    table = dom[dom.index('<table id="matrix"'):]
    table = table[:table.index("</table>")]
    return {m.group(1): "hidden" not in (m.group(2) or "")
            for m in re.finditer(r'<tr data-host="([^"]+)" data-role="[^"]*"(?: class="([^"]*)")?>', table)}


def test_matrix_shows_every_host_and_check(chromium, page):
    dom = browse(chromium, page.as_uri(), "--dump-dom").stdout
    assert rows(dom) == {"node1": True, "node2": True, "node1-dpu": True, "node2-dpu": True, "(fleet)": True}
    for check in ("playbook", "test_mst_shows_card", "test_pair_sees_one_card", "test_roce_trust[pf0hpf]"):
        assert re.search(r'<th class="check" data-check="%s"' % re.escape(check), dom), check
    assert 'id="shown">5 of 5 rows<' in dom  # written by the script: it ran
    assert re.search(r'<td class="cell s-failed" data-key="node2-dpu\|test_roce_trust\[pf0hpf\]"', dom)
    assert "node2-dpu: <b>test_roce_trust[pf0hpf]</b> passed" in dom  # drift, as rendered
    assert 'class="mismatch"' in dom  # flashed 32.43.1014, running 32.41.1000 on node2-dpu


def test_filter_hides_rows(chromium, page):
    dom = browse(chromium, page.as_uri() + "#q=node2", "--dump-dom").stdout
    assert rows(dom) == {"node1": False, "node2": True, "node1-dpu": False, "node2-dpu": True, "(fleet)": False}
    assert 'id="shown">2 of 5 rows<' in dom
    dom = browse(chromium, page.as_uri() + "#status=failed", "--dump-dom").stdout
    assert rows(dom) == {"node1": False, "node2": False, "node1-dpu": False, "node2-dpu": True, "(fleet)": False}
    dom = browse(chromium, page.as_uri() + "#q=roce", "--dump-dom").stdout  # a check name: columns narrow
    assert re.search(r'<th class="check hidden" data-check="test_mst_shows_card"', dom)
    assert not re.search(r'<th class="check hidden" data-check="test_roce_trust\[pf0hpf\]"', dom)


def test_cell_opens_its_evidence_and_screenshot_is_kept(chromium, page):
    url = page.as_uri() + "#open=node2-dpu|test_roce_trust[pf0hpf]"
    dom = browse(chromium, url, "--dump-dom").stdout
    dialog = re.search(r'<dialog id="evidence"([^>]*)>(.*?)</dialog>', dom, re.S)
    assert dialog and "open" in dialog.group(1), "the evidence dialog did not open"
    body = dialog.group(2)
    assert "$ mlnx_qos -i pf0hpf" in body and "(on node2-dpu, rc=0)" in body
    assert "Priority trust state: pcp" in body
    assert "pf0hpf trust is pcp, expected dscp" in body
    assert "fix: playbooks/fabric.yml" in body
    assert "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in body  # output shown as text
    assert _fixture().PSK not in dom
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOT_DIR / "evidence-open.png"
    shot.unlink(missing_ok=True)
    browse(chromium, url, "--screenshot=%s" % shot, "--window-size=1400,1000")
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    print("screenshot: %s" % shot)


class DevTools:
    """A minimal Chrome DevTools Protocol client (websocket-client): real mouse clicks and typed text."""

    def __init__(self, chromium: str, url: str, profile: Path):
        import socket
        import time

        import websocket

        with socket.socket() as s:  # a free port for the DevTools endpoint
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                                      "--hide-scrollbars", "--remote-debugging-port=%d" % port,
                                      "--remote-allow-origins=*", "--user-data-dir=%s" % profile,
                                      "--window-size=1400,1000", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        ws_url = None
        while ws_url is None:
            assert time.monotonic() < deadline and self.proc.poll() is None, "chromium's DevTools did not answer"
            try:
                import http.client

                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/json/list")
                pages = [t for t in json.loads(conn.getresponse().read()) if t.get("type") == "page"]
                conn.close()
                ws_url = pages[0]["webSocketDebuggerUrl"] if pages else None
            except (OSError, ValueError):
                pass
            if ws_url is None:
                time.sleep(0.3)
        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        deadline = time.monotonic() + 60
        loaded = "document.readyState === 'complete' && !!document.getElementById('shown').textContent"
        while not self.js(loaded):
            assert time.monotonic() < deadline, "the report did not load"
            time.sleep(0.2)

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg.get("result", {})

    def js(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        box = self.js("(() => {const e = document.querySelector(%s); e.scrollIntoView({block: 'center'});"
                      "const r = e.getBoundingClientRect();"
                      "return [r.x + r.width / 2, r.y + r.height / 2];})()" % json.dumps(selector))
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def close(self) -> None:
        self.ws.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


HIDDEN_ROWS = "[...document.querySelectorAll('#matrix tbody tr')].filter(r => r.classList.contains('hidden'))" \
              ".map(r => r.dataset.host)"


def test_click_and_type_like_a_person(chromium, page, tmp_path):
    """Through the DevTools protocol: type into the filter, pick a status, click a cell, read the dialog."""
    tools = DevTools(chromium, page.as_uri(), tmp_path / "profile")
    try:
        assert tools.js(HIDDEN_ROWS) == []
        tools.click("#q")
        tools.call("Input.insertText", text="dpu")
        assert tools.js("document.activeElement.id") == "q"
        assert sorted(tools.js(HIDDEN_ROWS)) == ["(fleet)", "node1", "node2"]
        assert tools.js("document.getElementById('shown').textContent") == "2 of 5 rows"
        tools.js("(() => {const q = document.getElementById('q'); q.select();})()")
        tools.call("Input.dispatchKeyEvent", type="keyDown", key="Backspace", code="Backspace",
                   windowsVirtualKeyCode=8)
        tools.call("Input.dispatchKeyEvent", type="keyUp", key="Backspace", code="Backspace",
                   windowsVirtualKeyCode=8)
        assert tools.js("document.getElementById('q').value") == ""
        assert tools.js(HIDDEN_ROWS) == []
        assert not tools.js("document.getElementById('evidence').open")
        tools.click('td.cell[data-key="node2-dpu|test_roce_trust[pf0hpf]"] button')
        assert tools.js("document.getElementById('evidence').open")
        text = tools.js("document.getElementById('evidence-body').innerText")
        assert "node2-dpu — test_roce_trust[pf0hpf]" in text
        assert "$ mlnx_qos -i pf0hpf" in text and "Priority trust state: pcp" in text
        assert "pf0hpf trust is pcp, expected dscp" in text
        shot = tools.call("Page.captureScreenshot", format="png")["data"]
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOT_DIR / "evidence-clicked.png"
        import base64

        path.write_bytes(base64.b64decode(shot))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        print("screenshot: %s" % path)
        tools.click("#close")
        assert not tools.js("document.getElementById('evidence').open")
    finally:
        tools.close()
