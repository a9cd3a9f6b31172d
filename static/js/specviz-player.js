/* specviz player: steps through a player bundle (format specviz.player v3, docs/player-format.md) in the browser.

The one copy of the player's drawing and navigation: the offline HTML export inlines this file, and the round page's
component loads it from Streamlit's static serving (/app/static/js/specviz-player.js). It only swaps HTML fragments and
draws the bundle's charts with vega-embed (window.vegaEmbed, loaded before it): each chart is its kind's Vega-Lite
template with the chart's values and datasets bound in (viz.chart_templates.bind in Python does the same); no server
runs per step.

  SpecvizPlayer.unpack(base64)          -> Promise of the bundle (gzip + base64, as viz.export_html.packed writes it),
                                           decoded from its wire form (SpecvizPlayer.decode, as viz.player_wire.decoded)
  SpecvizPlayer.mount(root, doc, opts)  -> {go(i), at(), view(lecture, focus), destroy()}: drawn into root

opts: start (step index; default from the address), lecture, focus (the starting view), moment ("hash": the address's
fragment names the moment, as the offline file does; "query": the page's query string, merged with opts.params),
params (the page's other query parameters, written beside the moment), viewRoot (the element that carries the view's
classes; default root), copyLinks (draw the copy-link buttons), keys (listen on the document; default true), follow
(the full view scrolls the step's own phase into view: the offline file, whose page is the player).
Every step drawn is timed from its key press or click to its charts drawn and the next frame: window.__specvizTimings and the root's
data-rendered-ms say how long (browser tests read them). Classes are prefixed spz- so nothing leaks into a host page.
*/
(function () {
  "use strict";
  if (window.SpecvizPlayer) return; // loaded twice (a page's script and a component's): keep the first
  const NAV = ["previous", "next", "next_round", "next_rejection", "next_bonus", "first", "last"];
  const MOMENT_KEYS = ["round", "phase", "pos"];
  const KEYS = {
    ArrowRight: "next", PageDown: "next", " ": "next", ArrowLeft: "previous", PageUp: "previous",
    n: "next_round", N: "next_round", j: "next_rejection", J: "next_rejection", b: "next_bonus", B: "next_bonus",
    Home: "first", End: "last",
  };
  const BUTTONS = [ // [id, label, key hint, primary]
    ["previous", "Previous phase", "← or PageUp"], ["next", "Next phase", "→, PageDown or Space", true],
    ["next_round", "Next round", "N"], ["next_rejection", "Next rejection", "J"], ["next_bonus", "Next bonus", "B"],
    ["play", "▶ Play", "P"], ["first", "Start", "Home"], ["last", "To the end", "End"],
  ];
  const KEY_LINE = "Keys: → PageDown Space next phase · ← PageUp previous · N next round · J next rejection · " +
    "B next bonus · P play · Home / End start / end · L lecture mode · F focus view";

  /** The bundle from its packed text: base64 of gzipped JSON, unpacked by the browser's DecompressionStream and
   * decoded from its wire form. */
  async function unpack(raw) {
    const bytes = Uint8Array.from(atob(raw.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return decode(JSON.parse(await new Response(stream).text()));
  }

  /** The document from its wire form (version 3: strings by index, datasets column-wise, no repeated keys), as
   * viz.player_wire.decoded does in Python; a document of another version or form is returned as it is. */
  function decode(wire) {
    if (!wire || wire.format !== "specviz.player" || wire.version !== 3 || !Array.isArray(wire.strings)) return wire;
    const S = wire.strings;
    const joined = (p) => p.map((i) => S[i]).join("");
    const value = (v) => (v && typeof v === "object" && !Array.isArray(v) && "$s" in v
      ? (Array.isArray(v.$s) ? v.$s.map((i) => S[i]) : S[v.$s]) : v);
    const values = wire.values.map(value);
    const doc = {};
    for (const k of ["format", "version", "title", "about", "rounds", "views", "phase_titles", "templates"]) {
      doc[k] = wire[k];
    }
    doc.html = wire.html.map(joined);
    doc.text = wire.text.map(joined);
    doc.charts = wire.charts.map(([template, data, p]) => {
      const params = {};
      for (let k = 0; k < p.length; k += 2) params[S[p[k]]] = values[p[k + 1]];
      return {template, data, params};
    });
    doc.datasets = wire.datasets.map(([c, ...cols]) => {
      const full = cols.map(value), rows = [];
      for (let r = 0; r < (full.length ? full[0].length : 0); r++) rows.push(full.map((col) => col[r]));
      return {columns: wire.columns[c].map((i) => S[i]), rows};
    });
    doc.rows = wire.rows.map(([section, ...columns]) => ({
      section: S[section],
      columns: columns.map(([place, width, blocks]) => ({
        place: S[place], width, blocks: blocks.map(([k, i]) => [S[k], i]),
      })),
    }));
    const st = wire.steps, column = (table, i) => Object.fromEntries(Object.keys(table).map((k) => [k, table[k][i]]));
    doc.steps = st.round.map((round, i) => ({
      round, step: st.step[i], phase: S[st.phase[i]], title: st.title[i],
      moment: Object.fromEntries(new URLSearchParams(st.query[i])), query: st.query[i],
      nav: column(st.nav, i), views: column(st.views, i),
    }));
    return doc;
  }

  /** Why the player cannot read a document, or "" when it can. */
  function problem(doc) {
    const version = doc && doc.version; // 3 decoded by unpack; 2 was the document itself
    const known = version === 3 || version === 2;
    if (doc && doc.format === "specviz.player" && known && Array.isArray(doc.steps)) return "";
    const what = doc ? doc.format + " document of version " + doc.version : "empty document";
    return "This is a " + what + ", which this player does not read (rebuild it from its trace).";
  }

  /** An element with a class and optional text. */
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** A template with its holes ({"$param": name}) filled from the chart's values (copied: Vega may change them). */
  function filled(node, params) {
    if (Array.isArray(node)) return node.map((item) => filled(item, params));
    if (node === null || typeof node !== "object") return node;
    const keys = Object.keys(node);
    if (keys.length === 1 && keys[0] === "$param") return JSON.parse(JSON.stringify(params[node.$param]));
    const out = {};
    for (const k of keys) out[k] = filled(node[k], params);
    return out;
  }

  /** A dataset's first `count` rows as new objects (stored as columns and rows of values; Vega writes into the
   * objects it draws, so no two charts share one). */
  function rowsOf(doc, ds, count) {
    const table = doc.datasets[ds];
    return table.rows.slice(0, count).map((values) => Object.fromEntries(table.columns.map((c, k) => [c, values[k]])));
  }

  /** A chart's full spec: its template bound to its values and datasets, as wide as its column unless sized. */
  function chartSpec(doc, i) {
    const entry = doc.charts[i];
    const spec = filled(doc.templates[entry.template], entry.params);
    if (entry.data.length) {
      spec.datasets = {};
      entry.data.forEach((refs, n) => {
        spec.datasets["d" + n] = [].concat(...refs.map(([ds, count]) => rowsOf(doc, ds, count)));
      });
    }
    if (!("width" in spec)) { spec.width = "container"; spec.autosize = {type: "fit-x", contains: "padding"}; }
    return spec;
  }

  /** A block's HTML: a fragment, or the committed text (its opening, the first rounds' tokens, its close). */
  function blockHtml(doc, kind, i) {
    if (kind === "text") return doc.html[i[0]] + doc.text.slice(0, i[1]).join("") + doc.html[i[2]];
    return doc.html[i];
  }

  /** Whether a key press belongs to a form control (text box, select, slider...), not to the player. */
  function typing(t) {
    if (!t || !t.tagName) return false;
    if (t.isContentEditable) return true;
    if (/^(TEXTAREA|SELECT)$/.test(t.tagName)) return true;
    if (t.tagName === "INPUT") return !/^(checkbox|radio|button|submit|reset)$/.test(t.type);
    const role = t.getAttribute && t.getAttribute("role");
    return /^(slider|listbox|combobox|option|textbox|spinbutton|menu|menuitem)$/.test(role || "");
  }

  /** The page's address with the moment (and view) written into its query, its other parameters kept. */
  function queryAddress(step, params, focus, lecture) {
    const query = new URLSearchParams(location.search);
    for (const k of MOMENT_KEYS.concat(["view", "lecture", "present"])) query.delete(k);
    for (const [k, v] of Object.entries(params || {})) query.set(k, v);
    for (const [k, v] of new URLSearchParams(step.query)) query.set(k, v);
    query.set("view", focus ? "focus" : "full");
    if (lecture) query.set("lecture", "1");
    return location.pathname + "?" + query.toString().replace(/\+/g, "%20");
  }

  /** The step a moment's query names: exact, else the round's phase (its last step), else the round's first. */
  function stepOf(doc, query) {
    if (!query) return 0;
    const exact = doc.steps.findIndex((s) => s.query === query);
    if (exact >= 0) return exact;
    const p = new URLSearchParams(query);
    const round = parseInt(p.get("round") || "1", 10) - 1;
    const inRound = doc.steps.map((s, i) => [s, i]).filter(([s]) => s.round === round);
    if (!inRound.length) return 0;
    const phase = inRound.filter(([s]) => s.phase === p.get("phase"));
    const moment = MOMENT_KEYS.filter((k) => p.has(k)).map((k) => k + "=" + p.get(k)).join("&");
    const again = inRound.find(([s]) => s.query === moment);
    if (again) return again[1];
    return (phase.length ? phase[phase.length - 1] : inRound[0])[1];
  }

  /** Copy text with the clipboard (secure contexts) or the old copy command; whether it worked. */
  async function copyText(text) {
    try { await navigator.clipboard.writeText(text); return true; } catch (e) {
      const area = document.createElement("textarea");
      area.value = text; document.body.appendChild(area); area.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
      area.remove();
      return ok;
    }
  }

  /** The controls row: stepping buttons, the play button, the view toggles and (on a page) the copy links. */
  function controls(opts) {
    const bar = el("div", "spz-controls");
    const refs = {};
    for (const [id, label, hint, primary] of BUTTONS) {
      const b = el("button", "spz-button" + (primary ? " spz-primary" : ""), label);
      b.type = "button"; b.title = hint; b.dataset.spz = id;
      bar.appendChild(b); refs[id] = b;
    }
    for (const [id, label] of [["lecture", "Lecture mode (L)"], ["focus", "Focus view (F)"]]) {
      const box = el("input"); box.type = "checkbox"; box.dataset.spz = id;
      const tag = el("label", "spz-toggle"); tag.append(box, " " + label);
      bar.appendChild(tag); refs[id] = box;
    }
    if (opts.copyLinks) {
      for (const [id, label, tip] of [
        ["copy", "Copy link to this moment", "This view, this moment"],
        ["copy_present", "Copy presenter link", "Opens full screen on the phase: lecture mode, focus view, sidebar closed"],
      ]) {
        const b = el("button", "spz-button spz-copy", label); b.type = "button"; b.title = tip; b.dataset.spz = id;
        bar.appendChild(b); refs[id] = b;
      }
      refs.copied = el("span", "spz-copied"); refs.copied.setAttribute("role", "status");
      bar.appendChild(refs.copied);
    }
    return [bar, refs];
  }

  /** Draw the player into root and start at opts.start (or the moment the address names). */
  function mount(root, doc, opts) {
    opts = Object.assign({moment: "hash", keys: true, params: {}, lecture: false, focus: false}, opts || {});
    const wrong = problem(doc);
    if (wrong) { root.replaceChildren(el("p", "spz-problem", wrong)); return {destroy() {}, go() {}, at: () => 0}; }
    const steps = doc.steps;
    const viewRoot = opts.viewRoot || root;
    const box = el("div", "spz-player");
    const [bar, refs] = controls(opts);
    const where = el("div", "spz-where"); where.setAttribute("role", "status");
    const stage = el("div", "spz-stage");
    box.append(bar, el("div", "spz-keys", KEY_LINE), where, stage);
    root.replaceChildren(box);
    let at = 0, lecture = !!opts.lecture, focus = !!opts.focus, timer = null, drawn = 0;
    const timings = (window.__specvizTimings = window.__specvizTimings || []);
    const viewName = () => (focus ? "focus" : "full") + (lecture ? "+lecture" : "");

    // Charts drawn stay drawn: a round's earlier phases stay on screen as the cursor moves, so most of a step's charts
    // were on the step before; each is kept by its chart, view and column, and moved into the new step as it is.
    const drawnCharts = new Map(); // "chart|view|place" -> {div, view, ready}
    const KEEP = 240; // a tree step has up to 18 charts, and up to seven steps are drawn ahead
    const chart = (i, place, used, pending) => {
      const key = i + "|" + viewName() + "|" + place;
      let entry = drawnCharts.get(key);
      if (entry && used.has(key)) entry = null; // the same chart twice in one step: draw the second afresh
      if (!entry) {
        const div = el("div", "spz-block spz-block-chart spz-chart");
        entry = {div, view: null, ready: null};
        entry.ready = window.vegaEmbed(div, chartSpec(doc, i), {actions: false, renderer: "svg"})
          .then((result) => { entry.view = result.view; })
          .catch((e) => { div.textContent = "This chart could not be drawn: " + e; });
        if (!used.has(key)) drawnCharts.set(key, entry);
      } else {
        drawnCharts.delete(key); drawnCharts.set(key, entry); // most recently used last
      }
      used.add(key);
      pending.push(entry.ready);
      return entry.div;
    };
    const forget = (used) => { // the least recently used charts beyond KEEP, never one on screen
      for (const [key, entry] of drawnCharts) {
        if (drawnCharts.size <= KEEP) break;
        if (used.has(key)) continue;
        if (entry.view) entry.view.finalize();
        drawnCharts.delete(key);
      }
    };
    // While the viewer reads a step, the charts of the steps its keys lead to (next phase first) are drawn in a
    // hidden copy of the stage, laid out as the stage is (so each chart takes its column's width), and kept.
    let preparing = 0;
    const prepare = (index, run) => {
      if (index === null || index === undefined || index === at || run !== drawn) return Promise.resolve();
      const holder = el("div", "spz-stage spz-holder");
      holder.style.cssText = "position:absolute;left:0;top:0;height:0;overflow:hidden;visibility:hidden;" +
        "pointer-events:none;width:" + stage.clientWidth + "px";
      holder.setAttribute("aria-hidden", "true");
      const pending = [];
      for (const row of steps[index].views[viewName()].map((r) => doc.rows[r])) {
        const line = el("div", "spz-row spz-" + row.section);
        for (const column of row.columns) {
          const col = el("div", "spz-col spz-" + column.place);
          col.style.flex = String(column.width);
          const place = row.section + "/" + column.place;
          for (const [kind, i] of column.blocks) {
            if (kind === "chart" && !drawnCharts.has(i + "|" + viewName() + "|" + place)) {
              col.appendChild(chart(i, place, new Set(), pending));
            }
          }
          line.appendChild(col);
        }
        holder.appendChild(line);
      }
      if (!pending.length) return Promise.resolve();
      box.appendChild(holder);
      return Promise.all(pending).then(() => holder.remove());
    };
    const idle = () => new Promise((resolve) => (window.requestIdleCallback || setTimeout)(resolve, {timeout: 300}));
    const AHEAD = ["next", "previous", "next_round", "next_rejection", "next_bonus", "last", "first"]; // likeliest first
    const prepareAround = (run) => {
      const mine = ++preparing, nav = steps[at].nav;
      let chain = Promise.resolve();
      for (const key of AHEAD) {
        chain = chain.then(() => idle()).then(() => mine === preparing && prepare(nav[key], run));
      }
      chain.then(() => { if (mine === preparing) root.dataset.prepared = String(run); });
    };
    const draw = (block, into, pending, used, place) => {
      const [kind, i] = block;
      if (kind === "chart") { into.appendChild(chart(i, place, used, pending)); return; }
      const div = el("div", "spz-block spz-block-" + (kind === "text" ? "html" : kind));
      div.innerHTML = blockHtml(doc, kind, i);
      into.appendChild(div);
    };
    const address = () => {
      const step = steps[at];
      if (opts.moment === "hash") return location.pathname + location.search + "#" + step.query;
      return queryAddress(step, opts.params, focus, lecture);
    };
    const show = (since) => {
      const started = since === undefined ? performance.now() : since;
      const step = steps[at], run = ++drawn, pending = [], used = new Set();
      where.textContent = step.title;
      const rows = [];
      for (const row of step.views[viewName()].map((r) => doc.rows[r])) {
        const line = el("div", "spz-row spz-" + row.section);
        for (const column of row.columns) {
          const col = el("div", "spz-col spz-" + column.place);
          col.style.flex = String(column.width);
          for (const block of column.blocks) draw(block, col, pending, used, row.section + "/" + column.place);
          line.appendChild(col);
        }
        rows.push(line);
      }
      stage.replaceChildren(...rows);
      forget(used);
      const nav = step.nav;
      refs.previous.disabled = at === 0;
      refs.next.disabled = refs.next_round.disabled = nav.next === at;
      refs.next_rejection.disabled = nav.next_rejection === null;
      refs.next_bonus.disabled = nav.next_bonus === null;
      refs.play.textContent = timer ? "⏸ Pause" : "▶ Play";
      viewRoot.classList.toggle("spz-lecture", lecture);
      viewRoot.classList.toggle("spz-focus", focus);
      refs.lecture.checked = lecture; refs.focus.checked = focus;
      const target = address();
      if (location.pathname + location.search + location.hash !== target) {
        history.replaceState(history.state, "", target);
      }
      root.dataset.step = String(at);
      root.dataset.query = step.query;
      const frame = () => document.visibilityState === "visible" ? new Promise(requestAnimationFrame) : null; // none hidden
      let domMs = 0;
      Promise.all(pending).then(() => { domMs = performance.now() - started; return frame(); }).then(() => {
        if (run !== drawn) return; // a later key press drew another step first
        const ms = performance.now() - started; // dom_ms: until the DOM and charts are drawn; ms: the next frame too
        timings.push({step: at, view: viewName(), ms: ms, dom_ms: domMs});
        root.dataset.renderedMs = ms.toFixed(1);
        if (opts.follow) focus ? window.scrollTo(0, 0) : follow(); // the focus view fits the first screen
        root.dataset.rendered = String(run);
        prepareAround(run);
      });
    };
    const follow = () => { // the full view lists the round's phases: the step's own (the last) comes into view
      const rows = stage.querySelectorAll(".spz-row.spz-panel");
      const last = rows[rows.length - 1];
      if (last && last.getBoundingClientRect().bottom > window.innerHeight) last.scrollIntoView({block: "nearest"});
    };
    const go = (target, since) => {
      if (target !== null && target !== undefined && target !== at) { at = target; show(since); }
    };
    const move = (key, since) => go(steps[at].nav[key], since);
    const stopPlaying = () => { clearInterval(timer); timer = null; };
    const play = (since) => {
      if (timer) { stopPlaying(); show(since); return; }
      timer = setInterval(() => {
        if (steps[at].nav.next === at) { stopPlaying(); show(); } else move("next");
      }, (opts.speed || 1) * 1000);
      show(since);
    };
    const copy = async (present) => {
      let link = location.origin + address();
      if (present) link += "&present=1";
      const ok = await copyText(link);
      refs.copied.textContent = ok ? "Copied " + (present ? "a presenter's link" : "a link") + " to this moment."
        : "The browser refused to copy: copy the address bar instead.";
    };
    const onKey = (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      if (!root.isConnected) return;
      const since = e.timeStamp || performance.now();
      if (KEYS[e.key]) { e.preventDefault(); move(KEYS[e.key], since); }
      else if (e.key === "p" || e.key === "P") { e.preventDefault(); play(since); }
      else if (e.key === "l" || e.key === "L") { e.preventDefault(); lecture = !lecture; show(since); }
      else if (e.key === "f" || e.key === "F") { e.preventDefault(); focus = !focus; show(since); }
    };
    const onClick = (e) => {
      const b = e.target.closest("[data-spz]");
      if (!b || !bar.contains(b)) return;
      const id = b.dataset.spz, since = e.timeStamp || performance.now();
      if (NAV.includes(id)) move(id, since);
      else if (id === "play") play(since);
      else if (id === "lecture") { lecture = b.checked; show(since); }
      else if (id === "focus") { focus = b.checked; show(since); }
      else if (id === "copy" || id === "copy_present") copy(id === "copy_present");
      if (b.tagName === "BUTTON" || b.type === "checkbox") b.blur(); // the keys go back to the player
    };
    const onHash = () => go(stepOf(doc, location.hash.replace(/^#/, "")));
    bar.addEventListener("click", onClick);
    if (opts.keys) document.addEventListener("keydown", onKey);
    if (opts.moment === "hash") window.addEventListener("hashchange", onHash);
    const first = opts.start !== undefined && opts.start !== null ? opts.start
      : stepOf(doc, opts.moment === "hash" ? location.hash.replace(/^#/, "") : "");
    at = Math.max(0, Math.min(steps.length - 1, first | 0));
    show();
    root.dataset.ready = "1";
    return {
      go: (i) => go(i),
      at: () => at,
      view(lectureOn, focusOn) { // the host page's own view switch: the same moment, another view
        if (!!lectureOn !== lecture || !!focusOn !== focus) { lecture = !!lectureOn; focus = !!focusOn; show(); }
      },
      destroy() {
        stopPlaying();
        document.removeEventListener("keydown", onKey);
        window.removeEventListener("hashchange", onHash);
        for (const entry of drawnCharts.values()) if (entry.view) entry.view.finalize();
        drawnCharts.clear();
        drawn += 1;
        viewRoot.classList.remove("spz-lecture", "spz-focus");
        root.replaceChildren();
        delete root.dataset.ready;
      },
    };
  }

  window.SpecvizPlayer = {mount, unpack, decode, problem, stepOf, typing, chartSpec, version: 3};
})();
