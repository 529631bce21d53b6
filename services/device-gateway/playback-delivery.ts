import type { Counter } from "prom-client";
import type { LampDelivery } from "../../libs/contract/lamp-delivery.js";
import type { Logger } from "../../libs/logging/logger.js";
import { DeliveredPlaybacks } from "./delivered-playbacks.js";
import type { LampConnections } from "./lamp-connections.js";

/** Writes each entry of this instance's delivery stream to the device's Lamp sockets, once per playbackId. */
export function playbackDelivery(options: {
  connections: LampConnections;
  duplicates: Counter;
  log: Logger;
}): (delivery: LampDelivery) => void {
  const delivered = new DeliveredPlaybacks();
  return ({ deviceId, frame }) => {
    if (!delivered.firstDelivery(frame.playbackId)) {
      options.duplicates.inc();
      options.log.warn(
        { deviceId, playbackId: frame.playbackId },
        "duplicate playback.start delivery refused",
      );
      return;
    }
    const sent = options.connections.send(deviceId, frame);
    options.log.info({ deviceId, playbackId: frame.playbackId, sockets: sent }, "playback.start delivered");
  };
}
