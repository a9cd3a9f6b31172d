"""Reading the race page's player in a real browser (its elements sit in a shadow root): each lane's text and
clock, and a replay sampled frame by frame inside the page."""

from __future__ import annotations

import re

FIND_PLAYER = """() => {
    const hosts = [...document.querySelectorAll('*')].filter(e => e.shadowRoot);
    const host = hosts.find(e => e.shadowRoot.querySelector('.race-player'));
    return host ? host.shadowRoot.querySelector('.race-player') : document.querySelector('.race-player');
}"""

LANES = f"""() => {{
    const root = ({FIND_PLAYER})();
    return [...root.querySelectorAll('.lane')].map(l => ({{
        method: l.dataset.lane, label: l.querySelector('.label').textContent,
        clock: l.querySelector('.clock').textContent, text: l.querySelector('pre').textContent}}));
}}"""

REPLAY = f"""speed => new Promise(resolve => {{
    const root = ({FIND_PLAYER})();
    const select = root.querySelector('select');
    if (Number(select.value) !== speed) {{ select.value = String(speed); select.dispatchEvent(new Event('change')); }}
    else root.querySelector('[data-role=replay]').click();
    const t0 = performance.now(), samples = [];
    const tick = () => {{
        const texts = [...root.querySelectorAll('.lane pre')].map(p => p.textContent);
        samples.push({{ms: performance.now() - t0, lengths: texts.map(t => t.length)}});
        if (root.dataset.state === 'done') resolve({{ms: performance.now() - t0, samples, texts}});
        else requestAnimationFrame(tick);
    }};
    requestAnimationFrame(tick);
}})"""

CLOCK = re.compile(r"(\d+) ms · (\d+) tokens(?: · ([\d.]+) tokens/s)?")


def wait_played(tab, timeout_ms: int = 600_000) -> None:
    """Wait until the player exists and its playback has ended."""
    tab.wait_for_function(
        f"() => {{ const r = ({FIND_PLAYER})(); return r && r.dataset.state === 'done'; }}", timeout=timeout_ms
    )


def lanes(tab) -> list[dict]:
    """Each lane as the player shows it: method, label, text, and from its clock: ms, tokens, tokens/s (None until the
    lane has finished)."""
    out = []
    for lane in tab.evaluate(LANES):
        found = CLOCK.search(lane["clock"])
        assert found, f"a lane's clock reads {lane['clock']!r}"
        ms, tokens, speed = found.groups()
        out.append(lane | {"ms": int(ms), "tokens": int(tokens), "tokens_per_s": float(speed) if speed else None})
    return out


def replay(tab, speed: float = 1) -> dict:
    """Press Replay (or pick the speed) and sample every lane's text length each frame until the playback ends:
    {ms: how long it took, samples: [{ms, lengths}], texts: the final texts}."""
    return tab.evaluate(REPLAY, speed)
