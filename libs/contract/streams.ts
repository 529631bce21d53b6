import { STREAM_CATALOG } from "./catalog.js";

export * from "./pipeline-payloads.js";

/** The pipeline streams by their familiar keys: a view of the catalog (`catalog.ts`), which is their one home. */
export const STREAMS = {
  harnessDispatch: STREAM_CATALOG.harnessDispatch,
  engineRecords: STREAM_CATALOG.engineRecords,
  harnessEvidence: STREAM_CATALOG.harnessEvidence,
  osRouted: STREAM_CATALOG.osRouted,
  osResolved: STREAM_CATALOG.osResolved,
} as const;
