import { describe, expect, it } from "vitest";
import { Keyspace } from "../redis/keyspace.js";
import { classKeys, expectCommittedInclude, layoutKeys } from "../../test/helpers/key-layout-check.js";
import {
  OS_DEVICE_KEYS,
  OS_KEY_INCLUDES,
  OS_PARTITION_KEYS,
  OsDeviceKeys,
  OsPartitionKeys,
} from "./os-keys.js";

describe("the OS key layout has one home", () => {
  const keys = new Keyspace("p");

  it("OsDeviceKeys names every key of a device exactly as OS_DEVICE_KEYS spells it, and no other", () => {
    const device = new OsDeviceKeys(keys, "lamp-1");
    expect(classKeys(device)).toEqual(layoutKeys(device.base, OS_DEVICE_KEYS));
    expect(device.run("r-1")).toBe("p:os:{d:lamp-1}:run:r-1");
    expect(device.pendingRuns).toBe("p:os:{d:lamp-1}:runs:pending");
  });

  it("OsPartitionKeys names every key of a partition exactly as OS_PARTITION_KEYS spells it, and no other", () => {
    const partition = new OsPartitionKeys(keys, 2);
    expect(classKeys(partition)).toEqual(layoutKeys(partition.base, OS_PARTITION_KEYS));
    expect(partition.devices).toBe("p:os:{part:2}:devices");
  });

  it.each(OS_KEY_INCLUDES.map((include) => [include.file, include] as const))(
    "%s is what npm run lua:keys generates from the layout",
    (_file, include) => expectCommittedInclude(include),
  );
});
