import { describe, expect, it } from "vitest";
import { STALL_MS } from "../timing/stall.js";
import { PeerSilence } from "./peer-silence.js";

const SETTINGS = { pingIntervalMs: 10_000, pongTimeoutMs: 20_000 };

/** Ticks at the given times (ms since the socket opened) with pongs between them; returns the last verdict. */
function verdictAfter(events: Array<{ tick: number } | { pong: number }>) {
  const silence = new PeerSilence(SETTINGS, 0);
  let verdict: ReturnType<PeerSilence["tick"]> | undefined;
  for (const event of events)
    if ("tick" in event) verdict = silence.tick(event.tick);
    else silence.pong(event.pong);
  return verdict;
}

describe("PeerSilence: a peer is judged by time this process observed", () => {
  it("keeps pinging a peer that answers every ping", () => {
    expect(
      verdictAfter([
        { tick: 10_000 },
        { pong: 10_005 },
        { tick: 20_000 },
        { pong: 20_004 },
        { tick: 30_000 },
      ]),
    ).toEqual({ kind: "ping" });
  });

  it("gives up a peer silent for the pong timeout on schedule", () => {
    expect(verdictAfter([{ tick: 10_000 }, { tick: 20_000 }])).toEqual({ kind: "dead", silentForMs: 20_000 });
  });

  it("counts a tick late by less than a stall as observed time", () => {
    expect(verdictAfter([{ tick: 10_000 }, { tick: 20_000 + STALL_MS - 1 }])).toEqual({
      kind: "dead",
      silentForMs: 20_000 + STALL_MS - 1,
    });
  });

  it("after a stall pings the peer again instead of judging it by the process's own pause", () => {
    expect(verdictAfter([{ tick: 10_000 }, { pong: 10_005 }, { tick: 45_000 }])).toEqual({ kind: "ping" });
  });

  it("after a stall gives even a peer already silent before it a whole pong timeout to answer", () => {
    const silence = new PeerSilence(SETTINGS, 0);
    expect(silence.tick(10_000)).toEqual({ kind: "ping" });
    expect(silence.tick(50_000)).toEqual({ kind: "ping" });
    expect(silence.tick(60_000)).toEqual({ kind: "ping" });
    expect(silence.tick(70_000)).toEqual({ kind: "dead", silentForMs: 20_000 });
  });

  it("does not count time the socket was not being read as the peer's silence", () => {
    const silence = new PeerSilence(SETTINGS, 0);
    expect(silence.tick(10_000, false)).toEqual({ kind: "ping" });
    expect(silence.tick(20_000, false)).toEqual({ kind: "ping" });
    expect(silence.tick(30_000)).toEqual({ kind: "ping" });
    expect(silence.tick(40_000)).toEqual({ kind: "dead", silentForMs: 20_000 });
  });
});
