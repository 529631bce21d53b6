import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "../os/harness-peer.js";
import {
  AGENT,
  HARNESS_SECRET,
  osToken,
  MACHINE,
  osEnv,
  pushAndSettle,
  resultEvent,
} from "../os/os-fixture.js";
import { LampSimProcess } from "./lamp-sim-process.js";
import { OsStoreFixture } from "./os-store-fixture.js";
import { ttsTestEnv } from "./tts-service.js";

const GATEWAY = "gw-lamp-sim";
let t: TestRedis;
let os: OsStoreFixture;
let peer: ScriptedHarnessPeer;
let edge: HostedServices;
let tts: HostedServices | undefined;
const sims: LampSimProcess[] = [];
let deviceSeq = 0;

beforeAll(async () => {
  t = createTestRedis("tts-lampsim");
  os = new OsStoreFixture(t.redis, t.keys);
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
  edge = await hostServices(
    "test",
    [deviceGatewayService, routerService, runResolverService],
    osEnv(t, peer, { GATEWAY_INSTANCE_ID: GATEWAY, RECEIPT_WAIT_MS: "2000" }),
  );
  tts = await startTts();
});
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.stop();
});
afterAll(async () => {
  await tts?.stop();
  await edge.stop();
  await peer.close();
  await t.cleanup();
});

function startTts(): Promise<HostedServices> {
  return hostServices("test", [ttsDispatcherService], ttsTestEnv(t, { PLAYBACK_ACK_TIMEOUT_MS: "1500" }));
}

/** A lamp-sim process for a fresh device, with its output directory. */
async function lampSays(faults: string[], extra: string[] = []) {
  const deviceId = `lamp-sim-${++deviceSeq}`;
  const outDir = mkdtempSync(join(tmpdir(), "lamp-sim-test-"));
  const sim = new LampSimProcess([
    "--url",
    `${edge.url.replace("http", "ws")}/v1/lamp/ws`,
    "--token",
    await osToken(deviceId),
    "--out-dir",
    outDir,
    ...extra,
    ...faults,
  ]);
  sims.push(sim);
  return { deviceId, sim, outDir };
}

/** Answers the run the sim registered with a Harness turn.result, through router and run-resolver. */
async function answerRun(deviceId: string, sim: LampSimProcess, resultId: string, fullText: string) {
  await waitFor(() => peer.connected(deviceId), Boolean, { timeoutMs: 30_000 });
  const [answer] = await waitForResult(sim);
  const key = String(answer?.idempotencyKey);
  await pushAndSettle(
    t,
    peer,
    edge.url,
    deviceId,
    resultEvent({ resultId, members: [[`delivery-${key}`, key]], fullText }),
  );
  return { key, runId: String(answer?.runId) };
}

async function waitForResult(sim: LampSimProcess) {
  await waitFor(
    () => sim.received("voice.request_result").length,
    (n) => n >= 1,
    { timeoutMs: 60_000 },
  );
  return sim.received("voice.request_result");
}

const sayArgs = (text: string) => ["--say", text, "--agent", AGENT, "--machine", MACHINE, "--target", "desk"];

/** lamp-sim speaks into WAV files with espeak-ng when installed (`.ci/run` installs it), else into text files. */
const ESPEAK_INSTALLED = spawnSync("espeak-ng", ["--version"], { stdio: "ignore" }).status === 0;

describe("playback over the real Lamp WebSocket (lamp-sim → device-gateway → … → tts-dispatcher → lamp-sim)", () => {
  it("speaks the answer once, the Lamp's acks make it played, and playback.repeat speaks it exactly once more", async () => {
    const script = join(mkdtempSync(join(tmpdir(), "lamp-script-")), "steps.json");
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          { say: "how many planes?", agent: AGENT, machine: MACHINE, target: "desk" },
          { waitPlaybacks: 1 },
          { repeat: "last" },
          { waitPlaybacks: 2 },
        ],
      }),
    );
    const { deviceId, sim, outDir } = await lampSays([], ["--script", script, "--exit-after", "2"]);
    const { runId } = await answerRun(deviceId, sim, "r-sim-1", "## Count\nThere are **four** planes.");

    expect(await sim.exited).toBe(0);
    const starts = sim.received("playback.start");
    expect(starts).toHaveLength(2);
    expect(starts.map((frame) => frame.text)).toEqual([
      "Count. There are four planes.",
      "Count. There are four planes.",
    ]);
    expect(starts[0]).toMatchObject({ resultId: "r-sim-1", voiceTargetId: "desk" });
    expect(sim.received("playback.repeat_result")).toHaveLength(1);
    expect(readdirSync(outDir)).toHaveLength(2);
    const [firstFile = ""] = sim.of("played").map((event) => String(event.file));
    if (ESPEAK_INSTALLED) {
      const wav = readFileSync(firstFile);
      expect(firstFile).toMatch(/\.wav$/);
      expect([wav.subarray(0, 4).toString(), wav.subarray(8, 12).toString()]).toEqual(["RIFF", "WAVE"]);
      expect(wav.length).toBeGreaterThan(1_000);
    } else {
      expect(readFileSync(firstFile, "utf8")).toBe("Count. There are four planes.\n");
    }

    const resultKey = `originating-instance|r-sim-1`;
    // `finished` follows the speech synthesis (espeak-ng when installed), which is slow on a loaded machine.
    const entry = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (value) => value?.lastAck === "finished",
      { timeoutMs: 30_000 },
    );
    expect(entry).toMatchObject({ state: "played", lastAck: "finished", playbackId: starts[0]?.playbackId });
    const repeat = await waitFor(
      () => os.playback(deviceId, String(starts[1]?.playbackId)),
      (value) => value?.lastAck === "finished",
      { timeoutMs: 30_000 },
    );
    expect(repeat).toMatchObject({ kind: "repeat", state: "played" });
    expect(await t.redis.hget(os.device(deviceId).run(runId), "state")).toBe("resolved");
  }, 90_000);

  it("a lost ack leaves the entry uncertain and nothing is spoken again after tts-dispatcher restarts", async () => {
    const { deviceId, sim } = await lampSays(["--drop-acks"], sayArgs("are you there?"));
    await answerRun(deviceId, sim, "r-sim-lost", "Yes.");
    await sim.waitFor("ack.dropped", 2);
    const resultKey = "originating-instance|r-sim-lost";
    expect(
      await waitFor(
        () => os.outbox(deviceId, resultKey),
        (value) => value?.state === "uncertain",
      ),
    ).toMatchObject({ state: "uncertain", reason: "ack_timeout" });

    await tts?.stop();
    tts = await startTts();
    await os.publishResolved(deviceId, "originating-instance", "r-sim-lost");
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect(sim.received("playback.start")).toHaveLength(1);
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "uncertain" });
  });

  it("a Lamp that rejects the playback leaves the entry failed with lamp_rejected", async () => {
    const { deviceId, sim } = await lampSays(["--reject"], sayArgs("say no"));
    await answerRun(deviceId, sim, "r-sim-reject", "No.");
    expect(
      await waitFor(
        () => os.outbox(deviceId, "originating-instance|r-sim-reject"),
        (value) => value?.state === "failed",
      ),
    ).toMatchObject({ state: "failed", reason: "lamp_rejected", lastAck: "rejected" });
    expect(sim.received("playback.start")).toHaveLength(1);
  });

  it("a Lamp that drops the connection on receipt leaves the entry uncertain, never resent", async () => {
    const { deviceId, sim } = await lampSays(["--disconnect-after-receive"], sayArgs("hang up"));
    await answerRun(deviceId, sim, "r-sim-gone", "Bye.");
    expect(await sim.exited).toBe(1);
    const entry = await waitFor(
      () => os.outbox(deviceId, "originating-instance|r-sim-gone"),
      (value) => value?.state === "uncertain",
    );
    expect(entry).toMatchObject({ state: "uncertain", reason: "ack_timeout" });
    expect((await os.deliveries(GATEWAY)).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(
      1,
    );
  });
});
