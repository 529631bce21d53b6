import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import type { FastifyReply } from "fastify";
import type { Counter } from "prom-client";
import { readRunUpdateNotice } from "../../libs/contract/run-update.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { SECURITY_HEADERS } from "../../libs/http/security-headers.js";
import { atExpiry, bearerExpiresAtMs } from "../../libs/http/token-expiry.js";
import type { Logger } from "../../libs/logging/logger.js";
import { watchLampRevocations } from "../../libs/os-store/lamp-revocations.js";
import type { OsAuthenticator } from "../../libs/os-store/os-authenticator.js";
import { runUpdatesChannelPattern } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import type { Subscriber } from "../../libs/redis/subscriber.js";

/** How often open consoles are told to re-read what has no change notice of its own (stream lag, dead letters). */
export const PIPELINE_TICK_MS = 2_000;

/** Who a live feed streams to: the operator (token `sub`) and the credential the feed was opened with. */
export interface FeedViewer {
  operator: string;
  authorization: string | undefined;
}

type EndReason = "expired" | "revoked";

interface OpenFeed {
  viewer: FeedViewer;
  end(reason: EndReason): void;
}

export interface ConsoleLiveFeedOptions {
  subscriber: Subscriber;
  keys: Keyspace;
  auth: OsAuthenticator;
  log: Logger;
  ended: Counter<"reason">;
}

/**
 * Server-sent events for open consoles: `run-update` (data: the deviceId) whenever a device's run-update log grows,
 * from the pub/sub notice every append already publishes, and `tick` every PIPELINE_TICK_MS. One subscription
 * serves every console. A feed lives only as long as its credential: it ends with `signed-out` when the token's
 * `exp` passes or when a revocation refuses it (the same notice that closes Lamp sockets).
 */
export class ConsoleLiveFeed {
  private readonly events = new EventEmitter();
  private readonly ticker: NodeJS.Timeout;
  private readonly open = new Map<ServerResponse, OpenFeed>();

  constructor(private readonly options: ConsoleLiveFeedOptions) {
    this.events.setMaxListeners(0);
    this.ticker = setInterval(
      () => this.events.emit("message", "tick", String(Date.now())),
      PIPELINE_TICK_MS,
    );
    this.ticker.unref();
  }

  async listen(): Promise<void> {
    const { subscriber, keys } = this.options;
    subscriber.onPatternMessage((_pattern, _channel, message) =>
      this.events.emit("message", "run-update", readRunUpdateNotice(message).deviceId),
    );
    await watchLampRevocations(subscriber, keys, {
      revoked: (deviceId) => this.recheck((viewer) => viewer.operator === deviceId),
      recheckAll: () => this.recheck(() => true),
    });
    await subscriber.psubscribe(runUpdatesChannelPattern(keys));
  }

  /** Takes the reply over as an event stream until the browser goes away or the viewer's credential ends. */
  stream(reply: FastifyReply, viewer: FeedViewer): void {
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
    });
    response.write("retry: 2000\nevent: ready\ndata: {}\n\n");
    const send = (event: string, data: string) => response.write(`event: ${event}\ndata: ${data}\n\n`);
    const end = (reason: EndReason) => {
      if (!this.open.delete(response)) return;
      this.options.ended.inc({ reason });
      send("signed-out", reason);
      response.end();
    };
    this.events.on("message", send);
    this.open.set(response, { viewer, end });
    const cancelExpiry = atExpiry(bearerExpiresAtMs(viewer.authorization), () => end("expired"));
    response.once("close", () => {
      cancelExpiry();
      this.events.off("message", send);
      this.open.delete(response);
    });
  }

  /** Authenticates the chosen feeds' credentials again and ends those now refused. */
  private recheck(chosen: (viewer: FeedViewer) => boolean): void {
    for (const { viewer, end } of this.open.values()) {
      if (!chosen(viewer)) continue;
      this.options.auth.authenticateAuthorization(viewer.authorization).then(
        (authentication) => {
          if (!authentication.ok) end("revoked");
        },
        (error: unknown) =>
          this.options.log.warn(
            { operator: viewer.operator, err: errorMessage(error) },
            "live feed credential not rechecked",
          ),
      );
    }
  }

  /** Ends every open stream too: the HTTP server's close waits for open responses, and a console never ends one. */
  close(): void {
    for (const response of this.open.keys()) response.end();
    clearInterval(this.ticker);
    this.events.removeAllListeners();
    this.options.subscriber.close();
  }
}
