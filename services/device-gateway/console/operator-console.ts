import { Queue } from "bullmq";
import { QUEUE_CATALOG } from "../../../libs/contract/catalog.js";
import { serveApiDocs } from "../../../libs/http/api-docs.js";
import type { ServiceContext } from "../../../libs/service/service-context.js";
import type { OsQueries } from "../os-queries.js";
import type { LampAuthenticator } from "../principal.js";
import { registerConsoleRoutes } from "./console-routes.js";
import { ConsoleLiveFeed } from "./live-feed.js";
import { osOperatorGate } from "./operator-session.js";
import { registerPlaybackBoard } from "./playback-board.js";

/**
 * The operator surface of the device-gateway, all behind one OS operator gate: the console at /console/, Bull Board
 * for the playback queue at /console/queues/, and the OpenAPI document and docs (/openapi.json, /docs).
 */
export async function startOperatorConsole(
  ctx: ServiceContext,
  queries: OsQueries,
  auth: LampAuthenticator,
): Promise<{ stop(): Promise<void> }> {
  const operators = osOperatorGate(auth);
  const feed = new ConsoleLiveFeed(ctx.connections.subscriber("device-gateway/console-feed"), ctx.keys);
  await feed.listen();
  const playbackQueue = new Queue(QUEUE_CATALOG.lampPlayback.name, {
    connection: ctx.connections.blocking("device-gateway/playback-board"),
    prefix: ctx.keys.bullPrefix,
  });
  await serveApiDocs(ctx.http, operators);
  await registerPlaybackBoard(ctx.http, playbackQueue, operators);
  await registerConsoleRoutes(ctx.http, {
    redis: ctx.connections.command,
    keys: ctx.keys,
    partitions: ctx.base.STREAM_PARTITIONS,
    queries,
    auth,
    operators,
    feed,
  });
  return {
    async stop() {
      feed.close();
      await playbackQueue.close();
    },
  };
}
