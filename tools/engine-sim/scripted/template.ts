import { randomUUID } from "node:crypto";
import { mapDeep } from "../frames.js";

const WHOLE = /^\{\{([^{}]+)\}\}$/;
const ANYWHERE = /\{\{([^{}]+)\}\}/g;

/**
 * Fills scenario frame templates. A string that is exactly one placeholder becomes the value itself (a number,
 * null, an id); placeholders inside a longer string are interpolated. Placeholders:
 * - `A.field`: a field of the live frame bound as A (`uuid`, `text`, `id`, `clientId`, `requestId`, `turnId`, `method`);
 * - `id:name`: a UUID minted at first use, stable for one pass of the steps (a `repeat` pass mints new ones) (turns, items, messages);
 * - `session:name`: a UUID stable for the whole process (session and thread ids);
 * - `uuid`: a fresh UUID at every use (frame uuids);
 * - `now:ms`, `now:s`, `now:iso`: the current time.
 */
export class TemplateScope {
  private readonly bindings = new Map<string, Record<string, unknown>>();
  private readonly minted = new Map<string, string>();

  /** A new pass of a runtime's `repeat` steps: `id:` names mint new ids, `session:` names keep theirs. */
  nextPass(): void {
    for (const name of [...this.minted.keys()]) if (name.startsWith("id:")) this.minted.delete(name);
  }

  bind(name: string, values: Record<string, unknown>): void {
    this.bindings.set(name, values);
  }

  render(template: unknown): unknown {
    return mapDeep(template, (value) => {
      if (typeof value !== "string") return undefined;
      const whole = WHOLE.exec(value);
      if (whole) return this.lookup((whole[1] as string).trim());
      return value.replace(ANYWHERE, (_match, expression: string) => String(this.lookup(expression.trim())));
    });
  }

  private lookup(expression: string): unknown {
    if (expression === "uuid") return randomUUID();
    if (expression.startsWith("id:") || expression.startsWith("session:")) {
      let id = this.minted.get(expression);
      if (!id) this.minted.set(expression, (id = randomUUID()));
      return id;
    }
    if (expression === "now:ms") return Date.now();
    if (expression === "now:s") return Math.floor(Date.now() / 1000);
    if (expression === "now:iso") return new Date().toISOString();
    const [name, field] = expression.split(".", 2);
    const bound = this.bindings.get(name ?? "");
    if (!bound || field === undefined || !(field in bound))
      throw new Error(`scenario template: '{{${expression}}}' is not bound (yet)`);
    return bound[field] ?? null;
  }
}
