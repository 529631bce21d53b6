/** Raw engine lines are untrusted: read them through type guards, never through casts. */
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

/** Text of a content value: a plain string, or the `text` parts of a content-block array. */
export function contentText(content: unknown, partTypes: readonly string[]): string | undefined {
  if (typeof content === "string") return content;
  const parts = list(content);
  if (!parts) return undefined;
  const texts: string[] = [];
  for (const part of parts) {
    const block = asFrame(part);
    const type = text(block?.type);
    if (!block || !type || !partTypes.includes(type)) return undefined;
    const value = text(block.text);
    if (value === undefined) return undefined;
    texts.push(value);
  }
  return texts.length > 0 ? texts.join("\n") : undefined;
}

/** ISO timestamp of a transcript row in epoch ms, if it has a usable one. */
export function timestampMs(value: unknown): number | undefined {
  const iso = text(value);
  if (!iso) return undefined;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : undefined;
}
