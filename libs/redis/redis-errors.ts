import { z } from "zod";

const errorShape = z.object({
  name: z.string().optional(),
  message: z.string(),
  code: z.string().optional(),
});

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTCONN"]);
const CONNECTION_MESSAGES = [
  "Connection is closed",
  "Command timed out",
  "Stream isn't writeable",
  "Reached the max retries per request limit",
];
const CONNECTION_MESSAGE_CODES = /\b(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTCONN)\b/;

/**
 * True when a command failed because Redis could not be reached (not because it refused the command): what the
 * command connection's fail-fast settings produce while Redis is down.
 */
export function isRedisUnavailableError(error: unknown): boolean {
  const parsed = errorShape.safeParse(error);
  if (!parsed.success) return false;
  const { name, message, code } = parsed.data;
  if (name === "MaxRetriesPerRequestError") return true;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  return isRedisUnavailableMessage(message);
}

/** The same test on a logged error message (log entries carry `err` as a string, some as `String(error)`). */
export function isRedisUnavailableMessage(message: string): boolean {
  return CONNECTION_MESSAGES.some((text) => message.includes(text)) || CONNECTION_MESSAGE_CODES.test(message);
}

/**
 * Replies with which Redis refuses a command for now, not for what it says: out of memory under noeviction, a
 * replica or a node mid-failover, a dataset still loading, a busy script. Inside a script or a transaction the code
 * follows a prefix, hence the looser match.
 */
const REFUSED_FOR_NOW = /(^|[\s:-])(OOM|READONLY|LOADING|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|MOVED|BUSY) /;

const transactionShape = z.object({ previousErrors: z.array(z.unknown()) });

/**
 * True when a command failed because of the state Redis is in (unreachable, or refusing commands for now): an outage
 * that passes, never something wrong with what was asked. A transaction aborted by such a refusal counts too.
 */
export function isTransientRedisError(error: unknown): boolean {
  if (isRedisUnavailableError(error)) return true;
  const parsed = errorShape.safeParse(error);
  if (parsed.success && REFUSED_FOR_NOW.test(parsed.data.message)) return true;
  const transaction = transactionShape.safeParse(error);
  return transaction.success && transaction.data.previousErrors.some(isTransientRedisError);
}
