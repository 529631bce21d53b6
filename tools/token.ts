import { z } from "zod";
import { devSecret } from "../libs/auth/dev-secret.js";
import { deviceIdSchema, ROLES, signToken, type TokenClaims } from "../libs/auth/tokens.js";
import { envJwtSecret } from "../libs/config/env-fields.js";
import { loadConfigOrExit } from "../libs/config/load-config.js";
import { readCommandLine } from "./cli-args.js";

const HELP = [
  "usage: npm run -s token -- --device <id> [--aud os|harness] [--role <role>] [--ttl <seconds>]",
  "",
  "Prints an HS256 JWT for development.",
  "",
  "  --device <id>        the token's subject (required)",
  "  --aud os|harness     os (default): a Lamp or OS-API operator, signed with AUTH_JWT_SECRET;",
  "                       harness: the OS as a Harness peer or a Harness operator, signed with HARNESS_JWT_SECRET",
  "  --role <role>        os: device (default) | operator; harness: os (default) | operator",
  "  --ttl <seconds>      lifetime (default 86400)",
  "  -h, --help           this text",
  "",
  "An unset secret variable means the generated secret `npm start` uses for that audience (.tmp/dev-*-secret).",
].join("\n");

/**
 * `npm run token -- --device lamp-1 [--aud os|harness] [--role …] [--ttl 3600]`: prints an HS256 JWT for development.
 * `--aud os` (default: a Lamp, role `device`, or an operator of the OS API) is signed with AUTH_JWT_SECRET;
 * `--aud harness` (the OS as a Harness peer, role `os`, or a Harness operator) with HARNESS_JWT_SECRET. When the
 * variable is unset, the generated secret `npm start` uses for that audience.
 */
const common = { device: deviceIdSchema, ttl: z.coerce.number().int().positive().default(86_400) };
const args = readCommandLine({
  name: "token",
  help: HELP,
  options: {
    device: { type: "string" },
    aud: { type: "string", default: "os" },
    role: { type: "string" },
    ttl: { type: "string" },
  },
  schema: z.discriminatedUnion("aud", [
    z.object({ ...common, aud: z.literal("os"), role: z.enum(ROLES.os).default("device") }),
    z.object({ ...common, aud: z.literal("harness"), role: z.enum(ROLES.harness).default("os") }),
  ]),
});
const env = loadConfigOrExit(
  z.object({ AUTH_JWT_SECRET: envJwtSecret.optional(), HARNESS_JWT_SECRET: envJwtSecret.optional() }),
);
const { device, ttl } = args;
const tokenClaims: TokenClaims =
  args.aud === "harness"
    ? { audience: "harness", role: args.role, sub: device, expiresInSeconds: ttl }
    : { audience: "os", role: args.role, sub: device, expiresInSeconds: ttl };
const secret =
  tokenClaims.audience === "harness"
    ? (env.HARNESS_JWT_SECRET ?? devSecret("harness"))
    : (env.AUTH_JWT_SECRET ?? devSecret("os"));
process.stdout.write(`${await signToken(secret, tokenClaims)}\n`);
