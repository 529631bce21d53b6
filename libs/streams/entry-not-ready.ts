/**
 * A handler's "not yet": the entry cannot be handled until another entry is (an in-order record whose predecessor is
 * still pending, e.g. in a consumer that died). It is not the entry's fault and retrying it in place would block the
 * very reclaim that brings its predecessor, so the consumer leaves it pending: its stale-entry reclaim takes it again
 * after `STREAM_CLAIM_MIN_IDLE_MS`, each take counted by Redis, and the crash-loop rule (`MAX_DELIVERIES`) still ends
 * an entry whose turn never comes.
 */
export class EntryNotReadyError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "EntryNotReadyError";
  }
}
