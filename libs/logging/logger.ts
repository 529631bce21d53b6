import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger };

export function createLogger(service: string, level: string, hooks?: LoggerOptions["hooks"]): Logger {
  return pino({ name: service, level, base: { service, pid: process.pid }, ...(hooks ? { hooks } : {}) });
}
