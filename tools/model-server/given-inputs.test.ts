import { describe, expect, it } from "vitest";
import { GivenInputs } from "./given-inputs.js";

describe("GivenInputs: what the CLI was given, for a reply or a file held until a steer arrives", () => {
  it("resolves once an input containing the text is given, also across chunks", async () => {
    const inputs = new GivenInputs();
    const held = inputs.until("Also say FOLDED", 5_000);
    inputs.give('{"type":"user","message":{"content":"Run the check."}}\n');
    inputs.give('{"type":"user","message":{"content":"Also say ');
    inputs.give('FOLDED."}}\n');
    await expect(held).resolves.toBe(true);
  });

  it("resolves at once for text given before the wait began", async () => {
    const inputs = new GivenInputs();
    inputs.give("Also say FOLDED.\n");
    await expect(inputs.until("Also say FOLDED", 5_000)).resolves.toBe(true);
  });

  it("gives up after its limit when the text never comes", async () => {
    const inputs = new GivenInputs();
    inputs.give("Run the check.\n");
    await expect(inputs.until("Also say FOLDED", 50)).resolves.toBe(false);
  });
});
