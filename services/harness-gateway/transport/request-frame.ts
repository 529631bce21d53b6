import { z } from "zod";
import {
  harnessRequestSchema,
  MAX_PROMPT_BYTES,
  PROTOCOL_VERSION,
  type HarnessErrorCode,
  type HarnessRequest,
} from "../../../libs/contract/harness-wire.js";
import { utf8Bytes } from "../../../libs/contract/identifiers.js";

const KNOWN_OPS = new Set(["hello", "turn.send", "turn.stop", "receipt.get"]);

/** Where an answer to a frame goes: `<op>_result` for a known op, else `error_result`; requestId when a UUID. */
export type ReplyAddress = {
  type: string;
  requestId: string | null;
};

export type ErrorFrame = ReplyAddress & {
  error: { code: HarnessErrorCode; message: string };
};

export type ParsedFrame =
  { ok: true; request: HarnessRequest; address: ReplyAddress } | { ok: false; error: ErrorFrame };

export function errorFrame(address: ReplyAddress, code: HarnessErrorCode, message: string): ErrorFrame {
  return { type: address.type, requestId: address.requestId, error: { code, message } };
}

function addressOf(frame: unknown): ReplyAddress {
  if (frame === null || typeof frame !== "object" || Array.isArray(frame))
    return { type: "error_result", requestId: null };
  const { type, requestId } = frame as Record<string, unknown>;
  return {
    type: typeof type === "string" && KNOWN_OPS.has(type) ? `${type}_result` : "error_result",
    requestId: z.uuid().safeParse(requestId).success ? (requestId as string) : null,
  };
}

/**
 * Parses one peer frame. Every failure is an error frame with a code; nothing else about the frame is trusted.
 * Oversized text is PAYLOAD_TOO_LARGE and a protocol other than ours UNSUPPORTED_CAPABILITY; the rest of the
 * schema (unknown fields included) is INVALID_REQUEST.
 */
export function parseFrame(text: string): ParsedFrame {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return { ok: false, error: errorFrame(addressOf(undefined), "INVALID_REQUEST", "frame is not JSON") };
  }
  const address = addressOf(frame);
  const fail = (code: HarnessErrorCode, message: string): ParsedFrame => ({
    ok: false,
    error: errorFrame(address, code, message),
  });
  if (address.type === "error_result") return fail("INVALID_REQUEST", "unknown or missing frame type");
  const fields = frame as Record<string, unknown>;
  if (typeof fields.text === "string" && utf8Bytes(fields.text) > MAX_PROMPT_BYTES)
    return fail("PAYLOAD_TOO_LARGE", `text exceeds ${MAX_PROMPT_BYTES} bytes of UTF-8`);
  if (fields.type === "hello" && typeof fields.proto === "number" && fields.proto !== PROTOCOL_VERSION)
    return fail(
      "UNSUPPORTED_CAPABILITY",
      `proto ${fields.proto} is not supported (speak ${PROTOCOL_VERSION})`,
    );
  const parsed = harnessRequestSchema.safeParse(frame);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail("INVALID_REQUEST", `${issue?.path.join(".") || "(frame)"}: ${issue?.message ?? "invalid"}`);
  }
  return { ok: true, request: parsed.data, address };
}
