import type { PlaybackStart } from "../../libs/contract/lamp-wire.js";

/**
 * The story's closing check over everything the Lamp received: each playback was sent once, each result had
 * exactly the playbacks its step expected, and nothing was spoken for anything else. Pure; empty means it holds.
 */
export function auditPlaybacks(
  starts: readonly Pick<PlaybackStart, "playbackId" | "resultId">[],
  expected: ReadonlyMap<string, number>,
): string[] {
  const problems: string[] = [];
  const sent = new Map<string, number>();
  for (const start of starts) sent.set(start.playbackId, (sent.get(start.playbackId) ?? 0) + 1);
  for (const [playbackId, times] of sent)
    if (times > 1) problems.push(`playback ${playbackId} was sent ${times} times`);
  const perResult = new Map<string, number>();
  for (const start of starts) perResult.set(start.resultId, (perResult.get(start.resultId) ?? 0) + 1);
  for (const [resultId, count] of expected) {
    const got = perResult.get(resultId) ?? 0;
    if (got !== count) problems.push(`result ${resultId} had ${got} playback(s), expected ${count}`);
  }
  for (const resultId of perResult.keys())
    if (!expected.has(resultId)) problems.push(`result ${resultId} was spoken, but no step expected it`);
  return problems;
}
