import { asFrame, list, text } from "../../../libs/contract/engine-frame.js";

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
