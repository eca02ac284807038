"""Render a report model (``report_model.build_model``) as one self-contained HTML page and as Markdown.

The page needs nothing from the network: CSS and JavaScript are inline, the evidence of every
cell is embedded as JSON. Deep links: ``report.html#q=TEXT&status=failed&open=HOST|CHECK``
apply the filter and open a cell's evidence on load (what a person would type and click); ``#page=N`` shows the
N-th page of 100 rows of the check matrix (a 1,000-host run stays quick to filter and scroll).
"""

from __future__ import annotations

import html
import json

from bluefleet import report_dividend

SYMBOL = {"passed": "✓", "changed": "~", "failed": "✗", "error": "!", "unreachable": "⊘", "skipped": "–",
          "not_applicable": "N/A", "absent": ""}
LABEL = {"not_applicable": "N/A"}  # how a status is written for people (counts, legend, Markdown)

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d2330}
h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.4em 0 .4em}
.meta{color:#555}.meta b{color:#1d2330}
table{border-collapse:collapse;margin:.3em 0}th,td{border:1px solid #ccd;padding:3px 6px;text-align:center}
th.host,td.host{text-align:left;white-space:nowrap}th.check{writing-mode:vertical-rl;transform:rotate(180deg);
font-weight:normal;height:16em;max-height:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}th.stage{background:#eef}
td.cell button{border:0;background:none;font:inherit;cursor:pointer;width:100%;min-width:1.6em}
.s-passed{background:#d4f4d4}.s-changed{background:#fff1b8}.s-failed{background:#f8c4c4}
.s-error{background:#f3a0a0}.s-unreachable{background:#cfc8e8}.s-skipped{background:#eee}.s-absent{background:#fafafa}
.s-not_applicable{background:#d9d9d9;color:#555;font-size:.8em}
.mismatch{background:#ffd27f;font-weight:bold}.hidden{display:none}
#controls{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ccd}
#controls input{width:22em;padding:3px}.totals span{margin-right:1em}
dialog{max-width:90vw;max-height:85vh;overflow:auto}pre{background:#f4f4f8;padding:.5em;white-space:pre-wrap;
max-height:24em;overflow:auto}.legend span{padding:1px 6px;margin-right:.4em}
"""

JS = """
(function(){
const data=JSON.parse(document.getElementById('evidence-data').textContent);
const q=document.getElementById('q'), st=document.getElementById('status');
const rows=[...document.querySelectorAll('#matrix tbody tr')];
const heads=[...document.querySelectorAll('#matrix th.check')];
function apply(){
  const t=q.value.trim().toLowerCase(), s=st.value;
  const colMatch=t?heads.filter(h=>h.dataset.check.toLowerCase().includes(t)):[];
  const showCol={};
  heads.forEach(h=>{const on=!t||!colMatch.length||colMatch.includes(h);showCol[h.dataset.check]=on;
    h.classList.toggle('hidden',!on);});
  document.querySelectorAll('#matrix td.cell').forEach(c=>c.classList.toggle('hidden',!showCol[c.dataset.check]));
  let shown=0; kept=[];
  rows.forEach(r=>{
    const host=r.dataset.host.toLowerCase();
    let on=!t||host.includes(t)||colMatch.length>0;
    if(on&&s!=='all'){on=[...r.querySelectorAll('td.cell')].some(c=>showCol[c.dataset.check]&&c.dataset.status===s);}
    r.classList.toggle('hidden',!on); if(on){shown++;kept.push(r);}
  });
  document.getElementById('shown').textContent=shown+' of '+rows.length+' rows';
  paginate();
}
// Paging: of the rows the filter keeps, PAGE at a time (a 1,000-host matrix stays quick to scroll and filter).
const PAGE=100; let page=0, kept=[];
function paginate(){
  const pages=Math.max(1,Math.ceil(kept.length/PAGE)); page=Math.min(Math.max(page,0),pages-1);
  kept.forEach((r,i)=>r.classList.toggle('hidden',i<page*PAGE||i>=(page+1)*PAGE));
  document.getElementById('page').textContent='page '+(page+1)+' of '+pages;
  document.getElementById('prev').disabled=page===0; document.getElementById('next').disabled=page>=pages-1;
}
function turn(by){page+=by;paginate();}
function open(key){
  const e=data[key]; if(!e)return;
  const d=document.getElementById('evidence');
  const body=document.getElementById('evidence-body'); body.textContent='';
  const add=(tag,text,cls)=>{const n=document.createElement(tag);n.textContent=text;if(cls)n.className=cls;
    body.appendChild(n);return n;};
  add('h3',e.host+' \u2014 '+e.check);
  add('p','status: '+e.status+' \u00b7 stage: '+e.stage+' \u00b7 fix: '+e.fix,'s-'+e.status);
  if(e.message){add('h4','what the check found');add('pre',e.message,'message');}
  if(!e.commands.length){add('p','no command recorded for this cell');}
  e.commands.forEach(c=>{add('h4','$ '+c.command+'   (on '+c.host+', rc='+c.rc+')','command');
    add('pre',(c.stdout||'')+(c.stderr?'\\n[stderr]\\n'+c.stderr:''),'output');});
  d.dataset.key=key; if(!d.open)d.showModal();
}
document.querySelectorAll('#matrix td.cell button').forEach(b=>b.addEventListener('click',
  ()=>open(b.parentElement.dataset.key)));
document.getElementById('close').addEventListener('click',()=>document.getElementById('evidence').close());
q.addEventListener('input',()=>{page=0;apply();}); st.addEventListener('change',()=>{page=0;apply();});
document.getElementById('prev').addEventListener('click',()=>turn(-1));
document.getElementById('next').addEventListener('click',()=>turn(1));
const h=new URLSearchParams(location.hash.slice(1));
if(h.get('q'))q.value=h.get('q'); if(h.get('status'))st.value=h.get('status');
if(h.get('page'))page=(parseInt(h.get('page'),10)||1)-1;
apply();
if(h.get('open')){const c=[...document.querySelectorAll('#matrix td.cell')].find(x=>x.dataset.key===h.get('open'));
  if(c)c.querySelector('button').click();}
})();
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def cell_key(host: str, check: str) -> str:
    return "%s|%s" % (host, check)


def _script_json(value: object) -> str:
    # Inside <script>, "</" would end the element: escape it (and <!-- for old parsers).
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(model: dict) -> str:
    run = model["run"]
    checks = model["checks"]
    by_stage: list[tuple[str, list[dict]]] = []
    for check in checks:
        if not by_stage or by_stage[-1][0] != check["stage"]:
            by_stage.append((check["stage"], []))
        by_stage[-1][1].append(check)
    evidence = {}
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>bluefleet report %s</title>" % _e(run.get("started") or model["run_dir"]),
           "<style>%s</style></head><body>" % CSS]
    status = run.get("status") or "unknown"
    out.append("<h1>bluefleet fleet report</h1>")
    out.append('<p class="meta">run <b>%s</b> &middot; stage <b>%s</b> &middot; inventory <b>%s</b>%s%s'
               " &middot; playbook <b>%s</b> &middot; exit code <b id=\"exit-code\">%s</b> &middot; %s s</p>" % (
                   _e(run.get("started")), _e(run.get("stage")), _e(run.get("inventory")),
                   " &middot; limit <b>%s</b>" % _e(run["limit"]) if run.get("limit") else "",
                   " &middot; <b>check mode</b>" if run.get("check") else "",
                   _e(status), _e(run.get("exit_code")), _e(run.get("seconds"))))
    totals = model["totals"]
    out.append('<p class="totals" id="totals">' + "".join(
        '<span class="s-%s">%s %s</span>' % (_e(k), _e(v), _e(LABEL.get(k, k))) for k, v in sorted(totals.items())) +
        ("" if model["suite"]["ran"] else "<span>%s</span>" % (
            "the conformance suite did not run" if run.get("validate_rc") is None else
            "the conformance suite stopped before its checks (rc=%s): see validate.log" % _e(run["validate_rc"])))
        + "</p>")

    # drift
    d = model["drift"]
    out.append('<h2 id="drift">Drift since the previous run</h2>')
    if not d.get("previous"):
        out.append("<p>no previous run to compare with</p>")
    else:
        out.append("<p>compared with <code>%s</code></p>" % _e(d["previous"]))
        items = ["<li>%s: <b>%s</b> %s &rarr; <span class=\"s-%s\">%s</span></li>" % (
            _e(c["host"]), _e(c["check"]), _e(c["before"]), _e(c["after"]), _e(c["after"])) for c in d["cells"]]
        items += ["<li>%s: %s %s &rarr; <span class=\"mismatch\">%s</span></li>" % (
            _e(v["host"]), _e(v["column"]), _e(v["before"]), _e(v["after"])) for v in d["versions"]]
        items += ["<li>host added: %s</li>" % _e(h) for h in d["hosts_added"]]
        items += ["<li>host removed: %s</li>" % _e(h) for h in d["hosts_removed"]]
        out.append('<ul id="drift-list">%s</ul>' % "".join(items) if items else "<p>nothing changed</p>")

    out.append(report_dividend.html(model.get("dividend"), _e))

    # versions
    versions = model["versions"]
    out.append('<h2>Versions</h2><table id="versions"><thead><tr><th class="host">host</th>%s</tr></thead><tbody>'
               % "".join("<th>%s</th>" % _e(c) for c in versions["columns"]))
    for host, row in versions["rows"].items():
        tds = []
        for column in versions["columns"]:
            cell = row.get(column)
            if cell is None:
                tds.append("<td></td>")
            else:
                cls = ' class="mismatch" title="%s"' % _e(cell["why"]) if cell["mismatch"] else ""
                tds.append("<td%s>%s</td>" % (cls, _e(cell["value"] if cell["value"] is not None else "?")))
        out.append('<tr data-host="%s"><td class="host">%s</td>%s</tr>' % (_e(host), _e(host), "".join(tds)))
    out.append("</tbody></table>")
    if not versions["rows"]:
        out.append("<p>no facts were gathered</p>")

    # matrix
    out.append('<h2>Checks</h2><div id="controls"><input id="q" type="search" '
               'placeholder="filter: host, check or stage" aria-label="filter"> <select id="status" '
               'aria-label="status"><option value="all">any status</option>%s</select> <span id="shown"></span>'
               ' <button id="prev" type="button">&lsaquo; prev</button> <span id="page"></span>'
               ' <button id="next" type="button">next &rsaquo;</button>'
               ' <span class="legend">%s</span></div>' % (
                   "".join('<option value="%s">%s</option>' % (s, LABEL.get(s, s)) for s in SYMBOL if s != "absent"),
                   "".join('<span class="s-%s">%s %s</span>' % (s, SYMBOL[s], LABEL.get(s, s))
                           for s in SYMBOL if s != "absent")))
    out.append('<table id="matrix"><thead><tr><th class="host" rowspan="2">host</th>')
    out.extend('<th class="stage" colspan="%d">%s</th>' % (len(cs), _e(stage)) for stage, cs in by_stage)
    out.append("</tr><tr>")
    out.extend('<th class="check" data-check="%s" title="%s">%s</th>' % (
        _e(c["id"]), _e(c["stage"] + ": " + c["id"]), _e(c["id"])) for c in checks)
    out.append("</tr></thead><tbody>")
    for host in model["hosts"]:
        name = host["name"]
        row = model["cells"].get(name, {})
        tds = []
        for check in checks:
            cell = row.get(check["id"])
            key = cell_key(name, check["id"])
            status_ = cell["status"] if cell else "absent"
            if cell:
                evidence[key] = {"host": name, "check": check["id"], "status": status_, "stage": check["stage"],
                                 "fix": check["fix"], "message": cell["message"], "commands": cell["commands"]}
                title = status_
                if status_ == "not_applicable":  # grey, with the reason on hover and in the evidence dialog
                    title = "N/A: " + cell["message"].removeprefix("not applicable: ")
                inner = '<button type="button" title="%s">%s</button>' % (_e(title), SYMBOL[status_])
            else:
                inner = ""
            tds.append('<td class="cell s-%s" data-key="%s" data-check="%s" data-status="%s">%s</td>' % (
                status_, _e(key), _e(check["id"]), status_, inner))
        out.append('<tr data-host="%s" data-role="%s"><td class="host">%s <small>%s</small></td>%s</tr>' % (
            _e(name), _e(host["role"]), _e(name), _e(host["role"]), "".join(tds)))
    out.append("</tbody></table>")
    if model["suite"]["not_applicable"]:
        out.append("<p>checks with no applicable host in this inventory: %s</p>" % _e(
            ", ".join(model["suite"]["not_applicable"])))
    out.append('<dialog id="evidence"><button id="close" type="button">close</button>'
               '<div id="evidence-body"></div></dialog>')
    out.append('<script type="application/json" id="evidence-data">%s</script>' % _script_json(evidence))
    out.append("<script>%s</script></body></html>" % JS)
    return "\n".join(out) + "\n"


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(model: dict, html_path: str | None = None) -> str:
    run = model["run"]
    totals = model["totals"]
    lines = ["## bluefleet run: %s" % ("ok" if run.get("exit_code") == 0 else "exit code %s" % run.get("exit_code")),
             "",
             "stage `%s`, inventory `%s`%s, playbook %s, %s s" % (
                 run.get("stage"), run.get("inventory"), ", check mode" if run.get("check") else "",
                 run.get("status"), run.get("seconds")),
             "",
             "checks: " + (", ".join("%s %s" % (v, LABEL.get(k, k)) for k, v in sorted(totals.items())) or "none")
             + ("" if model["suite"]["ran"] or run.get("validate_rc") is None else
                " (the conformance suite stopped before its checks, rc=%s: see validate.log)" % run["validate_rc"]),
             ""]
    bad = []
    for host in model["hosts"]:
        for check, cell in sorted(model["cells"].get(host["name"], {}).items()):
            if cell["status"] in ("failed", "error", "unreachable"):
                first = (cell["message"] or "").strip().splitlines()
                bad.append("| %s | %s | %s | %s |" % (_md(host["name"]), _md(check), cell["status"],
                                                     _md(first[0] if first else "")))
    if bad:
        lines += ["### Failing", "", "| host | check | status | message |", "|---|---|---|---|", *bad, ""]
    na = model.get("not_applicable") or []
    if na:
        lines += ["### Not applicable (N/A, not passed)", "", "| host | check | why |", "|---|---|---|"]
        lines += ["| %s | %s | %s |" % (_md(n["host"]), _md(n["check"]), _md(n["reason"])) for n in na]
        lines.append("")
    mism = [(h, c, v) for h, row in model["versions"]["rows"].items() for c, v in row.items() if v["mismatch"]]
    if mism:
        lines += ["### Version mismatches", "", "| host | what | value | why |", "|---|---|---|---|"]
        lines += ["| %s | %s | %s | %s |" % (_md(h), _md(c), _md(v["value"]), _md(v["why"])) for h, c, v in mism]
        lines.append("")
    d = model["drift"]
    if d.get("previous"):
        lines += ["### Drift since %s" % d["previous"], ""]
        changes = ["- %s `%s`: %s -> %s" % (c["host"], c["check"], c["before"], c["after"]) for c in d["cells"]]
        changes += ["- %s %s: %s -> %s" % (v["host"], v["column"], v["before"], v["after"]) for v in d["versions"]]
        changes += ["- host added: %s" % h for h in d["hosts_added"]]
        changes += ["- host removed: %s" % h for h in d["hosts_removed"]]
        lines += (changes or ["nothing changed"]) + [""]
    lines += report_dividend.markdown(model.get("dividend"))
    if html_path:
        lines += ["report: %s" % html_path, ""]
    return "\n".join(lines)
