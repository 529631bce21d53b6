import type { z } from "zod";
import type { ReceiptInput } from "../../../libs/contract/receipt.js";
import type { EngineRequestAnswer } from "./engine-requests.js";
import type { dispatchInputSchema, dispatchStopSchema } from "../../../libs/contract/pipeline-payloads.js";

export type DispatchInput = z.infer<typeof dispatchInputSchema>;
export type DispatchStop = z.infer<typeof dispatchStopSchema>;
export type InputMode = ReceiptInput["mode"];

/** One frame to write, with how the input was handed to the engine (receipt.input.mode). */
export interface PlannedFrame {
  raw: string;
  mode: InputMode;
}

/** Link from an outbound record to the reservation it carries (engine.records `outbound.input`). */
export interface OutboundInput {
  deliveryId: string;
  deviceId: string;
  idempotencyKey: string;
  kind: "input" | "stop";
  text?: string;
  mode: InputMode;
}

/** Records a frame as outbound, then writes it to the engine (never written-but-unrecorded). */
export type Transmit = (raw: string, input?: OutboundInput) => Promise<void>;

/** An input written to the engine that its running turn holds (consumed, or queued to be folded or followed). */
export type RunningInput = Pick<OutboundInput, "deliveryId" | "deviceId" | "idempotencyKey">;

/** How a session writes, and what it tells its runner: the running turn ended; an engine request was answered. */
export interface SessionHooks {
  transmit: Transmit;
  turnEnded: () => void;
  requestAnswered: (answer: EngineRequestAnswer) => void;
}

/**
 * The runner's view of one engine runtime speaking one protocol: it builds frames with our ids as the engine's
 * own correlation ids and follows the engine's frames to know whether a turn is running.
 */
export interface EngineSession {
  /** Resolves when inputs may be written (after the protocol handshake, if any). */
  start(): Promise<void>;
  /** Every line the engine printed, in order. */
  observe(line: string): void;
  inputFrame(input: DispatchInput): Promise<PlannedFrame>;
  stopFrame(stop: DispatchStop): PlannedFrame;
  /** Inputs written and not yet answered, oldest first: the engine may still fold them into one turn. */
  runningInputs(): readonly RunningInput[];
  /** Those of them the engine has taken into its running turn (not merely queued), oldest first. */
  consumedInputs(): readonly RunningInput[];
}

export function runningInput(input: DispatchInput): RunningInput {
  return { deliveryId: input.deliveryId, deviceId: input.deviceId, idempotencyKey: input.idempotencyKey };
}

export function outboundInput(dispatch: DispatchInput | DispatchStop, mode: InputMode): OutboundInput {
  return {
    deliveryId: dispatch.deliveryId,
    deviceId: dispatch.deviceId,
    idempotencyKey: dispatch.idempotencyKey,
    kind: dispatch.kind,
    ...(dispatch.kind === "input" ? { text: dispatch.text } : {}),
    mode,
  };
}
