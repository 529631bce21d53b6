import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { baseEnvSchema } from "../config/env-fields.js";
import { parseConfig } from "../config/load-config.js";
import { Keyspace } from "../redis/keyspace.js";
import { consumerSettingsOf } from "../config/consumer-settings.js";
import { PIPELINE_STREAMS, STREAM_CATALOG } from "./catalog.js";
import { catalogSectionOf, renderStreamCatalog } from "./catalog-table.js";

const architecture = new URL("../../docs/architecture.md", import.meta.url);

describe("stream catalog", () => {
  it("is what docs/architecture.md shows between its catalog markers (npm run docs:catalog regenerates it)", () => {
    const expected = renderStreamCatalog();
    const documented = catalogSectionOf(readFileSync(architecture, "utf8"));
    expect(documented, `docs/architecture.md should show, between its markers:\n\n${expected}\n`).toBe(
      expected,
    );
  });

  it("dead-letters each pipeline stream where the stream consumer writes its dead letters", () => {
    const keys = new Keyspace("p", 3);
    expect(PIPELINE_STREAMS.length).toBeGreaterThan(0);
    for (const stream of PIPELINE_STREAMS) {
      if (stream.reading.kind !== "consumer-group") throw new Error(`${stream.name} has no consumer group`);
      expect(stream.reading.deadLetter).toBe(`${stream.name}:dlq`);
      for (const partition of [0, 2])
        expect(keys.deadLetter(stream.name, partition)).toBe(`${keys.stream(stream.name, partition)}:dlq`);
    }
  });

  it("names per-instance streams and groups after their instance", () => {
    expect(STREAM_CATALOG.lampDelivery("gw-1").name).toBe("os.lamp_delivery.gw-1");
    expect(STREAM_CATALOG.gatewayReplies("gw-1").name).toBe("os.gateway_replies.gw-1");
    expect(STREAM_CATALOG.harnessDispatch.consumers.engineRunner("m-1").group).toBe("engine-runner.m-1");
  });

  it("gives every stream its own name", () => {
    const names = Object.values(STREAM_CATALOG).map((entry) =>
      typeof entry === "function" ? entry("instance").name : entry.name,
    );
    expect(new Set(names).size).toBe(names.length);
  });

  it("reads each host consumer setting from the STREAM_* variable the catalog names", () => {
    const base = parseConfig(baseEnvSchema, {
      STREAM_BATCH_SIZE: "7",
      STREAM_BLOCK_MS: "11",
      STREAM_CLAIM_MIN_IDLE_MS: "1300",
      STREAM_MAX_DELIVERIES: "17",
      STREAM_RETRY_DELAY_MS: "19",
      STREAM_TRIM_INTERVAL_MS: "2300",
      DEAD_LETTER_MAX_LENGTH: "29",
    });
    expect(consumerSettingsOf(base)).toEqual({
      batchSize: 7,
      blockMs: 11,
      claimMinIdleMs: 1300,
      maxDeliveries: 17,
      retryDelayMs: 19,
      trimIntervalMs: 2300,
      deadLetterMaxLength: 29,
    });
  });
});
