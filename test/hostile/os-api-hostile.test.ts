import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { casesFor, SurfaceTally, timeoutFor } from "./hostile-budget.js";
import { snapshotChanges, snapshotKeys } from "./key-snapshot.js";
import { disclosed, LampWorld, speakResult, voiceRequest } from "./lamp-world.js";
import { ProbedSocket } from "./probed-socket.js";
import { rawExchange, rawRequest } from "./raw-http.js";

const DEVICE = "lamp-api";
const CASES = casesFor(400);
const VOLATILE = /:bull\}:|:lamp-presence$|:lamp-gateway:.*:alive$|:stream-readers:/;

let world: LampWorld;
let own: { runIds: string[]; resultId: string };
let tokens: Record<"device" | "otherDevice" | "operator", string>;

beforeAll(async () => {
  world = await LampWorld.start("hostile-api");
  const lamp = await ProbedSocket.open(world.lampUrl, await world.token(DEVICE), "sentinel");
  const runIds: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    const { answers } = await lamp.exchange({ text: JSON.stringify(voiceRequest()), binary: false });
    runIds.push(String(answers[0]?.runId));
  }
  const spoken = await speakResult(world.store, lamp, DEVICE, "my own answer");
  own = { runIds: [...runIds, spoken.runId], resultId: spoken.resultId };
  lamp.close();
  tokens = {
    device: await world.token(DEVICE),
    otherDevice: await world.token(world.other.deviceId),
    operator: await world.token("ops-1", "operator"),
  };
});
afterAll(async () => world.stop());

type Caller = "device" | "otherDevice" | "operator" | "none" | "garbage";

const encoded = fc.string({ unit: "grapheme", maxLength: 30 }).map(encodeURIComponent);
const rawSegment = fc.constantFrom(
  "..",
  "%2e%2e",
  "%2F",
  "%00",
  "%",
  "%zz",
  "a%2Fb",
  "",
  ".",
  "x".repeat(300),
  "%E0%A4%A",
);

function idSegment() {
  return fc.oneof(
    fc.constantFrom(...world.other.runIds, world.other.resultId, ...own.runIds, own.resultId),
    encoded,
    rawSegment,
  );
}

const query = fc.oneof(
  fc.constant(""),
  fc
    .constantFrom("pending", "resolved", "unknown", "PENDING", "", "x", "pending,resolved")
    .map((state) => `state=${state}`),
  fc
    .constantFrom(
      DEVICE,
      "lamp-other",
      "",
      "a b",
      "{d:lamp-other}",
      "*",
      "x".repeat(129),
      "%00",
      "lamp-other%7D",
    )
    .map((device) => `deviceId=${encodeURIComponent(device)}`),
  fc.constant("deviceId=%00"),
  fc.constant(`deviceId=${DEVICE}&deviceId=lamp-other`),
  encoded.map((text) => `${text}=${text}`),
);

function requestArbitrary() {
  const path = fc.oneof(
    idSegment().map((id) => `/v1/runs/${id}`),
    idSegment().map((id) => `/v1/results/${id}`),
    fc.constantFrom(
      "/v1/runs",
      "/v1/rejections",
      "/v1/held-results",
      "/v1/protocol-errors",
      "/v1/results",
      "/v1/runs/",
      "/v1//runs",
    ),
    fc.tuple(idSegment(), rawSegment).map(([id, tail]) => `/v1/runs/${id}/${tail}`),
  );
  return fc.record({
    method: fc.constantFrom("GET", "GET", "GET", "GET", "POST", "DELETE", "PUT", "HEAD"),
    path,
    query,
    caller: fc.constantFrom<Caller>(
      "device",
      "device",
      "device",
      "otherDevice",
      "operator",
      "operator",
      "none",
      "garbage",
    ),
  });
}

function headersOf(caller: Caller): Record<string, string> {
  if (caller === "none") return {};
  if (caller === "garbage") return { authorization: `Bearer ${tokens.device.slice(0, -3)}abc` };
  return { authorization: `Bearer ${tokens[caller]}` };
}

describe("hostile input at the OS query API", () => {
  it(
    `${CASES} fuzzed paths, queries, methods and callers: never 5xx, JSON errors, reads change nothing, a device sees only its own records`,
    async () => {
      const tally = new SurfaceTally("os-api");
      const pattern = `${world.t.keys.prefix}:*`;
      let before = await snapshotKeys(world.t.redis, pattern, VOLATILE);
      await fc.assert(
        fc.asyncProperty(requestArbitrary(), async ({ method, path, query: search, caller }) => {
          const target = search ? `${path}?${search}` : path;
          const response = await rawRequest(world.services.url, method, target, headersOf(caller));
          const after = await snapshotKeys(world.t.redis, pattern, VOLATILE);
          expect(snapshotChanges(before, after)).toEqual([]);
          before = after;
          expect(response.status, `${method} ${target}`).toBeLessThan(500);
          if (method !== "HEAD") expect(response.json, `${method} ${target}: ${response.body}`).toBeDefined();
          if (response.status >= 400 && method !== "HEAD") {
            expect(response.json, `${method} ${target}`).toMatchObject({
              error: { code: expect.any(String), message: expect.any(String) },
            });
          }
          if (caller === "none" || caller === "garbage")
            expect([401, 404, 400], `${method} ${target}`).toContain(response.status);
          if (caller === "device") expect(disclosed(world.other, response.body, target)).toEqual([]);
          if (caller === "otherDevice") {
            const mine = own.runIds
              .concat(own.resultId)
              .filter((id) => response.body.includes(id) && !target.includes(id));
            expect(mine).toEqual([]);
          }
          if (response.status === 200 && caller === "device" && method !== "HEAD") {
            const body = response.json as { deviceId?: string; runId?: string; resultId?: string };
            if (body.deviceId !== undefined) expect(body.deviceId).toBe(DEVICE);
            if (body.runId !== undefined) expect(own.runIds).toContain(body.runId);
          }
          tally.count(`${caller}_${response.status}`);
        }),
        { numRuns: CASES },
      );
      tally.report();
      expect((await fetch(`${world.services.url}/healthz`)).status).toBe(200);
    },
    timeoutFor(CASES, 20),
  );

  it("keeps each device to its own ids: the other device's run and result are 404 for this device, 403 by name", async () => {
    const get = (path: string, token: string) =>
      rawRequest(world.services.url, "GET", path, { authorization: `Bearer ${token}` });
    expect((await get(`/v1/runs/${world.other.runIds[0]}`, tokens.device)).status).toBe(404);
    expect((await get(`/v1/results/${world.other.resultId}`, tokens.device)).status).toBe(404);
    expect((await get(`/v1/runs?deviceId=${world.other.deviceId}`, tokens.device)).status).toBe(403);
    const operator = await get(
      `/v1/results/${world.other.resultId}?deviceId=${world.other.deviceId}`,
      tokens.operator,
    );
    expect(operator.json).toMatchObject({ resultId: world.other.resultId, deviceId: world.other.deviceId });
    const mine = await get(`/v1/runs/${own.runIds[0]}`, tokens.device);
    expect(mine.json).toMatchObject({ runId: own.runIds[0] });
  });

  it("answers Fastify's and Node's own errors as {error:{code,message}} with a code for the status", async () => {
    const url = world.services.url;
    const revoke = "/v1/lamp/devices/lamp-x";
    const cases = [
      [await rawRequest(url, "GET", "/v1/runs", { "x-huge": "h".repeat(20_000) }), 431, "HEADERS_TOO_LARGE"],
      [
        await rawRequest(url, "DELETE", revoke, { "content-type": "text/xml" }, "<x/>"),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
      ],
      [
        await rawRequest(
          url,
          "DELETE",
          revoke,
          { "content-type": "application/json" },
          `"${"x".repeat(70_000)}"`,
        ),
        413,
        "PAYLOAD_TOO_LARGE",
      ],
      [
        await rawRequest(url, "DELETE", revoke, { "content-type": "application/json" }, "{"),
        400,
        "INVALID_REQUEST",
      ],
      [await rawRequest(url, "GET", "/v1/runs//%E0%A4%A"), 400, "INVALID_REQUEST"],
      [await rawRequest(url, "GET", "/v1/nowhere"), 404, "NOT_FOUND"],
      [
        await rawRequest(url, "GET", `/v1/runs?deviceId=${world.other.deviceId}`, headersOf("device")),
        403,
        "FORBIDDEN",
      ],
      [await rawRequest(url, "GET", "/v1/runs"), 401, "UNAUTHORIZED"],
      [await rawExchange(url, "NOT HTTP AT ALL\r\n\r\n"), 400, "INVALID_REQUEST"],
    ] as const;
    for (const [response, status, code] of cases)
      expect({ status: response.status, json: response.json }, response.body).toEqual({
        status,
        json: { error: { code, message: expect.any(String) } },
      });
  });
});
