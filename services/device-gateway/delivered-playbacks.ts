/**
 * The playbackIds this gateway instance already wrote to a Lamp. A `playback.start` can reach the delivery stream
 * twice: when Redis dies after persisting the worker's XADD but before replying, the client resends the command on
 * reconnect and the stream holds two identical entries. The delivery is idempotent on the playbackId, so the Lamp
 * never hears one playback twice. Memory is enough: a restarted instance follows the stream from `$`.
 */
export class DeliveredPlaybacks {
  private readonly ids = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  /** True the first time a playbackId is delivered; false for a repeated delivery entry. */
  firstDelivery(playbackId: string): boolean {
    if (this.ids.has(playbackId)) return false;
    this.ids.add(playbackId);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.values().next();
      if (!oldest.done) this.ids.delete(oldest.value);
    }
    return true;
  }
}
