import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import type { FastifyReply } from "fastify";
import { readRunUpdateNotice } from "../../../libs/contract/run-update.js";
import { runUpdatesChannelPattern } from "../../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import type { Subscriber } from "../../../libs/redis/subscriber.js";

/** How often open consoles are told to re-read what has no change notice of its own (stream lag, dead letters). */
export const PIPELINE_TICK_MS = 2_000;

/**
 * Server-sent events for open consoles: `run-update` (data: the deviceId) whenever a device's run-update log grows,
 * from the pub/sub notice every append already publishes, and `tick` every PIPELINE_TICK_MS. One subscription
 * serves every console.
 */
export class ConsoleLiveFeed {
  private readonly events = new EventEmitter();
  private readonly ticker: NodeJS.Timeout;
  private readonly open = new Set<ServerResponse>();

  constructor(
    private readonly subscriber: Subscriber,
    private readonly keys: Keyspace,
  ) {
    this.events.setMaxListeners(0);
    this.ticker = setInterval(
      () => this.events.emit("message", "tick", String(Date.now())),
      PIPELINE_TICK_MS,
    );
    this.ticker.unref();
  }

  async listen(): Promise<void> {
    this.subscriber.onPatternMessage((_pattern, _channel, message) =>
      this.events.emit("message", "run-update", readRunUpdateNotice(message).deviceId),
    );
    await this.subscriber.psubscribe(runUpdatesChannelPattern(this.keys));
  }

  /** Takes the reply over as an event stream until the browser goes away. */
  stream(reply: FastifyReply): void {
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    response.write("retry: 2000\nevent: ready\ndata: {}\n\n");
    const send = (event: string, data: string) => response.write(`event: ${event}\ndata: ${data}\n\n`);
    this.events.on("message", send);
    this.open.add(response);
    response.once("close", () => {
      this.events.off("message", send);
      this.open.delete(response);
    });
  }

  /** Ends every open stream too: the HTTP server's close waits for open responses, and a console never ends one. */
  close(): void {
    for (const response of this.open) response.end();
    clearInterval(this.ticker);
    this.events.removeAllListeners();
    this.subscriber.close();
  }
}
