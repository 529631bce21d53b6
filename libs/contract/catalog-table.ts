import {
  HOST_CONSUMER_SETTINGS,
  QUEUE_CATALOG,
  STREAM_CATALOG,
  type PerInstance,
  type StreamReading,
  type StreamSpec,
} from "./catalog.js";

/**
 * The "Streams" tables of docs/architecture.md, rendered from the catalog and aligned the way prettier aligns
 * markdown tables, so the generated section passes `prettier --check` unchanged.
 */

export const CATALOG_BEGIN =
  "<!-- BEGIN stream catalog: generated from libs/contract/catalog.ts by `npm run docs:catalog` -->";
export const CATALOG_END = "<!-- END stream catalog -->";

/** A per-instance entry as documented: called with its placeholder (`<gatewayId>`) as the instance id. */
function described<T extends object>(entry: T | PerInstance<T>): T {
  return typeof entry === "function" ? entry(`<${entry.instance}>`) : entry;
}

const code = (text: string) => `\`${text}\``;

function readingOf(reading: StreamReading): string {
  switch (reading.kind) {
    case "consumer-group":
      return (
        "host consumer settings (below): own pending first, stale entries reclaimed, dead-lettered after `maxDeliveries`" +
        (reading.inOrder
          ? "; each partition read by one replica at a time (a partition lease, `STREAM_LEASE_TTL_MS`), in stream order"
          : "")
      );
    case "single-consumer":
      return `one consumer ${code(reading.consumer)}, so whoever takes over inherits what is pending; ${reading.retry}`;
    case "tail":
      return `read from \`$\` without a group; nothing retried; about the newest ${reading.kept} kept, and the stream goes after ${reading.idleExpiryMs / 60_000} min without a write (a stopped instance's)`;
    case "audit-log":
      return "appended once per identity, read by range (OS API); nothing consumes it";
    case "update-log":
      return `ids \`0-<updateId>\`, read by range from each Lamp socket's cursor (device-gateway); about the newest ${reading.kept} kept, none older than the OS retention (\`RESULT_RETENTION_MS\`)`;
  }
}

function streamRow(stream: StreamSpec): string[] {
  const groups = Object.values(stream.consumers).map(described);
  return [
    stream.partitionBy === undefined
      ? code(stream.name)
      : `${code(stream.name)} (STREAM_PARTITIONS partitions by ${code(stream.partitionBy)})`,
    stream.carries,
    stream.producers.join(", "),
    groups.length === 0
      ? "none"
      : groups.map(({ group, service }) => `${code(group)} (${service})`).join(", "),
    stream.reading.kind === "consumer-group" ? code(stream.reading.deadLetter) : "none",
    readingOf(stream.reading),
  ];
}

function settingRows(): string[][] {
  const { env, defaults } = HOST_CONSUMER_SETTINGS;
  return Object.entries(env).map(([setting, variable]) => [
    setting,
    code(variable),
    String(defaults[setting as keyof typeof defaults]),
  ]);
}

function queueRows(): string[][] {
  return Object.values(QUEUE_CATALOG).map((queue) => [
    code(queue.name),
    queue.carries,
    queue.producers.join(", "),
    queue.worker,
    `${code(queue.retry.attemptsEnv)} attempts, ${queue.retry.backoff} backoff from ${code(queue.retry.delayEnv)}; ` +
      `a dead worker's job runs again after ${code(queue.retry.lockEnv)}`,
  ]);
}

/** A markdown table with every column padded to its widest cell, as prettier prints it. */
export function markdownTable(header: string[], rows: string[][]): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => cell.replaceAll("|", "\\|")));
  const widths = header.map((_, column) => Math.max(3, ...cells.map((row) => row[column]?.length ?? 0)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ")} |`;
  const [head = [], ...body] = cells;
  return [line(head), line(widths.map((width) => "-".repeat(width))), ...body.map(line)].join("\n");
}

/** The generated section between the markers: streams, the host consumer settings, the BullMQ queues. */
export function renderStreamCatalog(): string {
  const streams = Object.values(STREAM_CATALOG).map((entry) => streamRow(described<StreamSpec>(entry)));
  return [
    markdownTable(
      ["stream", "payload", "producer", "consumer groups (service)", "dead letters", "reading and retry"],
      streams,
    ),
    markdownTable(["consumer setting", "env", "default"], settingRows()),
    markdownTable(["BullMQ queue", "job", "producer", "worker", "retry"], queueRows()),
  ].join("\n\n");
}

/** The section between the markers in a document, or undefined when a marker is missing. */
export function catalogSectionOf(doc: string): string | undefined {
  const begin = doc.indexOf(CATALOG_BEGIN);
  const end = doc.indexOf(CATALOG_END);
  if (begin < 0 || end < begin) return undefined;
  return doc.slice(begin + CATALOG_BEGIN.length, end).trim();
}

/** The document with the section between the markers replaced by `section`. */
export function withCatalogSection(doc: string, section: string): string {
  const begin = doc.indexOf(CATALOG_BEGIN);
  const end = doc.indexOf(CATALOG_END);
  if (begin < 0 || end < begin)
    throw new Error(`docs: markers ${CATALOG_BEGIN} and ${CATALOG_END} not found`);
  return `${doc.slice(0, begin + CATALOG_BEGIN.length)}\n\n${section}\n\n${doc.slice(end)}`;
}
