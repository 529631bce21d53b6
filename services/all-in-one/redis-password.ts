import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";

/**
 * The embedded Redis's password: generated once, kept beside its data with mode 0600 and reused by every later
 * `npm start` on that directory, so another local user or process cannot read or write the stack's state.
 */
export function embeddedRedisPassword(file: string): string {
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    return readFileSync(file, "utf8").trim();
  }
  const password = randomBytes(32).toString("hex");
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}
