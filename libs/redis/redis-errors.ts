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
