import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Where the laptop mode keeps its generated signing secret (never used when AUTH_JWT_SECRET is set). */
export const DEV_SECRET_FILE = resolve(".tmp/dev-jwt-secret");

/**
 * `npm start` and `npm run token` work with nothing configured: both read the same generated development
 * secret, created once with mode 0600. Deployments set AUTH_JWT_SECRET and never touch this file.
 */
export function devSecret(file = DEV_SECRET_FILE): string {
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(32).toString("hex");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
