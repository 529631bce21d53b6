import { createHash } from "node:crypto";

/**
 * A seeded pseudo-random generator (sfc32): the same seed gives the same traffic and the same fault schedule.
 * Independent streams (`fork`) keep the traffic plan stable when the fault mix changes, and vice versa.
 */
export class Prng {
  private constructor(private readonly state: Uint32Array) {
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  static fromSeed(seed: string): Prng {
    const digest = createHash("sha256").update(seed).digest();
    return new Prng(
      new Uint32Array([
        digest.readUInt32LE(0),
        digest.readUInt32LE(4),
        digest.readUInt32LE(8),
        digest.readUInt32LE(12) | 1,
      ]),
    );
  }

  /** An independent stream derived from this one's seed material and a label. */
  fork(label: string): Prng {
    return Prng.fromSeed(`${Array.from(this.state).join(".")}/${label}`);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }

  /** One of the keys, with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.next() * total;
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    const last = entries.at(-1);
    if (!last) throw new Error("weighted pick from no weights");
    return last[0];
  }

  private nextUint32(): number {
    const s = this.state;
    const a = s[0] ?? 0;
    const b = s[1] ?? 0;
    const c = s[2] ?? 0;
    const d = s[3] ?? 0;
    const t = (((a + b) >>> 0) + d) >>> 0;
    s[3] = (d + 1) >>> 0;
    s[0] = (b ^ (b >>> 9)) >>> 0;
    s[1] = (c + (c << 3)) >>> 0;
    s[2] = (((c << 21) | (c >>> 11)) + t) >>> 0;
    return t;
  }
}
