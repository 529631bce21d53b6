import type { z } from "zod";
import { errorMessage } from "../errors/error-message.js";
import { PAYLOAD_FIELD } from "./stream-writer.js";

/** One entry as XREAD / XREADGROUP / XAUTOCLAIM return it: its id and its flat field-value list. */
export type RawEntry = [id: string, fields: string[]];

export type ParsedPayload<T> = { ok: true; value: T } | { ok: false; error: string };

export function fieldValue(fields: string[], name: string): string | undefined {
  for (let index = 0; index + 1 < fields.length; index += 2)
    if (fields[index] === name) return fields[index + 1];
  return undefined;
}

/** The entry's `payload` field checked against the stream's schema; what is wrong with it when it does not parse. */
export function parsePayload<S extends z.ZodType>(
  schema: S,
  raw: string | undefined,
): ParsedPayload<z.infer<S>> {
  if (raw === undefined) return { ok: false, error: `missing field '${PAYLOAD_FIELD}'` };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    return { ok: false, error: `malformed JSON: ${errorMessage(error)}` };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  return { ok: false, error: `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}` };
}

export function parseEntryPayload<S extends z.ZodType>(
  schema: S,
  fields: string[],
): ParsedPayload<z.infer<S>> {
  return parsePayload(schema, fieldValue(fields, PAYLOAD_FIELD));
}
