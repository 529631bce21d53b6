import fc from "fast-check";

export type Json = Record<string, unknown>;

/** One frame as it goes on the wire: text, or the same bytes as a binary WebSocket frame. */
export interface WireFrame {
  text: string;
  binary: boolean;
}

const nested = (depth: number): unknown => (depth === 0 ? "bottom" : [nested(depth - 1)]);

/** Values a hostile peer puts into a field: wrong types, bounds, odd text, deep nesting, near-limit sizes. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 4 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }), weight: 2 },
  fc.constantFrom(
    "",
    " ",
    null,
    0,
    -1,
    1.5,
    2 ** 53 + 1,
    1e308,
    true,
    [],
    {},
    "not-a-uuid",
    "\u0000",
    "}:{d:lamp-other}",
    "../../etc/passwd",
    "%00",
    "*",
    "x".repeat(257),
    "x".repeat(16 * 1024 + 1),
    "é".repeat(8 * 1024 + 1),
    "🎙".repeat(4 * 1024 + 1),
    "y".repeat(60 * 1024),
    "z".repeat(65 * 1024),
  ),
  fc.constant(nested(200)),
);

/** Field names a hostile peer adds: unknown fields, identity fields it must not be able to set, prototype keys. */
export const hostileFieldName = fc.oneof(
  fc.constantFrom("deviceId", "sub", "role", "owner", "__proto__", "constructor", "prototype", "extra", ""),
  fc.string({ maxLength: 12 }),
);

type Change = [kind: "drop" | "set" | "add" | "nest", name: string, value: unknown, pick: number];

const change: fc.Arbitrary<Change> = fc.tuple(
  fc.constantFrom("drop", "set", "add", "nest"),
  hostileFieldName,
  hostileValue,
  fc.nat(),
);

/** Applies targeted changes to a valid frame: a field removed or replaced, an unknown field added, or nested. */
export function applyChanges(frame: Json, changes: Change[]): Json {
  const copy: Json = structuredClone(frame);
  for (const [kind, name, value, pick] of changes) {
    const fields = Object.keys(copy);
    const target = fields[pick % Math.max(fields.length, 1)] ?? "type";
    if (kind === "drop") delete copy[target];
    if (kind === "set") copy[target] = value;
    if (kind === "add")
      Object.defineProperty(copy, name, { value, enumerable: true, writable: true, configurable: true });
    if (kind === "nest") {
      const inner = copy[target];
      if (typeof inner === "object" && inner !== null && !Array.isArray(inner))
        copy[target] = applyChanges(inner as Json, [["set", name, value, pick]]);
      else copy[target] = { [name]: value };
    }
  }
  return copy;
}

/** Byte-level damage to a serialized frame: truncation, duplicated keys (last wins), prototype keys, noise. */
const textDamage = fc.tuple(fc.constantFrom("truncate", "duplicate", "proto", "noise", "wrap"), fc.nat());
function damage(text: string, [kind, at]: [string, number]): string {
  const cut = at % Math.max(text.length, 1);
  if (kind === "truncate") return text.slice(0, cut);
  if (kind === "duplicate") return `${text.slice(0, -1)},"type":"voice.request","requestId":"dup"}`;
  if (kind === "proto") return `{"__proto__":{"polluted":true},${text.slice(1)}`;
  if (kind === "wrap") return `[${text}]`;
  return `${text.slice(0, cut)}\u0000\ud800${text.slice(cut)}`;
}

/**
 * A hostile frame stream built from valid templates: mostly mutated templates, then textual damage, arbitrary
 * JSON and text, binary frames, and some valid templates unchanged (replayed ones come from the caller's pool).
 */
export function hostileFrame(template: fc.Arbitrary<Json>): fc.Arbitrary<WireFrame> {
  const mutated = fc
    .tuple(template, fc.array(change, { minLength: 1, maxLength: 3 }))
    .map(([frame, changes]) => JSON.stringify(applyChanges(frame, changes)));
  const damaged = fc.tuple(template, textDamage).map(([frame, how]) => damage(JSON.stringify(frame), how));
  const text = fc.oneof(
    { arbitrary: mutated, weight: 8 },
    { arbitrary: damaged, weight: 3 },
    { arbitrary: fc.json({ maxDepth: 3 }), weight: 1 },
    { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
    { arbitrary: template.map((frame) => JSON.stringify(frame)), weight: 2 },
  );
  return fc
    .tuple(text, fc.integer({ min: 0, max: 9 }))
    .map(([body, roll]) => ({ text: body, binary: roll === 0 }));
}
