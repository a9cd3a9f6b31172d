// The race's playback (ui/race_player.py): data = {id, lanes: [{method, label, times, pieces, tokens, end_s,
// tokens_per_s}]}; times are seconds of decoding since the lane's start. Every lane starts together and shows its
// text as it arrived, at the recorded pace times the chosen speed. Nothing is sent to the server.
const SPEEDS = [1, 0.25];

function build(root, data, player) {
  root.replaceChildren();
  const bar = document.createElement("div");
  bar.className = "bar";
  const replay = document.createElement("button");
  replay.type = "button";
  replay.textContent = "↻ Replay";
  replay.dataset.role = "replay";
  const speed = document.createElement("select");
  speed.setAttribute("aria-label", "Playback speed");
  for (const s of SPEEDS) {
    const option = document.createElement("option");
    option.value = String(s);
    option.textContent = `speed ×${s}`;
    speed.appendChild(option);
  }
  speed.value = String(player.speed);
  replay.addEventListener("click", () => restart(player));
  speed.addEventListener("change", () => {
    player.speed = Number(speed.value);
    restart(player);
  });
  bar.append(replay, speed);
  const grid = document.createElement("div");
  grid.className = "lanes";  // side by side, as many to a row as fit
  root.append(bar, grid);
  player.lanes = data.lanes.map((lane) => {
    const box = document.createElement("div");
    box.className = "lane";
    box.dataset.lane = lane.method;
    const head = document.createElement("div");
    head.className = "head";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = lane.label;
    const clock = document.createElement("span");
    clock.className = "clock";
    const text = document.createElement("pre");
    text.className = "text";
    head.append(label, clock);
    box.append(head, text);
    grid.appendChild(box);
    return { lane, clock, text, shown: 0, tokens: 0 };
  });
}

function restart(player) {
  for (const row of player.lanes) {
    row.shown = 0;
    row.tokens = 0;
    row.text.textContent = "";
  }
  player.start = performance.now();
  player.root.dataset.state = "playing";
  schedule(player);
}

function frame(player, now) {
  const t = ((now - player.start) / 1000) * player.speed;  // seconds of decoding replayed so far
  let playing = false;
  for (const row of player.lanes) {
    const { lane } = row;
    let added = "";
    while (row.shown < lane.times.length && lane.times[row.shown] <= t) {
      added += lane.pieces[row.shown];
      row.tokens += lane.tokens[row.shown];
      row.shown += 1;
    }
    if (added) row.text.append(added);
    const done = row.shown >= lane.times.length && t >= lane.end_s;
    const ms = Math.min(t, lane.end_s) * 1000;
    row.clock.textContent = done
      ? `${ms.toFixed(0)} ms · ${row.tokens} tokens · ${lane.tokens_per_s.toFixed(1)} tokens/s`
      : `${ms.toFixed(0)} ms · ${row.tokens} tokens`;
    row.text.parentElement.dataset.state = done ? "done" : "playing";
    playing = playing || !done;
  }
  player.root.dataset.state = playing ? "playing" : "done";
  if (playing) schedule(player);
}

function schedule(player) {
  cancelAnimationFrame(player.raf);
  player.raf = requestAnimationFrame((now) => frame(player, now));
}

export default function (component) {
  const { data, parentElement } = component;
  const root = parentElement.querySelector(".race-player");
  if (!root || !data || !data.lanes) return undefined;
  const player = root.__player || (root.__player = { speed: 1, id: null });
  player.root = root;
  if (player.id !== data.id || !root.querySelector(".lane")) {  // a new race: draw its lanes, play from the start
    player.id = data.id;
    build(root, data, player);
    restart(player);
  } else {
    schedule(player);  // the same race after a rerun: carry on from where the playback is
  }
  return () => cancelAnimationFrame(player.raf);
}
