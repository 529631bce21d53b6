import { Queue } from "bullmq";
import { parseConfig } from "../../libs/config/load-config.js";
import { QUEUE_CATALOG } from "../../libs/contract/catalog.js";
import { serveApiDocs } from "../../libs/http/api-docs.js";
import { OsAuthenticator } from "../../libs/os-store/os-authenticator.js";
import { OsQueries } from "../../libs/os-store/os-queries.js";
import { defineService } from "../../libs/service/service-context.js";
import { consoleConfigSchema } from "./config.js";
import { consoleMetrics } from "./console-metrics.js";
import { registerConsoleRoutes } from "./console-routes.js";
import { CsrfGuard } from "./csrf-guard.js";
import { ConsoleLiveFeed } from "./live-feed.js";
import { consoleOperatorGate } from "./operator-session.js";
import { registerPlaybackBoard } from "./playback-board.js";

/**
 * The operator console, all behind one OS operator gate: the pages at /console/, their live feed, dead-letter
 * redrive, Bull Board for the playback queue at /console/queues/, and the OpenAPI document and docs of this
 * process (/openapi.json, /docs). It reads the stores and moves dead letters; it takes no part in the pipeline.
 */
export const consoleService = defineService({
  name: "console",
  config: (env) => parseConfig(consoleConfigSchema, env),
  async start(ctx, config) {
    const redis = ctx.connections.command;
    const metrics = consoleMetrics(ctx.metrics);
    const auth = new OsAuthenticator(redis, ctx.keys, config.AUTH_JWT_SECRET, config.OS_TOKEN_MAX_LIFETIME_S);
    const operators = consoleOperatorGate(auth);
    const feed = new ConsoleLiveFeed({
      subscriber: ctx.connections.subscriber("console/feed"),
      keys: ctx.keys,
      auth,
      log: ctx.log,
      ended: metrics.feedsEnded,
    });
    await feed.listen();
    const playbackQueue = new Queue(QUEUE_CATALOG.lampPlayback.name, {
      connection: ctx.connections.blocking("console/playback-board"),
      prefix: ctx.keys.bullPrefix,
    });
    await serveApiDocs(ctx.http, operators);
    await registerPlaybackBoard(ctx.http, playbackQueue, operators);
    await registerConsoleRoutes(ctx.http, {
      redis,
      keys: ctx.keys,
      partitions: ctx.base.STREAM_PARTITIONS,
      queries: new OsQueries(redis, ctx.keys),
      auth,
      operators,
      feed,
      csrf: new CsrfGuard(config.AUTH_JWT_SECRET),
      refusals: metrics.refusals,
    });
    ctx.log.info("console started");
    return {
      async stop() {
        feed.close();
        await playbackQueue.close();
      },
    };
  },
});
