import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";
import pretty from "pino-pretty";

export type { Logger };

/**
 * One readable line per entry for a person at a terminal: local time, level, the component that logged, the
 * message, then the remaining fields on the same line. Synchronous, so a line is never lost when the process exits.
 */
export function terminalLogStream(output: NodeJS.WritableStream = process.stdout): DestinationStream {
  return pretty({
    destination: output,
    sync: true,
    colorize: "isTTY" in output && output.isTTY === true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service,component",
    messageFormat: "{if component}{component}: {end}{msg}",
    singleLine: true,
  });
}

/**
 * The logger of one process: JSON lines (for collectors, files and pipes) unless stdout is a terminal, where the
 * lines are made readable. `output` is for tests; the format follows it.
 */
export function createLogger(
  service: string,
  level: string,
  hooks?: LoggerOptions["hooks"],
  output: NodeJS.WriteStream = process.stdout,
): Logger {
  const options: LoggerOptions = {
    name: service,
    level,
    base: { service, pid: process.pid },
    ...(hooks ? { hooks } : {}),
  };
  if (output.isTTY) return pino(options, terminalLogStream(output));
  return output === process.stdout ? pino(options) : pino(options, output);
}
