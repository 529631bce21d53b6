import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(service: string, level: string): Logger {
  return pino({ name: service, level, base: { service, pid: process.pid } });
}
