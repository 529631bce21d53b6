import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { FastifyAdapter } from "@bull-board/fastify";
import type { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";
import { refuseNonOperators, type OperatorGate } from "../../libs/http/operator-gate.js";
import { CONSOLE_PATHS } from "./console-paths.js";

/**
 * Bull Board for the `lamp-playback` queue at /console/queues/, behind the console's operator gate. Read-only: what
 * the Lamp speaks is decided by the outbox and playback records, so retrying or promoting a job by hand could speak
 * an answer twice; only "say that again" speaks again.
 */
export async function registerPlaybackBoard(
  http: FastifyInstance,
  queue: Queue,
  operators: OperatorGate,
): Promise<void> {
  const adapter = new FastifyAdapter();
  adapter.setBasePath(CONSOLE_PATHS.playbackQueue);
  createBullBoard({
    queues: [new BullMQAdapter(queue, { readOnlyMode: true })],
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: "Lampline playback" } },
  });
  await http.register(async (board) => {
    board.addHook("onRequest", refuseNonOperators(operators));
    await board.register(adapter.registerPlugin(), { prefix: CONSOLE_PATHS.playbackQueue });
  });
}
