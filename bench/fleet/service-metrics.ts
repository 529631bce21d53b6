/**
 * One Prometheus series from a service's /metrics text, summed over its label sets, or only those whose labels
 * include `label` (e.g. `change="acquired"`). 0 when the service does not export it (yet).
 */
export function seriesValue(text: string, name: string, label?: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== " " && rest[0] !== "{") continue;
    if (label !== undefined && !rest.includes(label)) continue;
    sum += Number(rest.slice(rest.lastIndexOf(" ") + 1)) || 0;
  }
  return sum;
}

export async function scrape(baseUrl: string): Promise<string> {
  const answer = await fetch(`${baseUrl}/metrics`);
  if (answer.status !== 200) throw new Error(`${baseUrl}/metrics answered ${answer.status}`);
  return answer.text();
}

/** Partition leases one router replica acquired, released and lost so far, and what it holds now. */
export interface RouterLeaseFigures {
  partitions: number;
  sessions: number;
  acquired: number;
  released: number;
  lost: number;
}

export async function routerLeaseFigures(baseUrl: string): Promise<RouterLeaseFigures> {
  const text = await scrape(baseUrl);
  const changes = (change: string) =>
    seriesValue(text, "os_router_partition_changes_total", `change="${change}"`);
  return {
    partitions: seriesValue(text, "os_router_partitions"),
    sessions: seriesValue(text, "os_router_sessions"),
    acquired: changes("acquired"),
    released: changes("released"),
    lost: changes("lost"),
  };
}
