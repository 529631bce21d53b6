import { describe, expect, it } from "vitest";
import { Keyspace } from "../redis/keyspace.js";
import { classKeys, expectCommittedInclude, layoutKeys } from "../../test/helpers/key-layout-check.js";
import { HARNESS_DEVICE_KEYS, HARNESS_KEY_INCLUDES, HarnessDeviceKeys } from "./harness-keys.js";

describe("the Harness key layout has one home", () => {
  it("HarnessDeviceKeys names every key of a device exactly as HARNESS_DEVICE_KEYS spells it, and no other", () => {
    const device = new HarnessDeviceKeys(new Keyspace("p"), "lamp-1");
    expect(classKeys(device)).toEqual(layoutKeys(device.base, HARNESS_DEVICE_KEYS));
    expect(device.reservation("k-1")).toBe("p:h:{d:lamp-1}:res:k-1");
    expect(device.eventLog).toBe("p:h:{d:lamp-1}:event-log");
  });

  it.each(HARNESS_KEY_INCLUDES.map((include) => [include.file, include] as const))(
    "%s is what npm run lua:keys generates from the layout",
    (_file, include) => expectCommittedInclude(include),
  );
});
