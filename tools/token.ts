import { parseArgs } from "node:util";
import { z } from "zod";
import { deviceIdSchema, roleSchema, signToken } from "../libs/auth/tokens.js";
import { devSecret } from "../libs/auth/dev-secret.js";
import { loadConfigOrExit } from "../libs/config/load-config.js";

/**
 * `npm run token -- --device lamp-1 [--role operator] [--ttl 3600]`: prints an HS256 JWT for development, signed
 * with AUTH_JWT_SECRET or, when unset, the generated secret `npm start` uses.
 */
const env = loadConfigOrExit(
  z.object({ AUTH_JWT_SECRET: z.string().min(16, "at least 16 characters").optional() }),
);
const secret = env.AUTH_JWT_SECRET ?? devSecret();
const { values } = parseArgs({
  options: {
    device: { type: "string" },
    role: { type: "string", default: "device" },
    ttl: { type: "string", default: "86400" },
  },
});
const args = z
  .object({ device: deviceIdSchema, role: roleSchema, ttl: z.coerce.number().int().positive() })
  .safeParse(values);
if (!args.success) {
  const issue = args.error.issues[0];
  process.stderr.write(`usage: npm run token -- --device <id> [--role device|operator] [--ttl seconds]\n`);
  process.stderr.write(`invalid --${issue?.path.join(".")}: ${issue?.message}\n`);
  process.exit(64);
}
const token = await signToken(secret, {
  sub: args.data.device,
  role: args.data.role,
  expiresInSeconds: args.data.ttl,
});
process.stdout.write(`${token}\n`);
