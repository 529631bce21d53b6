/**
 * The shape of an engine's output, for spotting protocol drift: per kind of frame (Claude `type/subtype`, Codex
 * JSON-RPC `method` or `response`), the set of field paths it carried (arrays are walked as `[]`; values ignored).
 */
export type FrameShapes = Map<string, Set<string>>;

export function frameKind(frame: Record<string, unknown>): string {
  if (typeof frame.method === "string") return frame.method;
  if (frame.id !== undefined) return "response";
  const subtype = typeof frame.subtype === "string" ? `/${frame.subtype}` : "";
  return `${String(frame.type)}${subtype}`;
}

export function addShape(shapes: FrameShapes, frame: Record<string, unknown>): void {
  const kind = frameKind(frame);
  const paths = shapes.get(kind) ?? new Set<string>();
  collectPaths(frame, "", paths);
  shapes.set(kind, paths);
}

function collectPaths(value: unknown, prefix: string, paths: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) collectPaths(item, `${prefix}[]`, paths);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    const path = prefix ? `${prefix}.${key}` : key;
    paths.add(path);
    collectPaths(child, path, paths);
  }
}

export interface ShapeDrift {
  kind: string;
  added: string[];
  removed: string[];
}

/** What changed from `pinned` to `candidate`: kinds and fields that appeared or disappeared. */
export function shapeDrift(pinned: FrameShapes, candidate: FrameShapes): ShapeDrift[] {
  const kinds = [...new Set([...pinned.keys(), ...candidate.keys()])].sort();
  return kinds
    .map((kind) => {
      const before = pinned.get(kind) ?? new Set<string>();
      const after = candidate.get(kind) ?? new Set<string>();
      return {
        kind,
        added: [...after].filter((path) => !before.has(path)).sort(),
        removed: [...before].filter((path) => !after.has(path)).sort(),
      };
    })
    .filter((drift) => drift.added.length > 0 || drift.removed.length > 0);
}
