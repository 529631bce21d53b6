import { PIPELINE_STREAMS, QUEUE_CATALOG, type ServiceName } from "../../../libs/contract/catalog.js";

/** One consumer group as a scaler and the group-creating init container see it: full stream key and group name. */
export interface ScaledGroup {
  service: ServiceName;
  stream: string;
  streamKey: string;
  group: string;
}

/**
 * Every consumer group of the pipeline streams, names from the catalog; a per-instance group (the engine-runner's
 * per machine) is named for the overlay's machine.
 */
export function consumerGroups(keyPrefix: string, machineId: string): ScaledGroup[] {
  return PIPELINE_STREAMS.flatMap((stream) =>
    Object.values(stream.consumers).map((consumer) => {
      const { group, service } = typeof consumer === "function" ? consumer(machineId) : consumer;
      return { service, stream: stream.name, streamKey: `${keyPrefix}:stream:${stream.name}`, group };
    }),
  );
}

/** The BullMQ list of jobs waiting for a playback worker (BullMQ prefix `<prefix>:bull`). */
export function playbackWaitList(keyPrefix: string): { service: ServiceName; key: string } {
  const queue = QUEUE_CATALOG.lampPlayback;
  return { service: queue.worker, key: `${keyPrefix}:bull:${queue.name}:wait` };
}
