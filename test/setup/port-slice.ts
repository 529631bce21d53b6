import { useFreePortSlice } from "../../libs/redis/redis-server-process.js";

/**
 * Each test worker picks its ports from its own slice of the range. Two workers booting stacks at once could pick
 * the same port; the service that lost the bind exited, the other one's HTTP server answered its health checks, and
 * the stack's Lamp got a 404 on the upgrade (a fresh-clone CI run failed the membership acceptance file so).
 */
const WORKER_SLICES = 4;
useFreePortSlice(Number(process.env.VITEST_POOL_ID ?? "1") - 1, WORKER_SLICES);
