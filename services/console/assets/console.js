/* global document, EventSource */
// The console works without this script (every view is a plain page); with it, panels refresh themselves from the
// server's live feed: run changes refresh what shows runs, the periodic tick refreshes streams and dead letters.
(() => {
  const status = document.getElementById("live-status");
  const say = (text) => {
    if (status) status.textContent = text;
  };
  const REFRESHED_BY = {
    "run-update": ["devices", "runs", "result", "problems"],
    tick: ["pipeline", "devices"],
  };
  const pending = new Set();
  let timer;
  async function refresh(name) {
    const panel = document.querySelector(`[data-panel="${name}"]`);
    if (!panel || panel.contains(document.activeElement)) return;
    const response = await fetch(panel.dataset.src, { credentials: "same-origin" });
    if (!response.ok) return say(`Live updates: refresh failed (${response.status})`);
    const template = document.createElement("template");
    template.innerHTML = await response.text();
    const fresh = template.content.firstElementChild;
    if (fresh) panel.replaceWith(fresh);
  }
  function schedule(names) {
    for (const name of names) pending.add(name);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const names = [...pending];
      pending.clear();
      Promise.all(names.map(refresh)).catch((error) => say(`Live updates: ${error}`));
    }, 250);
  }
  const feed = new EventSource(document.body.dataset.events ?? "/console/events");
  feed.addEventListener("ready", () => say("Live updates: on"));
  feed.addEventListener("run-update", () => schedule(REFRESHED_BY["run-update"]));
  feed.addEventListener("tick", () => schedule(REFRESHED_BY.tick));
  // The server ends the feed when the operator's token expires or is revoked; reconnecting would only be refused.
  feed.addEventListener("signed-out", (event) => {
    feed.close();
    say(`Live updates: off (token ${event.data}); sign in again`);
  });
  feed.onerror = () => say("Live updates: reconnecting…");
})();
