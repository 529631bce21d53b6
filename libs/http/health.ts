type Liveness = () => boolean;
type Readiness = () => Promise<boolean>;

/** Collects what /healthz (is the process turning?) and /readyz (can it do its job?) report. */
export class HealthRegistry {
  private readonly liveness = new Map<string, Liveness>();
  private readonly readiness = new Map<string, Readiness>();
  private lastTickAt = Date.now();
  private readonly ticker: NodeJS.Timeout;

  constructor() {
    this.ticker = setInterval(() => (this.lastTickAt = Date.now()), 500);
    this.ticker.unref();
    this.addLiveness("event_loop", () => Date.now() - this.lastTickAt < 5_000);
  }

  addLiveness(name: string, check: Liveness): void {
    this.liveness.set(name, check);
  }

  addReadiness(name: string, check: Readiness): void {
    this.readiness.set(name, check);
  }

  live(): { ok: boolean; checks: Record<string, boolean> } {
    const checks: Record<string, boolean> = {};
    for (const [name, check] of this.liveness) checks[name] = check();
    return { ok: Object.values(checks).every(Boolean), checks };
  }

  async ready(): Promise<{ ok: boolean; checks: Record<string, boolean> }> {
    const checks: Record<string, boolean> = {};
    for (const [name, check] of this.readiness) checks[name] = await check().catch(() => false);
    return { ok: Object.values(checks).every(Boolean), checks };
  }

  close(): void {
    clearInterval(this.ticker);
  }
}
