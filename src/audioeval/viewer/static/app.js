// audioeval view: the page. Plain JavaScript, no build step, nothing fetched from elsewhere.
// Data comes from /api/<path> when served, or from data/<path>.js scripts in a static export.
"use strict";
(() => {
  const MODE = document.body.dataset.mode || "server";
  const main = document.getElementById("main");
  const COLORS = ["#2563eb", "#dc2626", "#059669", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d"];
  const PAGE = 300; // list rows rendered at a time

  // ---------------------------------------------------------------------------------------------- data
  const loaded = new Map();
  const waiting = new Map();
  window.audioevalData = (path, payload) => {
    const resolve = waiting.get(path);
    waiting.delete(path);
    if (resolve) resolve(payload);
  };
  function load(path) {
    if (loaded.has(path)) return loaded.get(path);
    let promise;
    if (MODE === "server") {
      promise = fetch("api/" + path).then((r) => (r.ok ? r.json() : null));
    } else {
      promise = new Promise((resolve) => {
        waiting.set(path, resolve);
        const script = document.createElement("script");
        script.src = "data/" + path.split("/").map(encodeURIComponent).join("/") + ".js";
        script.onerror = () => { waiting.delete(path); resolve(null); };
        document.head.appendChild(script);
      });
    }
    loaded.set(path, promise);
    return promise;
  }

  // ------------------------------------------------------------------------------------------- helpers
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "dataset") Object.assign(el.dataset, value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }
  function svg(tag, attrs, ...children) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) if (value !== null && value !== undefined) el.setAttribute(key, value);
    for (const child of children.flat()) if (child) el.append(child instanceof Node ? child : String(child));
    return el;
  }
  function fmt(value, digits = 3) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(digits);
    if (typeof value === "boolean") return value ? "yes" : "no";
    return typeof value === "string" ? value : JSON.stringify(value);
  }
  function pretty(value) { return JSON.stringify(value, null, 2); }
  function badge(text, kind, title) { return h("span", { class: "badge " + kind, title }, text); }
  function runColor(i) { return COLORS[i % COLORS.length]; }

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [route, query] = raw.split("?");
    const parts = route.split("/").filter(Boolean);
    return { view: parts[0] || "overview", run: Number(parts[1] || 0), params: new URLSearchParams(query || "") };
  }
  function setHash(view, run, params, replace = true) {
    const query = params.toString();
    const hash = "#/" + view + (view === "compare" ? "" : "/" + run) + (query ? "?" + query : "");
    if (replace) history.replaceState(null, "", hash);
    else location.hash = hash;
  }

  // --------------------------------------------------------------------------------------------- shell
  let RUNS = [];
  async function start() {
    RUNS = (await load("runs")) || [];
    const select = document.getElementById("run-select");
    RUNS.forEach((r) => select.append(h("option", { value: r.id }, r.label)));
    document.getElementById("run-picker").hidden = RUNS.length < 2;
    select.addEventListener("change", () => {
      const { view } = parseHash();
      location.hash = "#/" + (view === "compare" ? "overview" : view) + "/" + select.value;
    });
    window.addEventListener("hashchange", route);
    document.addEventListener("keydown", onKey);
    route();
  }

  function route() {
    const { view, run, params } = parseHash();
    const runId = Number.isInteger(run) && run >= 0 && run < RUNS.length ? run : 0;
    document.getElementById("run-select").value = String(runId);
    document.getElementById("run-picker").classList.toggle("dim", view === "compare");
    for (const a of document.querySelectorAll("#tabs a")) {
      a.classList.toggle("active", a.dataset.tab === view);
      if (a.dataset.tab !== "compare") a.setAttribute("href", "#/" + a.dataset.tab + "/" + runId);
    }
    if (view === "samples") showSamples(runId, params);
    else if (view === "compare") showCompare(params);
    else showOverview(runId);
  }

  // ------------------------------------------------------------------------------------------ overview
  async function showOverview(run) {
    main.className = "page";
    main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    const data = await load("run/" + run + "/overview");
    main.innerHTML = data ? data.html : "<p class='notice warn'>This run could not be loaded.</p>";
  }

  // ------------------------------------------------------------------------------------------- samples
  const state = { run: 0, data: null, params: null, matches: [], shown: PAGE, selected: null };

  function defaultScore(data, task) { return ((data.scores || {})[task] || [])[0] || null; }
  function thresholdFor(data, score) {
    const values = data.samples.map((s) => s.scores[score]).filter((v) => typeof v === "number");
    if (!values.length || values.every((v) => v >= 0 && v <= 1)) return 1;
    return (Math.min(...values) + Math.max(...values)) / 2;
  }
  function outcomeOf(data, s, params) {
    const score = params.get("score") || defaultScore(data, s.task);
    if (!score) return "unscored";
    const value = s.scores[score];
    if (value === null || value === undefined) return "unscored";
    const thr = params.has("thr") ? Number(params.get("thr")) : thresholdFor(data, score);
    const higher = ((data.higher_is_better || {})[s.task] || {})[score];
    return (higher === false ? value <= thr : value >= thr) ? "correct" : "incorrect";
  }
  function matches(data, s, p) {
    if (p.get("task") && s.task !== p.get("task")) return false;
    if (p.get("k") && String(s.k) !== p.get("k")) return false;
    if (p.get("outcome") && outcomeOf(data, s, p) !== p.get("outcome")) return false;
    for (const [flag, field] of [["parse", "parse_failure"], ["judge", "judge_failure"], ["err", "error"], ["cached", "cached"]]) {
      if (p.get(flag) && String(s[field]) !== String(p.get(flag) === "yes")) return false;
    }
    for (const [key, value] of p) {
      if (key.startsWith("f.") && String(s.facts[key.slice(2)]) !== value) return false;
    }
    const q = (p.get("q") || "").toLowerCase();
    if (q) {
      const hay = [s.response, s.prediction, s.target, s.episode_id, s.id].join("\n").toLowerCase();
      if (!hay.includes(q)) return false;
    }
    return true;
  }

  async function showSamples(run, params) {
    main.className = "page wide";
    if (state.run !== run || !state.data) {
      main.replaceChildren(h("p", { class: "loading" }, "Loading samples…"));
      state.data = await load("run/" + run + "/samples");
      state.run = run;
    }
    const data = state.data;
    state.params = params;
    if (!data || !data.has_samples) {
      main.replaceChildren(h("div", { class: "notice" }, (data && data.note) || "This run has no sample records."));
      return;
    }
    const filters = h("aside", { class: "filters", id: "filters" });
    const list = h("section", { class: "list", id: "sample-list" });
    const detail = h("section", { class: "detail", id: "sample-detail" });
    main.replaceChildren(h("div", { class: "samples-layout" }, filters, list, detail));
    renderFilters(filters);
    applyFilters(false);
  }

  function select(name, label, options, value, onchange) {
    const el = h("select", { name, id: "filter-" + name, onchange: (e) => onchange(e.target.value) },
      options.map(([v, text]) => h("option", { value: v, selected: String(v) === String(value ?? "") }, text)));
    return h("label", { class: "field" }, h("span", null, label), el);
  }

  function renderFilters(box) {
    const data = state.data;
    const p = state.params;
    const set = (key) => (value) => {
      if (value === "" || value === null) p.delete(key); else p.set(key, value);
      if (key === "task" || key === "score") p.delete("thr");
      p.delete("sel");
      setHash("samples", state.run, p);
      if (key === "task" || key === "score") renderFilters(box);
      applyFilters(false);
    };
    const count = (pred) => data.samples.filter(pred).length;
    const task = p.get("task");
    const scoreNames = task ? data.scores[task] || [] : [...new Set(Object.values(data.scores).flat())];
    const score = p.get("score") || (task ? defaultScore(data, task) : "");
    const yesNo = (field) => [["", "any"], ["yes", `yes (${count((s) => s[field])})`], ["no", "no"]];
    const judged = data.samples.some((s) => s.judged);
    const errors = data.samples.some((s) => s.error);
    const fields = [
      h("h3", null, "Filter"),
      select("task", "task", [["", `all tasks (${data.samples.length})`], ...data.tasks.map((t) => [t, `${t} (${count((s) => s.task === t)})`])], task, set("task")),
      select("k", "shots k", [["", "all"], ...data.shots.map((k) => [k, `k = ${k}`])], p.get("k"), set("k")),
      select("outcome", "outcome", [["", "any"], ["correct", "correct"], ["incorrect", "incorrect"], ["unscored", "not scored"]], p.get("outcome"), set("outcome")),
      select("score", "judged by score", [["", task ? `${score} (default)` : "each task's default"], ...scoreNames.map((n) => [n, n])], p.get("score"), set("score")),
    ];
    if (score) {
      const thr = p.has("thr") ? p.get("thr") : thresholdFor(data, score);
      const input = h("input", { type: "number", step: "any", id: "filter-thr", value: thr, onchange: (e) => set("thr")(e.target.value) });
      const higher = task && ((data.higher_is_better || {})[task] || {})[score] === false;
      fields.push(h("label", { class: "field" }, h("span", null, `correct when ${score} ${higher ? "≤" : "≥"}`), input));
    }
    fields.push(select("parse", "parse failure", yesNo("parse_failure"), p.get("parse"), set("parse")));
    if (judged) fields.push(select("judge", "judge failure", yesNo("judge_failure"), p.get("judge"), set("judge")));
    if (errors) fields.push(select("err", "model error", yesNo("error"), p.get("err"), set("err")));
    fields.push(select("cached", "from the cache", yesNo("cached"), p.get("cached"), set("cached")));
    const facetKeys = Object.keys(data.facets).filter((key) => !task || data.samples.some((s) => s.task === task && key in s.facts));
    if (facetKeys.length) {
      fields.push(h("h3", null, "Episode facts"));
      for (const key of facetKeys) {
        const options = data.facets[key].map(([v, n]) => [String(v), `${fmt(v)} (${n})`]);
        fields.push(select("f." + key, key, [["", "any"], ...options], p.get("f." + key), set("f." + key)));
      }
    }
    fields.push(h("label", { class: "field" }, h("span", null, "text"),
      h("input", { type: "search", id: "filter-q", placeholder: "response, target, id…", value: p.get("q") || "",
        onchange: (e) => set("q")(e.target.value.trim()) })));
    const clear = h("button", { class: "link", onclick: () => { setHash("samples", state.run, new URLSearchParams()); route(); } }, "clear filters");
    box.replaceChildren(...fields, clear);
  }

  function applyFilters(keepSelection) {
    const data = state.data;
    const p = state.params;
    state.matches = data.samples.filter((s) => matches(data, s, p));
    state.shown = PAGE;
    renderList();
    const wanted = p.get("sel");
    const chosen = (wanted && data.samples.find((s) => s.id === wanted)) || (keepSelection && state.selected) || state.matches[0];
    if (chosen) selectSample(chosen.id, false); else document.getElementById("sample-detail").replaceChildren(h("p", { class: "muted" }, "No sample matches these filters."));
  }

  function renderList() {
    const data = state.data;
    const list = document.getElementById("sample-list");
    const rows = state.matches.slice(0, state.shown).map((s) => {
      const outcome = outcomeOf(data, s, state.params);
      const marks = [
        outcome === "correct" ? badge("✓", "ok", "correct") : outcome === "incorrect" ? badge("✗", "bad", "incorrect") : badge("–", "muted", "not scored"),
        s.parse_failure ? badge("parse", "warn", "parse failure") : null,
        s.judge_failure ? badge("judge", "bad", "judge failure") : null,
        s.error ? badge("error", "bad", s.error_message || "model error") : null,
        s.cached ? badge("cached", "muted", "answer from the response cache") : null,
      ];
      return h("button", { class: "item" + (state.selected && state.selected.id === s.id ? " selected" : ""), dataset: { id: s.id }, onclick: () => selectSample(s.id, true) },
        h("div", { class: "line1" }, h("span", { class: "task" }, s.task), h("span", { class: "ep" }, "#" + s.episode), h("span", { class: "k" }, "k=" + s.k), h("span", { class: "marks" }, marks)),
        h("div", { class: "line2" }, h("span", { class: "pred", title: "parsed prediction" }, s.prediction ?? (s.response ?? "(no response)")), h("span", { class: "arrow" }, "→"), h("span", { class: "target", title: "target" }, s.target ?? "")));
    });
    const more = state.matches.length > state.shown
      ? h("button", { class: "more", onclick: () => { state.shown += PAGE; renderList(); } }, `show ${Math.min(PAGE, state.matches.length - state.shown)} more`)
      : "";
    list.replaceChildren(h("div", { class: "list-head", id: "match-count" }, `${state.matches.length} of ${data.samples.length} samples`), ...rows, more);
  }

  async function selectSample(id, userClick) {
    const summary = state.data.samples.find((s) => s.id === id);
    if (!summary) return;
    state.selected = summary;
    for (const el of document.querySelectorAll("#sample-list .item")) el.classList.toggle("selected", el.dataset.id === id);
    if (userClick) { state.params.set("sel", id); setHash("samples", state.run, state.params); }
    const box = document.getElementById("sample-detail");
    box.replaceChildren(h("p", { class: "loading" }, "Rebuilding the audio…"));
    const detail = await load(`run/${state.run}/sample/${id}`);
    if (state.selected !== summary) return;
    box.replaceChildren(detail ? renderDetail(detail, state.data) : h("p", { class: "notice warn" }, "This sample could not be loaded."));
  }

  function onKey(e) {
    if (parseHash().view !== "samples" || !state.selected || /INPUT|SELECT|TEXTAREA/.test(e.target.tagName)) return;
    const at = state.matches.findIndex((s) => s.id === state.selected.id);
    const next = e.key === "ArrowDown" || e.key === "j" ? at + 1 : e.key === "ArrowUp" || e.key === "k" ? at - 1 : null;
    if (next === null || next < 0 || next >= state.matches.length) return;
    e.preventDefault();
    if (next >= state.shown) { state.shown += PAGE; renderList(); }
    selectSample(state.matches[next].id, true);
    const row = document.querySelector(`#sample-list .item[data-id="${CSS.escape(state.matches[next].id)}"]`);
    if (row) row.scrollIntoView({ block: "nearest" });
  }

  // -------------------------------------------------------------------------------------- one sample
  function clipView(part) {
    const head = h("div", { class: "clip-head" },
      part.place ? h("span", { class: "place" }, part.place + (part.role && !["demo", "query", "context"].includes(part.role) ? " · " + part.role : "")) : null,
      part.label !== null && part.label !== undefined ? h("span", { class: "label", title: "label in the episode: " + part.label }, part.label) : null,
      h("span", { class: "dur" }, fmt(part.seconds, 2) + " s"));
    if (part.status === "ok") {
      return h("span", { class: "clip ok", dataset: { sha: part.sha256, seconds: part.seconds } }, head, player(part.url, part.seconds));
    }
    return h("span", { class: "clip missing", dataset: { sha: part.sha256, seconds: part.seconds }, title: "sha256 " + part.sha256 },
      head, h("span", { class: "why" }, "⚠ " + part.note), h("code", { class: "sha" }, part.sha256.slice(0, 16) + "…"));
  }

  // A player whose clock shows tenths of a second: the browser's own controls show 0:00 for a clip under 1 s.
  function player(url, seconds) {
    const audio = h("audio", { preload: "metadata", src: url });
    const button = h("button", { class: "play", type: "button", title: "play", "aria-label": "play" }, "▶");
    const bar = h("input", { class: "seek", type: "range", min: 0, max: 1000, value: 0, "aria-label": "position" });
    const clock = h("span", { class: "clock" });
    const length = () => (Number.isFinite(audio.duration) ? audio.duration : seconds || 0);
    const show = () => {
      clock.textContent = `${audio.currentTime.toFixed(1)} / ${length().toFixed(1)} s`;
      bar.value = length() ? String(Math.round((1000 * audio.currentTime) / length())) : "0";
      button.textContent = audio.paused ? "▶" : "❚❚";
      button.title = button.ariaLabel = audio.paused ? "play" : "pause";
    };
    button.addEventListener("click", () => (audio.paused ? audio.play() : audio.pause()));
    bar.addEventListener("input", () => { audio.currentTime = (Number(bar.value) / 1000) * length(); });
    for (const event of ["timeupdate", "play", "pause", "ended", "loadedmetadata"]) audio.addEventListener(event, show);
    show();
    return h("span", { class: "player" }, audio, button, bar, clock);
  }

  function conversation(detail) {
    return h("div", { class: "conversation" }, detail.messages.map((m) =>
      h("div", { class: "msg " + m.role }, h("div", { class: "role" }, m.role),
        h("div", { class: "body" }, m.parts.map((part) => part.type === "audio" ? clipView(part) : h("span", { class: "text" }, part.text))))));
  }

  function verdictTable(rows) {
    if (!rows.length) return null;
    return h("table", { class: "verdicts" },
      h("thead", null, h("tr", null, ["judge role", "judge", "verdict", "each order", "raw reply", "error"].map((t) => h("th", null, t)))),
      h("tbody", null, rows.map((v) => h("tr", { class: v.failed ? "failed" : "" },
        h("td", null, v.role), h("td", null, v.judge), h("td", { class: "num" }, v.failed ? badge("failed", "bad") : fmt(v.value, 2)),
        h("td", { class: "num" }, v.values ? v.values.map((x) => fmt(x, 2)).join(" / ") : "—"),
        h("td", null, v.raw.map((r, i) => h("pre", { class: "raw" }, (v.raw.length > 1 ? `[order ${i + 1}] ` : "") + fmt(r)))),
        h("td", null, v.error ? h("span", { class: "bad-text" }, v.error) : "—")))));
  }

  function scoreTable(scores) {
    const names = Object.keys(scores);
    if (!names.length) return h("p", { class: "muted" }, "No scores (the model gave no answer).");
    return h("table", { class: "scores" }, h("tbody", null, names.map((n) => h("tr", null, h("td", { class: "mono" }, n), h("td", { class: "num" }, fmt(scores[n], 4))))));
  }

  function audioSummary(detail) {
    const a = detail.audio;
    if (!a.clips) return null;
    const clips = a.clips === 1 ? "clip" : "clips";
    if (a.playable === a.clips) return h("div", { class: "audio-ok" }, (a.clips === 1 ? "The clip was" : `All ${a.clips} clips were`) + " rebuilt from the run's task config and verified against the logged sha256.");
    return h("div", { class: "notice warn audio-bad" }, `${a.clips - a.playable} of ${a.clips} ${clips} cannot be played: ` +
      (a.problem || "cannot be regenerated (sha256 differs): the builder now produces other audio than this run logged (another audioeval version or a changed builder)."));
  }

  // A spoken answer: its audio beside both texts, the scored one marked, the ASR named.
  function spokenView(s) {
    if (!s) return null;
    const scored = (which) => (s.scored === which ? badge("scored", "ok", "the text the parser and judges saw") : null);
    const text = (value, error) => (value === null || value === undefined
      ? h("pre", { class: "bad-text" }, error || "(none)") : h("pre", null, value));
    return h("div", { class: "spoken" },
      h("div", { class: "field-block spoken-audio" }, h("h4", null, "Spoken answer", h("span", { class: "muted" }, ` · ${fmt(s.seconds, 2)} s · ${s.sampling_rate} Hz`)),
        s.url ? h("span", { class: "clip ok", dataset: { sha: s.sha256, seconds: s.seconds } }, player(s.url, s.seconds))
          : h("p", { class: "muted" }, "audio not in the run folder (spoken/" + (s.sha256 || "?") + ".wav)"),
        h("dl", { class: "facts small" }, [["time to first audio", s.time_to_first_audio_s === null || s.time_to_first_audio_s === undefined ? "— (not streamed)" : fmt(s.time_to_first_audio_s, 3) + " s"], ["generation", fmt(s.generation_s, 3) + " s"],
          ["real-time factor", fmt(s.real_time_factor, 3)]].map(([k, v]) => h("div", null, h("dt", null, k), h("dd", null, v))))),
      h("div", { class: "pair" },
        h("div", { class: "field-block spoken-transcript" }, h("h4", null, "Model's transcript ", scored("transcript")), text(s.transcript, "(the model gave none)")),
        h("div", { class: "field-block spoken-asr" }, h("h4", null, `ASR (${s.asr}) `, scored("asr")), text(s.asr_text, s.asr_error))));
  }

  function renderDetail(d, data) {
    const outcome = data ? outcomeOf(data, data.samples.find((s) => s.id === d.id) || { scores: d.scores, task: d.task }, state.params) : null;
    const head = h("div", { class: "detail-head" },
      h("h2", null, d.task, h("span", { class: "muted" }, ` · episode ${d.episode}` + (d.episode_id ? ` (${d.episode_id})` : "") + ` · k = ${d.k}`)),
      h("div", { class: "marks" },
        outcome === "correct" ? badge("correct", "ok") : outcome === "incorrect" ? badge("incorrect", "bad") : null,
        d.parse_failure ? badge("parse failure", "warn") : null,
        d.verdicts.some((v) => v.failed) ? badge("judge failure", "bad") : null,
        d.error ? badge("model error", "bad") : null,
        badge(d.cached ? "from cache" : "generated", "muted", "whether the answer came from the response cache"),
        d.latency_s !== null && d.latency_s !== undefined ? badge(fmt(d.latency_s, 3) + " s", "muted", "latency") : null));
    const answer = h("div", { class: "answer" },
      h("div", { class: "field-block response" }, h("h4", null, "Response"), d.error ? h("pre", { class: "bad-text" }, d.error) : h("pre", null, d.response ?? "(none)")),
      h("div", { class: "pair" },
        h("div", { class: "field-block" }, h("h4", null, "Parsed prediction"), h("pre", { class: d.parse_failure ? "bad-text" : "" }, d.parse_failure ? "(parse failure)" : fmt(d.prediction))),
        h("div", { class: "field-block" }, h("h4", null, "Target"), h("pre", null, fmt(d.target)))));
    const spoken = spokenView(d.spoken);
    const facts = h("dl", { class: "facts small" },
      [["audio", fmt(d.audio_seconds, 2) + " s"], ["latency", fmt(d.latency_s, 4) + " s"], ["cached", fmt(d.cached)],
        ["generation", d.gen_kwargs ? Object.entries(d.gen_kwargs).map(([k, v]) => `${k}=${v}`).join(", ") : "—"],
        ["request key", d.request_key ? d.request_key.slice(0, 16) + "…" : "—"]].map(([k, v]) => h("div", null, h("dt", null, k), h("dd", null, v))));
    const more = [
      d.metadata ? h("details", null, h("summary", null, `Episode metadata (from the ${d.metadata_source})`), h("pre", null, pretty(d.metadata))) : null,
      d.response_info ? h("details", null, h("summary", null, "Response info"), h("pre", null, pretty(d.response_info))) : null,
      Object.keys(d.other || {}).length ? h("details", null, h("summary", null, "Other fields"), h("pre", null, pretty(d.other))) : null,
    ];
    return h("article", { class: "sample", dataset: { id: d.id } }, head, audioSummary(d),
      h("h3", null, "Conversation"), conversation(d),
      h("h3", null, "Answer"), spoken, answer,
      h("div", { class: "two" }, h("div", null, h("h4", null, "Scores"), scoreTable(d.scores)), h("div", null, h("h4", null, "Details"), facts)),
      d.verdicts.length ? [h("h4", null, "Judge verdicts"), verdictTable(d.verdicts)] : null,
      more);
  }

  // ------------------------------------------------------------------------------------------- compare
  async function showCompare(params) {
    main.className = "page wide";
    main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    const data = await load("compare");
    const runs = data.runs;
    const intro = runs.length < 2
      ? h("div", { class: "notice" }, "Compare puts two or more runs side by side: start the viewer with several run folders, e.g. ",
        h("code", null, "audioeval view results/model_a/<time> results/model_b/<time>"), ".")
      : null;
    const plots = h("section", { class: "card", id: "shot-scaling" });
    const diffs = h("section", { class: "card", id: "paired-differences" });
    const side = h("section", { class: "card", id: "side-by-side" });
    main.replaceChildren(intro || "", plots, diffs, side);
    renderScaling(plots, data, params);
    renderDifferences(diffs, data);
    if (runs.length >= 2) await renderSideBySide(side, runs, params); else side.remove();
  }

  function legend(runs) {
    return h("div", { class: "legend" }, runs.map((r) => h("span", { class: "run-key" }, h("i", { class: "dot", dataset: { color: runColor(r.id) } }), r.label)));
  }

  function paintDots(root) { for (const dot of root.querySelectorAll(".dot")) dot.style.background = dot.dataset.color; }

  function renderScaling(box, data, params) {
    const metricNames = [...new Set(data.series.flatMap((s) => s.metrics))];
    const chosen = params.get("metric") || "";
    const picker = h("select", { id: "compare-metric", onchange: (e) => { if (e.target.value) params.set("metric", e.target.value); else params.delete("metric"); setHash("compare", 0, params); renderScaling(box, data, params); } },
      h("option", { value: "" }, "each task's first metric"), metricNames.map((m) => h("option", { value: m, selected: m === chosen }, m)));
    const charts = data.series
      .filter((s) => (chosen ? s.metrics.includes(chosen) : s.metrics.length))
      .map((s) => ({ series: s, metric: chosen || s.metrics[0] }))
      .filter(({ series, metric }) => new Set(Object.values(series.points[metric] || {}).flat().map((p) => p[0])).size >= 2);
    box.replaceChildren(
      h("div", { class: "section-head" }, h("h2", null, "Shot scaling across runs"), h("label", { class: "inline" }, "metric ", picker)),
      h("p", { class: "muted" }, "Each task's (and group's) metric against the number of in-context examples k, one line per run; shaded bars are the 95% bootstrap CIs."),
      legend(data.runs),
      charts.length ? h("div", { class: "charts" }, charts.map(({ series, metric }) => chart(series, metric))) : h("p", { class: "muted" }, "No task was run at two or more shot counts."));
    paintDots(box);
  }

  function signed(v, digits = 3) { return typeof v === "number" ? (v >= 0 ? "+" : "") + v.toFixed(digits) : "—"; }

  // each run against the first: the difference with its 95% CI, Holm-adjusted p and, for right/wrong scores,
  // links to the episodes where the two disagree (either way)
  function renderDifferences(box, data) {
    const d = data.differences;
    if (!d) { box.remove(); return; }
    const base = data.runs[d.baseline];
    const others = data.runs.filter((r) => r.id !== d.baseline);
    const link = (row, other, which, count, title) => h("a", { class: "disagree", title, href: `#/compare?task=${encodeURIComponent(row.name)}&k=${row.k}&differ=${which}&vs=${other.id}` }, String(count));
    const cells = (row) => others.map((other) => {
      const diff = row.differences[other.id];
      if (!diff) return h("td", null, "—");
      // a proportion's difference in percentage points, as every table shows proportions in %
      const pp = (v) => (row.percent && typeof v === "number" ? signed(v * 100, 1) : signed(v));
      const ci = (diff.ci95 ? ` [${pp(diff.ci95[0])}, ${pp(diff.ci95[1])}]` : "") + (row.percent ? " pp" : "");
      const p = typeof diff.p_holm === "number" ? (diff.p_holm < 0.001 ? "<0.001" : diff.p_holm.toFixed(3)) : "—";
      const marks = row.kind === "task" && diff.base_only !== null
        ? h("span", { class: "muted" }, " · ", link(row, other, "a", diff.base_only, `${base.label} right, ${other.label} wrong`), " / ", link(row, other, "b", diff.other_only, `${base.label} wrong, ${other.label} right`))
        : null;
      return h("td", { class: typeof diff.p_holm === "number" && diff.p_holm < 0.05 ? "significant" : null }, pp(diff.value) + ci, h("span", { class: "muted" }, ` p=${p}`), marks);
    });
    box.replaceChildren(
      h("h2", null, `Paired differences against ${base.label}`),
      d.notes.map((note) => h("p", { class: "notice" }, note)),
      h("p", { class: "muted" }, d.paired
        ? `Δ = run − ${base.label} over the episodes both logged, 95% paired bootstrap CI (${d.resamples} resamples), p Holm-adjusted across the table (McNemar for right/wrong scores, else sign-flip permutations); the two counts open the episodes where ${base.label} is right and the other wrong, and the reverse. \`audioeval compare\` gives the full table.`
        : "Unpaired: Δ from the runs' reported values and standard errors."),
      d.rows.length ? h("div", { class: "table-wrap" }, h("table", null,
        h("thead", null, h("tr", null, h("th", null, "task / group"), h("th", null, "k"), h("th", null, "metric"), others.map((r) => h("th", null, "Δ ", r.label)))),
        h("tbody", null, d.rows.map((row) => h("tr", null, h("td", null, row.kind === "group" ? badge("group", "muted") : null, " ", row.name), h("td", null, row.k ?? row.setting), h("td", null, row.metric + (row.lower_is_better ? " ↓" : "")), cells(row))))))
        : h("p", { class: "muted" }, "Nothing to compare."));
  }

  function chart(series, metric) {
    const W = 330, H = 210, L = 46, R = 12, T = 12, B = 34;
    const byRun = series.points[metric] || {};
    const ks = [...new Set(Object.values(byRun).flat().map((p) => p[0]))].sort((a, b) => a - b);
    const values = Object.values(byRun).flat().flatMap((p) => [p[1], p[2], p[3]]).filter((v) => typeof v === "number");
    let lo = Math.min(...values), hi = Math.max(...values);
    // a proportion (every value and CI bound in [0, 1]) is drawn in %, on its whole scale, as every table shows it
    const percent = lo >= 0 && hi <= 1;
    const scale = percent ? 100 : 1, unit = percent ? "%" : "";
    if (percent) { lo = 0; hi = 100; } else { const pad = (hi - lo || 1) * 0.08; lo -= pad; hi += pad; }
    const x = (k) => L + (ks.length === 1 ? (W - L - R) / 2 : (ks.indexOf(k) * (W - L - R)) / (ks.length - 1));
    const y = (v) => T + (1 - (v * scale - lo) / (hi - lo || 1)) * (H - T - B);
    const grid = [];
    for (let i = 0; i <= 4; i++) {
      const v = lo + ((hi - lo) * i) / 4;
      grid.push(svg("line", { x1: L, x2: W - R, y1: y(v / scale), y2: y(v / scale), class: "grid" }), svg("text", { x: L - 6, y: y(v / scale) + 4, class: "tick", "text-anchor": "end" }, percent ? fmt(v, 0) : fmt(v, Math.abs(hi - lo) < 5 ? 2 : 1)));
    }
    for (const k of ks) grid.push(svg("text", { x: x(k), y: H - B + 16, class: "tick", "text-anchor": "middle" }, String(k)));
    grid.push(svg("text", { x: (L + W - R) / 2, y: H - 4, class: "axis", "text-anchor": "middle" }, "k (in-context examples)"));
    const lines = Object.entries(byRun).map(([run, pts]) => {
      const color = runColor(Number(run));
      const sorted = [...pts].sort((a, b) => a[0] - b[0]);
      const d = sorted.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
      return svg("g", { class: "series", "data-run": run },
        sorted.filter((p) => typeof p[2] === "number" && typeof p[3] === "number").map((p) => svg("line", { x1: x(p[0]), x2: x(p[0]), y1: y(p[2]), y2: y(p[3]), stroke: color, class: "ci" })),
        svg("path", { d, stroke: color, class: "line" }),
        sorted.map((p) => svg("circle", { cx: x(p[0]), cy: y(p[1]), r: 3.5, fill: color }, svg("title", null, `run ${run}: k=${p[0]} ${metric}=${shown(p[1], 4)}${unit}` + (p[2] !== null ? ` [${shown(p[2], 3)}, ${shown(p[3], 3)}]` : "") + ` n=${p[4]}`))));
    });
    function shown(v, digits) { return percent ? fmt(v * 100, 1) : fmt(v, digits); }
    return h("figure", { class: "chart" }, h("figcaption", null, series.kind === "group" ? badge("group", "muted") : null, " ", series.name, h("span", { class: "muted" }, " · " + metric + (percent ? " (%)" : ""))),
      svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": `${series.name} ${metric} by k` }, grid, lines));
  }

  async function renderSideBySide(box, allRuns, params) {
    const loadedRuns = await Promise.all(allRuns.map((r) => load(`run/${r.id}/samples`)));
    const tasks = [...new Set(loadedRuns.flatMap((d) => (d && d.tasks) || []))].filter((t) => loadedRuns.filter((d) => d && d.tasks.includes(t)).length >= 2);
    if (!tasks.length) {
      box.replaceChildren(h("h2", null, "Same episode, side by side"), h("p", { class: "muted" }, "No task has logged samples in two or more of these runs (run them with --log_samples)."));
      return;
    }
    const task = tasks.includes(params.get("task")) ? params.get("task") : tasks[0];
    // the runs that logged this task, side by side
    const runs = allRuns.filter((r, i) => loadedRuns[i] && loadedRuns[i].tasks.includes(task));
    const all = runs.map((r) => loadedRuns[allRuns.indexOf(r)]);
    const byId = all.map((d) => new Map(d.samples.map((s) => [s.id, s])));
    const ids = [...new Set(all.flatMap((d) => ((d && d.samples) || []).filter((s) => s.task === task).map((s) => s.id)))];
    const shots = [...new Set(ids.map((id) => Number(id.split("/").pop())))].sort((a, b) => a - b);
    const k = shots.includes(Number(params.get("k"))) ? Number(params.get("k")) : shots[0];
    const differ = params.get("differ") || "";
    const vs = Math.max(1, runs.findIndex((r) => String(r.id) === params.get("vs")));
    const verdict = (i, s) => (all[i] && s ? outcomeOf(all[i], s, new URLSearchParams()) : null);
    const episodes = [...new Set(ids.filter((id) => id.endsWith("/" + k)).map((id) => Number(id.split("/").slice(-2)[0])))].sort((a, b) => a - b)
      .filter((ep) => {
        if (!differ) return true;
        const marks = runs.map((r, i) => verdict(i, byId[i].get(`${task}/${ep}/${k}`)));
        if (differ === "yes") return new Set(marks.filter(Boolean)).size > 1;
        const [first, other] = [marks[0], marks[vs]];  // "a": the first run right, the other wrong; "b" the reverse
        return differ === "a" ? first === "correct" && other === "incorrect" : first === "incorrect" && other === "correct";
      });
    const ep = episodes.includes(Number(params.get("ep"))) ? Number(params.get("ep")) : episodes[0];
    const go = (key, value) => { params.set(key, value); if (key !== "ep") params.delete("ep"); setHash("compare", 0, params); renderSideBySide(box, allRuns, params); };
    const controls = h("div", { class: "controls" },
      select("cmp-task", "task", tasks.map((t) => [t, t]), task, (v) => go("task", v)),
      select("cmp-k", "k", shots.map((s) => [s, "k = " + s]), k, (v) => go("k", v)),
      select("cmp-differ", "episodes", [["", "all"], ["yes", "where the runs' outcomes differ"],
        ["a", `${runs[0].label} right, ${(runs[vs] || runs[0]).label} wrong`], ["b", `${runs[0].label} wrong, ${(runs[vs] || runs[0]).label} right`]], differ, (v) => go("differ", v)));
    const strip = h("div", { class: "episode-strip" }, episodes.map((e) => h("button", { class: "ep-chip" + (e === ep ? " selected" : ""), onclick: () => go("ep", e) },
      "#" + e, runs.map((r, i) => {
        const v = verdict(i, byId[i].get(`${task}/${e}/${k}`));
        return h("i", { class: "mini " + (v || "absent"), title: `${r.label}: ${v || "not in this run"}` });
      }))));
    box.replaceChildren(h("h2", null, "Same episode, side by side"), controls, strip);
    if (ep === undefined) { box.append(h("p", { class: "muted" }, "No episode matches.")); return; }
    const id = `${task}/${ep}/${k}`;
    const details = await Promise.all(runs.map((r, i) => (byId[i].has(id) ? load(`run/${r.id}/sample/${id}`) : null)));
    const first = details.find(Boolean);
    const sameprompt = (a, b) => JSON.stringify(a.messages.map((m) => m.parts.map((p) => p.sha256 || p.text))) === JSON.stringify(b.messages.map((m) => m.parts.map((p) => p.sha256 || p.text)));
    const columns = runs.map((r, i) => {
      const d = details[i];
      const head = h("div", { class: "col-head" }, h("i", { class: "dot", dataset: { color: runColor(r.id) } }), r.label);
      if (!d) return h("div", { class: "col" }, head, h("p", { class: "muted" }, "Not in this run."));
      const outcome = verdict(i, byId[i].get(d.id));
      return h("div", { class: "col", dataset: { run: r.id } }, head,
        h("div", { class: "marks" }, outcome === "correct" ? badge("correct", "ok") : outcome === "incorrect" ? badge("incorrect", "bad") : badge("not scored", "muted"),
          d.parse_failure ? badge("parse failure", "warn") : null, d.cached ? badge("from cache", "muted") : null,
          first && !sameprompt(first, d) ? badge("different prompt", "warn", "this run's prompt or audio differs from the first run's") : null),
        h("h4", null, "Response"), d.error ? h("pre", { class: "bad-text" }, d.error) : h("pre", { class: "response" }, d.response ?? "(none)"),
        h("h4", null, "Parsed prediction"), h("pre", null, d.parse_failure ? "(parse failure)" : fmt(d.prediction)),
        h("h4", null, "Target"), h("pre", null, fmt(d.target)),
        h("h4", null, "Scores"), scoreTable(d.scores),
        d.verdicts.length ? [h("h4", null, "Judge verdicts"), verdictTable(d.verdicts)] : null);
    });
    box.append(h("div", { class: "columns", dataset: { count: runs.length } }, columns));
    if (first) box.append(h("h3", null, "Conversation (as the first run logged it)"), audioSummary(first) || "", conversation(first));
    paintDots(box);
    for (const col of box.querySelectorAll(".columns")) col.style.gridTemplateColumns = `repeat(${runs.length}, minmax(0, 1fr))`;
  }

  start();
})();
