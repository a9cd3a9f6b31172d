"""A run as one offline HTML file: its player bundle and the Vega JavaScript inside, stepping with the page's keys.

The file fetches nothing: the bundle (viz.player_bundle, gzipped and base64-encoded, unpacked by the browser's
DecompressionStream) and the vendored Vega, Vega-Lite and vega-embed builds (assets/js/, README there) are written into
it, so it opens from a USB stick on a projector's laptop. The moment shown is kept in the address's fragment
(#round=3&phase=judge&pos=2, the round page's own query), so a copied address opens the same moment.
"""

from __future__ import annotations

import base64
import gzip
import html
import re
from pathlib import Path

from specviz.viz.player_bundle import bundle_json, markdown_html

JS_DIR = Path(__file__).resolve().parents[2] / "assets" / "js"
LIBRARIES = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")  # in load order: vega-embed needs both


def library_js() -> str:
    """The vendored builds, one after another, without their source-map comments (no map is shipped)."""
    parts = []
    for name in LIBRARIES:
        text = (JS_DIR / name).read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if not line.startswith("//# sourceMappingURL=")]
        parts.append("\n".join(lines))
    return "\n;\n".join(parts)


def packed(bundle: dict) -> str:
    """The bundle's JSON gzipped (no timestamp: the same run gives the same file) and base64-encoded."""
    return base64.b64encode(gzip.compress(bundle_json(bundle).encode("utf-8"), mtime=0)).decode("ascii")


def export_html(bundle: dict, libraries: str | None = None) -> str:
    """The whole offline file for a bundle (libraries: the JavaScript to inline; default the vendored builds)."""
    js = library_js() if libraries is None else libraries
    if "</script" in js.lower():
        raise ValueError("the JavaScript to inline contains '</script', which would end its script element early")
    parts = {
        "TITLE": html.escape(bundle["title"]),
        "ABOUT": markdown_html(bundle["about"]),
        "CSS": CSS,
        "BUNDLE": packed(bundle),
        "PLAYER": PLAYER_JS,
        "LIBRARIES": js,
    }
    return re.sub(r"%([A-Z]+)%", lambda m: parts[m.group(1)], PAGE)  # one pass: nothing inserted is read again


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#111;background:#fff}
main{max-width:1200px;margin:0 auto;padding:1rem 1.5rem 4rem}
h1{font-size:1.6rem;margin:.2rem 0}
.about{background:#eef4fb;border-radius:.4rem;padding:.5rem .8rem;margin:.5rem 0}
.controls{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin:.6rem 0;position:sticky;top:0;
  background:#fff;padding:.4rem 0;z-index:2;border-bottom:1px solid #ddd}
.controls button{font:inherit;padding:.3rem .7rem;border:1px solid #999;border-radius:.4rem;background:#fff;
  cursor:pointer}
.controls button.primary{background:#ff4b4b;color:#fff;border-color:#ff4b4b}
.controls button:disabled{opacity:.4;cursor:default}
.controls label{margin-left:.6rem;user-select:none}
.keys,.caption,#where{color:#555;font-size:.9rem}
#where{margin:.5rem 0}
.row{display:flex;gap:1.2rem;align-items:flex-start;margin:.3rem 0}
.col{min-width:0}
.chart{width:100%}
.metrics{display:flex;gap:1rem}
.metric{flex:1}
.metric-label{font-size:.9rem;color:#555}
.metric-value{font-size:1.8rem}
hr{border:0;border-top:1px solid #ddd;margin:1rem 0}
#problem{color:#a00;font-weight:bold}
body.lecture p,body.lecture .caption,body.lecture .controls,body.lecture .metric-label,body.lecture #where
  {font-size:1.3rem}
body.lecture h1{font-size:2.6rem} body.lecture h3{font-size:2rem}
body.lecture .metric-value{font-size:2.6rem}
body.lecture .specviz-text{font-size:1.6rem;border:2px solid #333;border-radius:.4rem;padding:.6rem .8rem}
body.lecture .specviz-text .tok{text-decoration-thickness:4px !important;text-underline-offset:6px !important;
  font-weight:600}
body.lecture .chip{font-size:1.6rem;border-width:3px}
body.lecture .flow-step{font-size:1.4rem} body.lecture .flow-key{font-size:1.15rem}
body.lecture .phase-strip .phase{font-size:1.3rem}
body.focus .panel p,body.focus .panel li{font-size:1.2rem;line-height:1.5}
body.lecture.focus .panel p,body.lecture.focus .panel li{font-size:1.5rem}
"""

PLAYER_JS = r"""
(async () => {
  const $ = (id) => document.getElementById(id);
  let doc;
  try {
    const raw = $("bundle").textContent.trim();
    const bytes = Uint8Array.from(atob(raw), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    doc = JSON.parse(await new Response(stream).text());
  } catch (e) {
    $("problem").textContent = "This browser cannot unpack the run (" + e + "): open the file in a current " +
      "Chromium, Firefox or Safari.";
    return;
  }
  if (doc.format !== "specviz.player" || doc.version !== 1) {
    $("problem").textContent = "This file holds a " + doc.format + " document of version " + doc.version +
      ", which this player does not read.";
    return;
  }
  const steps = doc.steps;
  let at = 0, lecture = false, focus = false, timer = null;
  const viewName = () => (focus ? "focus" : "full") + (lecture ? "+lecture" : "");
  const chartSpec = (i) => {
    const entry = doc.charts[i];
    const spec = Object.assign({}, entry.spec);
    if (entry.data.length) {
      spec.datasets = {};
      for (const name of entry.data) spec.datasets[name] = doc.datasets[name];
    }
    if (!("width" in spec)) { spec.width = "container"; spec.autosize = {type: "fit-x", contains: "padding"}; }
    return spec;
  };
  const draw = (block, into) => {
    const [kind, i] = block;
    const div = document.createElement("div");
    div.className = "block block-" + kind;
    if (kind === "chart") {
      div.classList.add("chart");
      into.appendChild(div);
      vegaEmbed(div, chartSpec(i), {actions: false, renderer: "svg"}).catch((e) => { div.textContent = String(e); });
    } else {
      div.innerHTML = doc.html[i];
      into.appendChild(div);
    }
  };
  const show = () => {
    const step = steps[at];
    $("where").textContent = step.title;
    const stage = $("stage");
    stage.replaceChildren();
    for (const row of step.views[viewName()]) {
      const line = document.createElement("div");
      line.className = "row " + row.section;
      for (const column of row.columns) {
        const col = document.createElement("div");
        col.className = "col " + column.place;
        col.style.flex = String(column.width);
        for (const block of column.blocks) draw(block, col);
        line.appendChild(col);
      }
      stage.appendChild(line);
    }
    const nav = step.nav;
    $("previous").disabled = at === 0;
    $("next").disabled = $("next_round").disabled = nav.next === at;
    $("next_rejection").disabled = nav.next_rejection === null;
    $("next_bonus").disabled = nav.next_bonus === null;
    $("play").textContent = timer ? "⏸ Pause" : "▶ Play";
    document.body.classList.toggle("lecture", lecture);
    document.body.classList.toggle("focus", focus);
    $("lecture").checked = lecture;
    $("focus").checked = focus;
    const hash = "#" + step.query;
    if (location.hash !== hash) history.replaceState(null, "", hash);
  };
  const go = (target) => { if (target !== null && target !== undefined && target !== at) { at = target; show(); } };
  const move = (key) => go(steps[at].nav[key]);
  const play = () => {
    if (timer) { clearInterval(timer); timer = null; show(); return; }
    timer = setInterval(() => {
      if (steps[at].nav.next === at) { clearInterval(timer); timer = null; show(); } else move("next");
    }, 1000);
    show();
  };
  const fromHash = () => {
    const query = location.hash.replace(/^#/, "");
    if (!query) return 0;
    const exact = steps.findIndex((s) => s.query === query);
    if (exact >= 0) return exact;
    const p = new URLSearchParams(query);
    const round = parseInt(p.get("round") || "1", 10) - 1;
    const inRound = steps.map((s, i) => [s, i]).filter(([s]) => s.round === round);
    if (!inRound.length) return 0;
    const phase = inRound.filter(([s]) => s.phase === p.get("phase"));
    return (phase.length ? phase[phase.length - 1] : inRound[0])[1];
  };
  const keys = {
    ArrowRight: "next", PageDown: "next", " ": "next", ArrowLeft: "previous", PageUp: "previous",
    n: "next_round", N: "next_round", j: "next_rejection", J: "next_rejection", b: "next_bonus", B: "next_bonus",
    Home: "first", End: "last",
  };
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)
        && t.type !== "checkbox"))) return;
    if (keys[e.key]) { e.preventDefault(); move(keys[e.key]); }
    else if (e.key === "p" || e.key === "P") { e.preventDefault(); play(); }
    else if (e.key === "l" || e.key === "L") { lecture = !lecture; show(); }
    else if (e.key === "f" || e.key === "F") { focus = !focus; show(); }
  });
  for (const key of ["previous", "next", "next_round", "next_rejection", "next_bonus", "first", "last"]) {
    $(key).addEventListener("click", (e) => { move(key); e.currentTarget.blur(); });
  }
  $("play").addEventListener("click", (e) => { play(); e.currentTarget.blur(); });
  $("lecture").addEventListener("change", (e) => { lecture = e.target.checked; e.target.blur(); show(); });
  $("focus").addEventListener("change", (e) => { focus = e.target.checked; e.target.blur(); show(); });
  window.addEventListener("hashchange", () => go(fromHash()));
  at = fromHash();
  show();
  document.body.dataset.ready = "1";
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="specviz export-html">
<title>%TITLE% · specviz</title>
<style>%CSS%</style>
</head>
<body>
<main>
<h1>%TITLE%</h1>
<div class="about">%ABOUT%</div>
<p id="problem" role="alert"></p>
<div class="controls">
<button id="previous" type="button" title="← or PageUp">Previous phase</button>
<button id="next" class="primary" type="button" title="→, PageDown or Space">Next phase</button>
<button id="next_round" type="button" title="N">Next round</button>
<button id="next_rejection" type="button" title="J">Next rejection</button>
<button id="next_bonus" type="button" title="B">Next bonus</button>
<button id="play" type="button" title="P">▶ Play</button>
<button id="first" type="button" title="Home">Start</button>
<button id="last" type="button" title="End">To the end</button>
<label><input id="lecture" type="checkbox"> Lecture mode (L)</label>
<label><input id="focus" type="checkbox"> Focus view (F)</label>
</div>
<div class="keys">Keys: → PageDown Space next phase · ← PageUp previous · N next round · J next rejection · B next bonus
· P play · Home / End start / end · L lecture mode · F focus view. The address names the moment: copy it to share it.
</div>
<div id="where" role="status"></div>
<div id="stage"></div>
</main>
<script id="bundle" type="application/octet-stream">%BUNDLE%</script>
<script>%LIBRARIES%</script>
<script>%PLAYER%</script>
</body>
</html>
"""


def trace_html_file(trace, title: str = "", about: str = "") -> str:
    """A trace as the offline file: its player bundle (every view), embedded with the player and the libraries."""
    from specviz.viz.player_bundle import player_bundle

    return export_html(player_bundle(trace, title, about))
