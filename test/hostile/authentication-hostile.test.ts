import fc from "fast-check";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { signToken } from "../../libs/auth/tokens.js";
import { harnessEnv, HARNESS_SECRET, OS_SECRET, tokenFor } from "../harness/harness-fixture.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import {
  authCases,
  forgeJwt,
  type AuthCase,
  type AuthVerdict,
  type RevokedTokens,
  type SurfaceCredentials,
} from "./forged-tokens.js";
import { casesFor, SurfaceTally, timeoutFor } from "./hostile-budget.js";
import { snapshotChanges, snapshotKeys } from "./key-snapshot.js";
import { rawRequest } from "./raw-http.js";

const DEVICE = "lamp-auth";
const REVOKED_DEVICE = "lamp-revoked";
const CASES = casesFor(300);
/** Written after an accepted connection, asynchronously (presence, known devices, the `lamp.connected` event). */
const VOLATILE =
  /:lamp-presence$|:os:\{part:\d+\}:devices$|:lamp-gateway:.*:alive$|:stream:\{os\.lamp_events:\d+\}$/;

let t: TestRedis;
let services: HostedServices;
const HARNESS: SurfaceCredentials = { secret: HARNESS_SECRET, audience: "harness", role: "os" };
const OS: SurfaceCredentials = { secret: OS_SECRET, audience: "os", role: "device" };
/** The revoked device's tokens as each surface sees them (its own first). */
let revoked: { harness: RevokedTokens; os: RevokedTokens };

const osOperatorToken = () => signToken(OS_SECRET, { audience: "os", sub: "ops", role: "operator" });

/** A token of the revoked device for a surface, issued well before the revocation. */
function issuedBefore(surface: SurfaceCredentials): string {
  const iat = Math.floor(Date.now() / 1000) - 5;
  const claims = { sub: REVOKED_DEVICE, role: surface.role, aud: surface.audience, iat, exp: iat + 3600 };
  return forgeJwt({ alg: "HS256", typ: "JWT" }, claims, surface.secret);
}

beforeAll(async () => {
  t = createTestRedis("hostile-auth");
  services = await hostServices("hostile-auth", [harnessGatewayService, deviceGatewayService], harnessEnv(t));
  const harnessToken = issuedBefore(HARNESS);
  const osToken = issuedBefore(OS);
  revoked = {
    harness: { deviceId: REVOKED_DEVICE, token: harnessToken, otherSurfaceToken: osToken },
    os: { deviceId: REVOKED_DEVICE, token: osToken, otherSurfaceToken: harnessToken },
  };
  // Revoked on the OS side only: that one revocation must reach the Harness too.
  const operator = { authorization: `Bearer ${await osOperatorToken()}` };
  const answer = await rawRequest(services.url, "DELETE", `/v1/lamp/devices/${REVOKED_DEVICE}`, operator);
  expect(answer.status).toBe(200);
});
afterAll(async () => {
  await services.stop();
  await t.cleanup();
});

interface Attempt {
  status: number;
  body: unknown;
}

/** One WebSocket upgrade: 101 when the gateway accepted the credential, else its HTTP refusal and JSON body. */
function upgrade(path: string, authorization: string | undefined): Promise<Attempt> {
  const url = `${services.url.replace(/^http/, "ws")}${path}`;
  const socket = new WebSocket(url, { headers: authorization === undefined ? {} : { authorization } });
  return new Promise((resolve, reject) => {
    socket.once("open", () => {
      socket.close();
      resolve({ status: 101, body: undefined });
    });
    socket.once("unexpected-response", (_request, response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: response.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : undefined });
      });
    });
    socket.once("error", reject);
  });
}

interface Surface {
  name: string;
  /** Whose credentials are valid here, and the other surface's. */
  own: SurfaceCredentials;
  other: SurfaceCredentials;
  revoked: () => RevokedTokens;
  attempt: (authorization: string | undefined) => Promise<Attempt>;
  /** What this surface must answer to a case (the gateways differ on roles and revocation). */
  expected: (authCase: AuthCase) => AuthVerdict | "BAD_REQUEST";
  acceptedStatus: number;
}

const surfaces: Surface[] = [
  {
    name: "auth-harness-ws",
    own: HARNESS,
    other: OS,
    revoked: () => revoked.harness,
    attempt: (authorization) => upgrade("/v1/harness/ws", authorization),
    // Peers only: a Harness operator token opens the admin route, never a session.
    expected: (authCase) => (authCase.role === "operator" ? "UNAUTHORIZED" : authCase.verdict),
    acceptedStatus: 101,
  },
  {
    name: "auth-lamp-ws",
    own: OS,
    other: HARNESS,
    revoked: () => revoked.os,
    attempt: (authorization) => upgrade("/v1/lamp/ws", authorization),
    // The Lamp socket takes device tokens only.
    expected: (authCase) => (authCase.role === "operator" ? "UNAUTHORIZED" : authCase.verdict),
    acceptedStatus: 101,
  },
  {
    name: "auth-os-api",
    own: OS,
    other: HARNESS,
    revoked: () => revoked.os,
    attempt: async (authorization) => {
      const response = await rawRequest(
        services.url,
        "GET",
        "/v1/runs",
        authorization ? { authorization } : {},
      );
      return { status: response.status, body: response.json };
    },
    expected: (authCase) => (authCase.role === "operator" ? "BAD_REQUEST" : authCase.verdict),
    acceptedStatus: 200,
  },
];

describe("hostile credentials at both gateways and the OS API", () => {
  for (const surface of surfaces) {
    it(
      `${surface.name}: ${CASES} forged, expired, wrong-alg, malformed, other-surface, audience-less and revoked credentials get 401 (REVOKED where revoked), never 5xx, and store nothing`,
      async () => {
        const tally = new SurfaceTally(surface.name);
        const pattern = `${t.keys.prefix}:*`;
        let before = await snapshotKeys(t.redis, pattern, VOLATILE);
        await fc.assert(
          fc.asyncProperty(
            authCases(surface.own, surface.other, DEVICE, surface.revoked()),
            async (authCase) => {
              const attempt = await surface.attempt(authCase.authorization);
              const expected = surface.expected(authCase);
              const label = `${authCase.name}: ${attempt.status} ${JSON.stringify(attempt.body)}`;
              expect(attempt.status, label).toBeLessThan(500);
              if (expected === "accept") expect(attempt.status, label).toBe(surface.acceptedStatus);
              else if (expected === "BAD_REQUEST") expect(attempt.status, label).toBe(400);
              else {
                expect(attempt.status, label).toBe(401);
                expect(attempt.body, label).toMatchObject({
                  error: { code: expected, message: expect.any(String) },
                });
                const after = await snapshotKeys(t.redis, pattern, VOLATILE);
                expect(snapshotChanges(before, after), label).toEqual([]);
              }
              before = await snapshotKeys(t.redis, pattern, VOLATILE);
              tally.count(`${authCase.name}_${attempt.status}`);
            },
          ),
          { numRuns: CASES },
        );
        tally.report();
        expect((await fetch(`${services.url}/healthz`)).status).toBe(200);
      },
      timeoutFor(CASES, 20),
    );
  }
});

describe("token lifetime and issue time at every surface", () => {
  const now = () => Math.floor(Date.now() / 1000);
  const tokenOf = (surface: Surface, claims: Record<string, unknown>) =>
    `Bearer ${forgeJwt(
      { alg: "HS256", typ: "JWT" },
      {
        sub: DEVICE,
        role: surface.own.role,
        aud: surface.own.audience,
        iat: now(),
        exp: now() + 600,
        ...claims,
      },
      surface.own.secret,
    )}`;

  it.each(surfaces.map((surface) => [surface.name, surface] as const))(
    "%s: an exp in 2100, or 31 days without iat, is beyond the maximum lifetime and refused",
    async (_name, surface) => {
      const withoutIat = tokenOf(surface, { iat: undefined, exp: now() + 31 * 86_400 });
      for (const authorization of [tokenOf(surface, { exp: 4_102_444_800 }), withoutIat])
        expect(await surface.attempt(authorization)).toMatchObject({
          status: 401,
          body: { error: { code: "UNAUTHORIZED", message: expect.stringContaining("lifetime exceeds") } },
        });
    },
  );

  it.each(surfaces.map((surface) => [surface.name, surface] as const))(
    "%s: a revoked device's token dated an hour ahead does not outlive the revocation",
    async (_name, surface) => {
      const ahead = tokenOf(surface, { sub: REVOKED_DEVICE, iat: now() + 3600, exp: now() + 4200 });
      expect(await surface.attempt(ahead)).toMatchObject({
        status: 401,
        body: { error: { code: "UNAUTHORIZED", message: "token issued in the future (iat)" } },
      });
    },
  );
});

describe("admin routes take their own surface's operator only", () => {
  const revoke = async (path: string, token: string) => {
    const answer = await rawRequest(services.url, "DELETE", path, { authorization: `Bearer ${token}` });
    return { status: answer.status, body: answer.json };
  };

  it("the Harness admin route refuses an OS operator token with 401 and an OS peer token with 403 FORBIDDEN", async () => {
    const path = "/v1/admin/devices/lamp-admin-harness";
    expect(await revoke(path, await osOperatorToken())).toMatchObject({
      status: 401,
      body: { error: { code: "UNAUTHORIZED", message: expect.stringContaining("audience") } },
    });
    expect(await revoke(path, await tokenFor("lamp-admin-harness"))).toMatchObject({
      status: 403,
      body: { error: { code: "FORBIDDEN" } },
    });
  });

  it("the Lamp admin route refuses a Harness operator token with 401", async () => {
    expect(await revoke("/v1/lamp/devices/lamp-admin-os", await tokenFor("ops", "operator"))).toMatchObject({
      status: 401,
      body: { error: { code: "UNAUTHORIZED", message: expect.stringContaining("audience") } },
    });
  });
});
