import { EventEmitter, once } from "node:events";

/** How much of the latest stdin the server keeps to match a held reply against (an input is a few hundred bytes). */
const KEPT_CHARS = 64 * 1024;

/**
 * What the CLI has been given on stdin so far (the sandbox relays it here), so a scripted reply can be held until
 * an input has reached the engine: a steer then lands mid-turn on any machine, however slow the path to it.
 */
export class GivenInputs {
  private given = "";
  private readonly changes = new EventEmitter();

  give(chunk: string): void {
    this.given = (this.given + chunk).slice(-KEPT_CHARS);
    this.changes.emit("given");
  }

  /** Resolves true once some input contained `text`; false after `limitMs` without it. */
  async until(text: string, limitMs: number): Promise<boolean> {
    const limit = AbortSignal.timeout(limitMs);
    while (!this.given.includes(text)) {
      try {
        await once(this.changes, "given", { signal: limit });
      } catch {
        return false;
      }
    }
    return true;
  }
}
