"""The race page's tokens/s in Chromium next to `python -m specviz bench` for the same prompt, length and settings on
the same machine (the page's figure should be the engine's, within 15 %). A measurement, not a test: it writes both to
one JSON file.

usage: python tests/e2e/race_vs_bench.py [--out docs/race-vs-bench.json] [--screenshot race.png]

1. Serve the app as users get it (the bundled pair), open the race page in Chromium, start the race with the page's
   defaults, and read each lane's tokens/s from the player once its playback has ended (the median repeat's, which
   is the table's). The server is stopped before the bench starts.
2. Run the bench on the race's default prompt (a one-line prompts file), with the race's lanes, K, temperature, seed,
   length and 3 repeats, in a process of its own.
3. Write both, each lane's ratio race / bench, the bench's environment (measure.bench.environment) and the load
   average before and after each half: other work on a shared machine shows there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from browser_helpers import CHROMIUM, CHROMIUM_FLAGS, ROOT, main_text, open_app_page, served_app, settle
from race_browser import lanes as player_lanes
from race_browser import wait_played

from specviz.engine.loading.catalogue import presets_for
from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET

RACE = {"k": 4, "temperature": 0.0, "seed": 0, "max_new_tokens": 48}  # the race page's sidebar defaults (checked)
REPEATS = 3  # the race's (measure.timing.REPEATS)
WITHIN = 0.15
TIMED = re.compile(r"Timed on one prompt, (\d+) new tokens per run, (greedy|sampled at temperature ([\d.]+))")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def race_in_browser(log: Path, screenshot: str | None = None) -> dict:
    """The race page's lanes as Chromium shows them after a race with the page's defaults (a full-page screenshot of
    the page once the playback has ended, if asked)."""
    from playwright.sync_api import sync_playwright

    with served_app(log) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        tab = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        open_app_page(tab, url, "race", timeout_ms=300_000)
        started = time.perf_counter()
        tab.get_by_role("button", name="Start the race").click()
        settle(tab, 900_000)
        wait_played(tab)
        seconds = time.perf_counter() - started
        timed = TIMED.search(main_text(tab))
        shown = player_lanes(tab)
        if screenshot:
            tab.set_viewport_size({"width": 1280, "height": 3000})  # Streamlit scrolls its main block, not the page
            tab.wait_for_timeout(500)
            tab.screenshot(path=screenshot, full_page=True)
        browser.close()
    assert timed, "the race page no longer says how it timed its lanes: update TIMED"
    temperature = 0.0 if timed.group(2) == "greedy" else float(timed.group(3))
    if (int(timed.group(1)), temperature) != (RACE["max_new_tokens"], RACE["temperature"]):
        raise SystemExit(f"the race page's defaults changed ({timed.group(0)!r}): update RACE in this script")
    keep = ("method", "label", "tokens", "ms", "tokens_per_s")
    return {"seconds": round(seconds, 1), "lanes": [{k: lane[k] for k in keep} for lane in shown]}


def bench(prompt: str, methods: list[str], out: Path) -> dict:
    """`python -m specviz bench` on the one prompt with the race's settings; its JSON document."""
    prompts = out.with_suffix(".jsonl")
    prompts.write_text(json.dumps({"prompt": prompt, "tag": "race"}) + "\n")
    command = [sys.executable, "-m", "specviz", "bench", "--prompts", str(prompts), "--lanes", ",".join(methods)]
    command += ["--k", str(RACE["k"]), "--temperature", str(RACE["temperature"]), "--seed", str(RACE["seed"])]
    command += ["--max-new-tokens", str(RACE["max_new_tokens"]), "--repeats", str(REPEATS), "--json", str(out)]
    command += ["--target", BUNDLED_TARGET, "--draft", BUNDLED_DRAFT]  # the app's pair, whatever SPECVIZ_* say
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def compare(race: dict, doc: dict) -> list[dict]:
    """Per lane: the race's tokens/s, the bench's (its row at the race's K; plain's at K 0), their ratio."""
    rows = []
    for lane in race["lanes"]:
        k = 0 if lane["method"] == "plain" else RACE["k"]
        row = next(r for r in doc["results"] if r["method"] == lane["method"] and r["k"] == k and not r.get("tree"))
        ratio = lane["tokens_per_s"] / row["tokens_per_s"]
        rows.append({
            "method": lane["method"], "race_tokens_per_s": lane["tokens_per_s"], "race_tokens": lane["tokens"],
            "bench_tokens_per_s": round(row["tokens_per_s"], 1), "ratio": round(ratio, 3),
            "within_15_percent": abs(ratio - 1) <= WITHIN,
        })  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "race-vs-bench.json"))
    parser.add_argument("--screenshot", default=None, help="also save the race page after its playback (PNG)")
    args = parser.parse_args()
    prompt = presets_for(BUNDLED_TARGET)["code"]  # the race page's default prompt for the bundled pair
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        loads = {"before race": load()}
        race = race_in_browser(work / "server.log", args.screenshot)
        loads["after race"] = load()
        time.sleep(20)  # let the server's exit and the browser's settle before the bench
        loads["before bench"] = load()
        doc = bench(prompt, [lane["method"] for lane in race["lanes"]], work / "bench.json")
        loads["after bench"] = load()
    rows = compare(race, doc)
    result = {
        "what": "race page tokens/s in Chromium vs python -m specviz bench, same prompt, length and settings",
        "prompt": prompt,
        "settings": RACE | {"repeats": REPEATS},
        "environment": doc["environment"],
        "load_average_1_5_15": loads,
        "cores": os.cpu_count(),
        "race_seconds_in_browser": race["seconds"],
        "lanes": rows,
        "all_within_15_percent": all(r["within_15_percent"] for r in rows),
    }
    Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    for r in rows:
        print(f"{r['method']:>14}: race {r['race_tokens_per_s']:7.1f}  bench {r['bench_tokens_per_s']:7.1f}  "
              f"ratio {r['ratio']:.2f}")  # fmt: skip
    print(f"written to {args.out}; load averages {loads}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
