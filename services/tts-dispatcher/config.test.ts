import { describe, expect, it } from "vitest";
import { parseConfig } from "../../libs/config/load-config.js";
import { ttsDispatcherEnvSchema } from "./config.js";

describe("tts-dispatcher configuration", () => {
  it("speaks a failure notice by default and waits for an offline Lamp with bounded re-checks", () => {
    expect(parseConfig(ttsDispatcherEnvSchema, {})).toMatchObject({
      FAILURE_NOTICE_TEXT: "That task failed. The details are on the screen.",
      PLAYBACK_OFFLINE_RECHECK_MS: 30_000,
      PLAYBACK_REPEAT_WAIT_MS: 300_000,
    });
  });

  it("turns the failure notice off with an empty FAILURE_NOTICE_TEXT", () => {
    expect(parseConfig(ttsDispatcherEnvSchema, { FAILURE_NOTICE_TEXT: "" }).FAILURE_NOTICE_TEXT).toBe("");
  });
});
