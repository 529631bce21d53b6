/**
 * Engine lines are untrusted JSON: the runner (to follow a turn) and the extractor (to prove evidence) read them
 * through these type guards, never through casts. A line that is not a JSON object is no frame.
 */
export type Frame = Record<string, unknown>;

export function parseFrame(raw: string): Frame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  return asFrame(value);
}

export function asFrame(value: unknown): Frame | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Frame) : undefined;
}

export function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function list(value: unknown): unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

export function strings(value: unknown): string[] | undefined {
  const items = list(value);
  return items?.filter((item): item is string => typeof item === "string");
}
