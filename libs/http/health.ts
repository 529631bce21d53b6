type Liveness = () => boolean;
type Readiness = () => Promise<boolean>;

/** A readiness check that has not answered by then counts as failed: /readyz answers within a second, always. */
const READINESS_CHECK_TIMEOUT_MS = 800;

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
    const results = await Promise.all(
      [...this.readiness].map(async ([name, check]) => [name, await withinDeadline(check)] as const),
    );
    const checks = Object.fromEntries(results);
    return { ok: results.every(([, ok]) => ok), checks };
  }

  close(): void {
    clearInterval(this.ticker);
  }
}

async function withinDeadline(check: Readiness): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>(
    (resolve) => (timer = setTimeout(() => resolve(false), READINESS_CHECK_TIMEOUT_MS)),
  );
  try {
    return await Promise.race([check().catch(() => false), late]);
  } finally {
    clearTimeout(timer);
  }
}
