import { RecentMap } from "../../libs/collections/recent-map.js";

/**
 * The playbackIds this gateway instance already wrote to a Lamp. A `playback.start` can reach the delivery stream
 * twice: when Redis dies after persisting the worker's XADD but before replying, the client resends the command on
 * reconnect and the stream holds two identical entries. The delivery is idempotent on the playbackId, so the Lamp
 * never hears one playback twice. Memory is enough: a restarted instance follows the stream from `$`.
 */
export class DeliveredPlaybacks {
  private readonly ids: RecentMap<string, true>;

  constructor(capacity = 10_000) {
    this.ids = new RecentMap(capacity);
  }

  /** True the first time a playbackId is delivered; false for a repeated delivery entry. */
  firstDelivery(playbackId: string): boolean {
    if (this.ids.has(playbackId)) return false;
    this.ids.set(playbackId, true);
    return true;
  }
}
