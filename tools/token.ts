import { parseArgs } from "node:util";
import { z } from "zod";
import { devSecret } from "../libs/auth/dev-secret.js";
import { deviceIdSchema, ROLES, signToken, type TokenClaims } from "../libs/auth/tokens.js";
import { envJwtSecret } from "../libs/config/env-fields.js";
import { loadConfigOrExit } from "../libs/config/load-config.js";

const USAGE =
  "usage: npm run token -- --device <id> [--aud os|harness] [--role device|operator (os) | os|operator (harness)] [--ttl seconds]";

/**
 * `npm run token -- --device lamp-1 [--aud os|harness] [--role …] [--ttl 3600]`: prints an HS256 JWT for development.
 * `--aud os` (default: a Lamp, role `device`, or an operator of the OS API) is signed with AUTH_JWT_SECRET;
 * `--aud harness` (the OS as a Harness peer, role `os`, or a Harness operator) with HARNESS_JWT_SECRET. When the
 * variable is unset, the generated secret `npm start` uses for that audience.
 */
const env = loadConfigOrExit(
  z.object({ AUTH_JWT_SECRET: envJwtSecret.optional(), HARNESS_JWT_SECRET: envJwtSecret.optional() }),
);
const { values } = parseArgs({
  options: {
    device: { type: "string" },
    aud: { type: "string", default: "os" },
    role: { type: "string" },
    ttl: { type: "string", default: "86400" },
  },
});
const common = { device: deviceIdSchema, ttl: z.coerce.number().int().positive() };
const args = z
  .discriminatedUnion("aud", [
    z.object({ ...common, aud: z.literal("os"), role: z.enum(ROLES.os).default("device") }),
    z.object({ ...common, aud: z.literal("harness"), role: z.enum(ROLES.harness).default("os") }),
  ])
  .safeParse(values);
if (!args.success) {
  const issue = args.error.issues[0];
  process.stderr.write(`${USAGE}\n`);
  process.stderr.write(`invalid --${issue?.path.join(".") || "aud"}: ${issue?.message}\n`);
  process.exit(64);
}
const { device, ttl } = args.data;
const tokenClaims: TokenClaims =
  args.data.aud === "harness"
    ? { audience: "harness", role: args.data.role, sub: device, expiresInSeconds: ttl }
    : { audience: "os", role: args.data.role, sub: device, expiresInSeconds: ttl };
const secret =
  tokenClaims.audience === "harness"
    ? (env.HARNESS_JWT_SECRET ?? devSecret("harness"))
    : (env.AUTH_JWT_SECRET ?? devSecret("os"));
process.stdout.write(`${await signToken(secret, tokenClaims)}\n`);
