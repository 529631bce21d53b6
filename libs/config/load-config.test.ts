import { describe, expect, it } from "vitest";
import { z } from "zod";
import { baseEnvSchema, envBool, envInt } from "./env-fields.js";
import { ConfigError, parseConfig } from "./load-config.js";
import { TsProcess } from "../../test/helpers/child-process.js";

describe("configuration", () => {
  it("applies defaults when the environment says nothing", () => {
    const config = parseConfig(baseEnvSchema, {});
    expect(config.KEY_PREFIX).toBe("ll");
    expect(config.PORT).toBe(8080);
    expect(config.STREAM_MAX_DELIVERIES).toBe(5);
  });

  it("names the variable at fault", () => {
    expect(() => parseConfig(baseEnvSchema, { PORT: "eighty" })).toThrow(ConfigError);
    expect(() => parseConfig(baseEnvSchema, { PORT: "eighty" })).toThrow(/^invalid configuration: PORT: /);
    expect(() => parseConfig(baseEnvSchema, { REDIS_URL: "not a url" })).toThrow(/REDIS_URL/);
    expect(() => parseConfig(baseEnvSchema, { KEY_PREFIX: "has space" })).toThrow(/KEY_PREFIX/);
  });

  it("parses booleans and bounded integers from strings", () => {
    const schema = z.object({ ON: envBool(false), N: envInt(1, 0, 10) });
    expect(parseConfig(schema, { ON: "yes", N: "7" })).toEqual({ ON: true, N: 7 });
    expect(() => parseConfig(schema, { N: "11" })).toThrow(/^invalid configuration: N: /);
  });

  it("stops a service process at boot with one line naming the variable and exit code 78", async () => {
    const child = new TsProcess("services/all-in-one/main.ts", {
      PORT: "not-a-port",
      REDIS_URL: "redis://127.0.0.1:1",
    });
    const code = await child.exit();
    expect(code).toBe(78);
    expect(child.log.trim().split("\n")).toEqual([expect.stringMatching(/^invalid configuration: PORT: /)]);
    // Starting tsx and loading every service module takes a while on a loaded 2-core machine.
  }, 90_000);
});
