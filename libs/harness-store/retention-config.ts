import { envInt } from "../config/env-fields.js";

/**
 * Retention and capacity of the Harness store, read by the gateway (reservations, published limits) and the
 * result-producer (event log, results). Defaults are far above the peer's (512 receipts / 30 min / 500 events).
 */
export const retentionEnvFields = {
  RECEIPT_CAPACITY: envInt(4_096, 1, 1_000_000),
  RECEIPT_RETENTION_SECONDS: envInt(86_400, 1),
  EVENT_CAPACITY: envInt(1_000, 1, 1_000_000),
  EVENT_RETENTION_SECONDS: envInt(86_400, 1),
  RESULT_RETENTION_SECONDS: envInt(86_400, 1),
};
