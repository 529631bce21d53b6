/**
 * How many cases each hostile surface tries: a few hundred by default (the CI budget), or `HOSTILE_RUNS` per surface
 * in long mode (`HOSTILE_RUNS=10000 npx vitest run test/hostile`).
 */
const longRuns = Number(process.env.HOSTILE_RUNS ?? "");

export function casesFor(defaultRuns: number): number {
  return Number.isInteger(longRuns) && longRuns > 0 ? longRuns : defaultRuns;
}

/** The long mode runs for minutes; the default stays within the suite's budget. */
export function timeoutFor(cases: number, msPerCase: number): number {
  return Math.max(60_000, cases * msPerCase * 3);
}

/** Counts the outcomes of one surface and prints its summary line (`hostile: <surface> N cases ...`). */
export class SurfaceTally {
  private readonly started = Date.now();
  private readonly outcomes: Record<string, number> = {};
  cases = 0;

  constructor(readonly surface: string) {}

  count(outcome: string): void {
    this.cases += 1;
    this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + 1;
  }

  of(outcome: string): number {
    return this.outcomes[outcome] ?? 0;
  }

  report(): string {
    const seconds = (Date.now() - this.started) / 1000;
    const line =
      `hostile: ${this.surface} ${this.cases} cases in ${seconds.toFixed(1)} s ` +
      `(${Math.round(this.cases / Math.max(seconds, 0.001))} cases/s) ${JSON.stringify(this.outcomes)}`;
    console.log(line);
    return line;
  }
}
