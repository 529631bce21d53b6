import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { afterEach, describe, expect, it } from "vitest";

import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { corpusAvailable } from "../helpers/corpus.js";
import { osReplayCases } from "../helpers/os-replay-cases.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "./harness-peer.js";
import {
  framesHandled,
  HARNESS_SECRET,
  osEnv,
  resolverIdle,
  seedRun,
  statesOf,
  entriesAppended,
} from "./os-fixture.js";

const DEVICE = "lamp-corpus";
let t: TestRedis;
let peer: ScriptedHarnessPeer;
let services: HostedServices;

afterEach(async () => {
  await services?.stop();
  await peer?.close();
  await t?.cleanup();
});

describe.skipIf(!corpusAvailable)(
  "OS replay cases from the openharness corpus (router + run-resolver)",
  () => {
    it.each(["turn-correlation-v2", "summary-correlation"])(
      "%s: every step resolves exactly the expected runs, speaks once per result, and resync resends nothing",
      async (profile) => {
        const cases = osReplayCases(profile);
        t = createTestRedis(`corpus-${profile}`);
        peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
        peer.originatingInstanceId = cases.originatingServerInstanceId;
        const runByDelivery: Record<string, string> = {};
        for (const input of cases.pending)
          runByDelivery[input.deliveryId] = await seedRun(t, peer, DEVICE, {
            key: input.idempotencyKey,
            deliveryId: input.deliveryId,
            serverInstanceId: cases.originatingServerInstanceId,
          });
        services = await hostServices("test", [routerService, runResolverService], osEnv(t, peer));
        // The router leases the device's partition first; on a busy machine that takes a few seconds.
        const hellos = await waitFor(
          () => peer.framesOf(DEVICE, "hello").length,
          (n) => n === 1,
          { timeoutMs: 30_000 },
        );
        expect(hellos, "the router opened the device's Harness session").toBe(1);

        for (const [index, step] of cases.steps.entries()) {
          const before = await statesOf(t, DEVICE, runByDelivery);
          const resolvedBefore = await entriesAppended(t, STREAM_CATALOG.osResolved.name);
          const handledBefore = await framesHandled(services.url);
          const sendsBefore = peer.framesOf(DEVICE, "turn.send").length;
          if (step.event.type === "resync") peer.transportInstanceId = String(step.event.serverInstanceId);
          peer.push(DEVICE, step.event);
          const handled = await waitFor(
            () => framesHandled(services.url),
            (n) => n === handledBefore + 1,
          );
          expect(handled, `step ${index} staged`).toBe(handledBefore + 1);
          expect(await waitFor(() => resolverIdle(t), Boolean)).toBe(true);

          const after = await statesOf(t, DEVICE, runByDelivery);
          const newlyResolved = Object.keys(after).filter(
            (delivery) => after[delivery] === "resolved" && before[delivery] !== "resolved",
          );
          const { expected } = step;
          if (expected.resolve)
            expect(newlyResolved.sort(), `step ${index} resolves`).toEqual(expected.resolve);
          for (const delivery of expected.pending ?? [])
            expect(after[delivery], `step ${index}: ${delivery} pending`).toBe("pending");
          if (expected.ttsEnqueueCount !== undefined)
            expect((await entriesAppended(t, STREAM_CATALOG.osResolved.name)) - resolvedBefore).toBe(
              expected.ttsEnqueueCount,
            );
          if (expected.resendInput === false) {
            // Reconciliation asks for every outstanding receipt; it never submits an input again.
            await waitFor(
              () => peer.framesOf(DEVICE, "receipt.get").length,
              (n) => n >= 1,
            );
            expect(peer.framesOf(DEVICE, "turn.send").length).toBe(sendsBefore);
          }
        }
        expect(peer.framesOf(DEVICE, "turn.send")).toHaveLength(0);
      },
    );
  },
);
