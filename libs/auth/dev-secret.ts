import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Audience } from "./tokens.js";

/**
 * Where the laptop mode keeps its generated signing secrets, one per audience (never used when AUTH_JWT_SECRET or
 * HARNESS_JWT_SECRET is set): two random values, so an OS token never verifies at the Harness.
 */
export const DEV_SECRET_FILES: Record<Audience, string> = {
  os: resolve(".tmp/dev-jwt-secret"),
  harness: resolve(".tmp/dev-harness-jwt-secret"),
};

/**
 * `npm start` and `npm run token` work with nothing configured: both read the same generated development secret
 * of an audience, created once with mode 0600. Deployments set the secrets and never touch these files.
 */
export function devSecret(audience: Audience, file = DEV_SECRET_FILES[audience]): string {
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(32).toString("hex");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
