import { readFileSync } from "node:fs";

/** CPU time (user + system) and resident memory of one process, read from /proc. */
export interface ProcessSample {
  cpuMs: number;
  rssBytes: number;
}

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in ticks of 1/100 s on every architecture node runs on. */
const TICK_MS = 10;

export function sampleProcess(pid: number): ProcessSample | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15, rss 24.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
    return { cpuMs: (utime + stime) * TICK_MS, rssBytes: rssKb * 1024 };
  } catch {
    return undefined; // the process ended
  }
}

/** One process's figures over a window: CPU spent in it and its peak RSS while sampled. */
export interface ProcessFigures {
  name: string;
  cpuMs: number;
  peakRssBytes: number;
}

/**
 * Samples a named set of processes (a name may stand for several pids, e.g. every engine) once a second and at
 * the window's ends: CPU is the delta between the first and last sample, RSS the peak seen.
 */
export class ProcessWindow {
  private readonly first = new Map<string, number>();
  private readonly last = new Map<string, number>();
  private readonly peakRss = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pids: () => Map<string, number[]>) {
    this.sample(this.first);
    this.timer = setInterval(() => this.sample(this.last), 1000);
  }

  close(): ProcessFigures[] {
    clearInterval(this.timer);
    this.sample(this.last);
    return [...this.first.keys()].map((name) => ({
      name,
      cpuMs: (this.last.get(name) ?? 0) - (this.first.get(name) ?? 0),
      peakRssBytes: this.peakRss.get(name) ?? 0,
    }));
  }

  private sample(into: Map<string, number>): void {
    for (const [name, pids] of this.pids()) {
      let cpuMs = 0;
      let rssBytes = 0;
      for (const pid of pids) {
        const sample = sampleProcess(pid);
        cpuMs += sample?.cpuMs ?? 0;
        rssBytes += sample?.rssBytes ?? 0;
      }
      into.set(name, Math.max(cpuMs, into.get(name) ?? 0));
      this.peakRss.set(name, Math.max(rssBytes, this.peakRss.get(name) ?? 0));
    }
  }
}
