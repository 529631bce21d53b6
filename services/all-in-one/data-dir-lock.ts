import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";

/** Another live process writes this data directory: refused in one line, nothing started. */
export class DataDirInUseError extends Error {}

const lockSchema = z.object({
  pid: z.number().int().positive(),
  redisPid: z.number().int().positive().optional(),
});
type LockRecord = z.infer<typeof lockSchema>;

/**
 * One writer per Redis data directory: two redis-servers appending to the same AOF corrupt it. The lock file names
 * the all-in-one process and its redis-server; it is stale only when both are gone (a SIGKILLed owner whose Redis
 * has not yet been stopped by its watchdog still holds it).
 */
export class DataDirLock {
  private record: LockRecord = { pid: process.pid };
  private released = false;

  private constructor(private readonly file: string) {}

  static acquire(dir: string): DataDirLock {
    const lock = new DataDirLock(join(dir, "lampline.lock"));
    lock.take();
    process.once("exit", () => lock.release());
    return lock;
  }

  /** Names the redis-server too, so a lock left by a dead owner is not stale while its Redis still writes. */
  recordRedis(redisPid: number | undefined): void {
    this.record = { pid: process.pid, redisPid };
    writeFileSync(this.file, JSON.stringify(this.record), { mode: 0o600 });
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (readLock(this.file)?.pid === process.pid) rmSync(this.file, { force: true });
  }

  private take(): void {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        writeFileSync(this.file, JSON.stringify(this.record), { flag: "wx", mode: 0o600 });
        return;
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
      }
      const holder = readLock(this.file);
      const live = [holder?.pid, holder?.redisPid].find((pid) => pid !== undefined && isAlive(pid));
      if (live !== undefined)
        throw new DataDirInUseError(
          `all-in-one: ${dirname(this.file)} is in use by pid ${live} (lock ${this.file}); stop it or set REDIS_DATA_DIR`,
        );
      rmSync(this.file, { force: true });
    }
    throw new DataDirInUseError(`all-in-one: cannot take the lock ${this.file}: another start raced for it`);
  }
}

function readLock(file: string): LockRecord | undefined {
  try {
    const parsed = lockSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return z.object({ code: z.literal("EPERM") }).safeParse(error).success;
  }
}

function isAlreadyExists(error: unknown): boolean {
  return z.object({ code: z.literal("EEXIST") }).safeParse(error).success;
}
