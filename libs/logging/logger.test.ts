import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";

/** A stream that says whether it is a terminal, as process.stdout does. */
function output(isTTY: boolean): NodeJS.WriteStream & { text: () => string } {
  const stream = new PassThrough();
  let written = "";
  stream.on("data", (chunk: Buffer) => (written += chunk.toString()));
  return Object.assign(stream, { isTTY, text: () => written }) as unknown as NodeJS.WriteStream & {
    text: () => string;
  };
}

// eslint-disable-next-line no-control-regex
const withoutColours = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "");

describe("process logs", () => {
  it("are one readable line per entry on a terminal: time, level, process, component, message, fields", () => {
    const terminal = output(true);
    createLogger("all-in-one", "info", undefined, terminal)
      .child({ component: "router" })
      .info({ deviceId: "lamp-1" }, "device session open");
    expect(withoutColours(terminal.text())).toMatch(
      /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO \(all-in-one\): router: device session open \{"deviceId":"lamp-1"\}\n$/,
    );
  });

  it("are JSON lines when the output is not a terminal", () => {
    const pipe = output(false);
    createLogger("all-in-one", "info", undefined, pipe).child({ component: "router" }).warn("lease lost");
    const lines = pipe.text().trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: 40,
      name: "all-in-one",
      service: "all-in-one",
      component: "router",
      msg: "lease lost",
    });
  });
});
