"""A run as one offline HTML file: its player bundle and the Vega JavaScript inside, stepping with the page's keys.

The file fetches nothing: the bundle (viz.player_bundle, gzipped and base64-encoded, unpacked by the browser's
DecompressionStream), the vendored Vega, Vega-Lite and vega-embed builds (static/js/, README there) and the player
itself (static/js/specviz-player.js and .css, the same files the round page's in-page player loads) are written into
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

JS_DIR = Path(__file__).resolve().parents[2] / "static" / "js"  # static/: the one folder Streamlit serves
LIBRARIES = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")  # in load order: vega-embed needs both
PLAYER_JS_FILE, PLAYER_CSS_FILE = "specviz-player.js", "specviz-player.css"  # the one player, for file and page


def player_js() -> str:
    """The player's JavaScript (drawing and navigation), shared with the round page's component."""
    return (JS_DIR / PLAYER_JS_FILE).read_text(encoding="utf-8")


def player_css() -> str:
    """The player's styles (every rule under its spz- classes), shared with the round page's component."""
    return (JS_DIR / PLAYER_CSS_FILE).read_text(encoding="utf-8")


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
        "CSS": PAGE_CSS + player_css(),
        "BUNDLE": packed(bundle),
        "PLAYER": player_js() + START_JS,
        "LIBRARIES": js,
    }
    return re.sub(r"%([A-Z]+)%", lambda m: parts[m.group(1)], PAGE)  # one pass: nothing inserted is read again


PAGE_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#111;background:#fff}
main{max-width:1200px;margin:0 auto;padding:1rem 1.5rem 4rem}
h1{font-size:1.6rem;margin:.2rem 0}
.about{background:#eef4fb;border-radius:.4rem;padding:.5rem .8rem;margin:.5rem 0}
#problem{color:#a00;font-weight:bold}
body.spz-lecture h1{font-size:2.6rem}
body.spz-lecture .about{font-size:1.3rem}
body.spz-focus main{display:flex;flex-direction:column;padding-top:.5rem}
body.spz-focus main>h1,body.spz-focus main>.about{order:1}
"""  # the file's own page around the player (in the focus view its title and about go below it, so the phase fits a
# projector's screen as in the app); the player's rules are static/js/specviz-player.css

START_JS = r"""
(async () => {
  const problem = document.getElementById("problem");
  let doc;
  try {
    doc = await SpecvizPlayer.unpack(document.getElementById("bundle").textContent);
  } catch (e) {
    problem.textContent = "This browser cannot unpack the run (" + e + "): open the file in a current " +
      "Chromium, Firefox or Safari.";
    return;
  }
  const wrong = SpecvizPlayer.problem(doc);
  if (wrong) { problem.textContent = wrong; return; }
  SpecvizPlayer.mount(document.getElementById("player"), doc, {moment: "hash", viewRoot: document.body, follow: true});
  document.body.dataset.ready = "1";
})();
"""  # unpack the embedded bundle and start the player at the moment the address's fragment names

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
<div id="player"></div>
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
