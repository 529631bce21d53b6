import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { redriveKey } from "../../libs/streams/dead-letters.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { pageCsrfToken, signIn } from "../console/console-session.js";
import { OperatorHost } from "../openapi/operator-host.js";

/**
 * The console against another page of the same site (another port of this host) and against credentials that end
 * while it streams: forged state changes change nothing, and the live feed stops with its credential.
 */
let host: OperatorHost;
let base: string;
/** Another origin of the same site: SameSite=Strict sends the cookie to it, so only the Origin check tells. */
let sameSiteElsewhere: string;
beforeAll(async () => {
  host = await OperatorHost.start("console-forgery");
  base = await host.listen();
  sameSiteElsewhere = `http://127.0.0.1:${await freePort()}`;
}, 60_000);
afterAll(() => host?.stop());

/** A dead letter of engine.records, whose consumer this host does not run: a redriven entry stays put. */
const STREAM = STREAM_CATALOG.engineRecords.name;

async function deadLetter(): Promise<string> {
  const { redis, keys } = host.t;
  return (
    (await redis.xadd(
      keys.deadLetter(STREAM),
      "*",
      ...["stream", STREAM, "group", "evidence-extractor", "originalId", "1-1", "error", "POISON"],
      ...["deliveries", "5", "failedAt", new Date().toISOString(), PAYLOAD_FIELD, "{}"],
    )) ?? ""
  );
}

async function redrive(headers: Record<string, string>, fields: Record<string, string>) {
  const response = await fetch(`${base}/console/dead-letters/redrive`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: response.status, body: await response.text() };
}

async function deadLetterIds(): Promise<string[]> {
  const entries = await host.t.redis.xrange(host.t.keys.deadLetter(STREAM), "-", "+");
  return entries.map(([id]) => id);
}

describe("state-changing console routes refuse forged requests", () => {
  it("a redrive from another origin or site, without the token, or without an origin is refused and moves nothing", async () => {
    const id = await deadLetter();
    const cookie = await signIn(base, await host.osToken("ops-forgery", "operator"));
    const csrf = await pageCsrfToken(base, cookie);
    const letter = { stream: STREAM, id };
    const forged: { name: string; headers: Record<string, string>; fields: Record<string, string> }[] = [
      {
        name: "another port of the site",
        headers: { cookie, origin: sameSiteElsewhere },
        fields: { ...letter, csrf },
      },
      {
        name: "another site",
        headers: { cookie, origin: "https://evil.example" },
        fields: { ...letter, csrf },
      },
      { name: "an opaque origin", headers: { cookie, origin: "null" }, fields: { ...letter, csrf } },
      { name: "no token", headers: { cookie, origin: base }, fields: letter },
      { name: "a wrong token", headers: { cookie, origin: base }, fields: { ...letter, csrf: `${csrf}x` } },
      {
        name: "another session's token",
        headers: { cookie, origin: base },
        fields: { ...letter, csrf: "A".repeat(43) },
      },
      { name: "no Origin", headers: { cookie }, fields: { ...letter, csrf } },
      {
        name: "a same-site page whose Origin is withheld",
        headers: { cookie, origin: "null", "sec-fetch-site": "same-site" },
        fields: { ...letter, csrf },
      },
      {
        name: "another port, though it names this origin",
        headers: { cookie, origin: base, "sec-fetch-site": "same-site" },
        fields: { ...letter, csrf },
      },
    ];
    for (const attempt of forged) {
      const answer = await redrive(attempt.headers, attempt.fields);
      expect(answer.status, attempt.name).toBe(403);
      expect(JSON.parse(answer.body), attempt.name).toMatchObject({ error: { code: "FORBIDDEN" } });
    }
    expect(await deadLetterIds()).toContain(id);
    expect(await host.t.redis.xlen(redriveKey(host.t.keys, STREAM))).toBe(0);

    // A browser under the console's `Referrer-Policy: no-referrer` posts `Origin: null`; Sec-Fetch-Site vouches.
    const honest = await redrive(
      { cookie, origin: "null", "sec-fetch-site": "same-origin" },
      { ...letter, csrf },
    );
    expect(honest.status).toBe(303);
    expect(await deadLetterIds()).not.toContain(id);
    expect(await host.t.redis.xlen(redriveKey(host.t.keys, STREAM))).toBe(1);
  });

  it("a bearer-header request needs no token but is refused from another origin", async () => {
    const authorization = `Bearer ${await host.osToken("ops-bearer", "operator")}`;
    const id = await deadLetter();
    expect((await redrive({ authorization, origin: sameSiteElsewhere }, { stream: STREAM, id })).status).toBe(
      403,
    );
    expect(await deadLetterIds()).toContain(id);
    expect((await redrive({ authorization }, { stream: STREAM, id })).status).toBe(303);
    expect(await deadLetterIds()).not.toContain(id);
  });

  it("sign-out needs the token too, and the sign-in form refuses another origin", async () => {
    const token = await host.osToken("ops-signout", "operator");
    const cookie = await signIn(base, token);
    const signOut = (fields: Record<string, string>) =>
      fetch(`${base}/console/logout`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: base },
        body: new URLSearchParams(fields).toString(),
      });
    expect((await signOut({})).status).toBe(403);
    expect((await signOut({ csrf: await pageCsrfToken(base, cookie) })).status).toBe(303);
    const crossSignIn = await fetch(`${base}/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: sameSiteElsewhere },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(crossSignIn.status).toBe(403);
    expect(crossSignIn.headers.get("set-cookie")).toBeNull();
  });
});

/** Reads an event stream until the server ends it; the text and when it ended. */
async function readUntilEnd(body: ReadableStream<Uint8Array>): Promise<{ text: string; endedAt: number }> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true });
  return { text, endedAt: Date.now() };
}

async function openFeed(cookie: string) {
  const response = await fetch(`${base}/console/events`, { headers: { cookie } });
  expect(response.status).toBe(200);
  if (!response.body) throw new Error("no body");
  return response.body;
}

describe("the live feed lives only as long as its credential", () => {
  it("ends within a second of the operator's revocation, and a new feed is refused", async () => {
    const cookie = await signIn(base, await host.osToken("ops-revoked", "operator"));
    const ended = readUntilEnd(await openFeed(cookie));
    const admin = `Bearer ${await host.osToken("ops-admin", "operator")}`;
    const revoked = await fetch(`${base}/v1/lamp/devices/ops-revoked`, {
      method: "DELETE",
      headers: { authorization: admin },
    });
    expect(revoked.status).toBe(200);
    const revokedAt = Date.now();
    const { text, endedAt } = await ended;
    expect(endedAt - revokedAt).toBeLessThan(1_000);
    expect(text).toContain("event: ready");
    expect(text).toMatch(/event: signed-out\ndata: revoked\n\n$/);
    expect((await fetch(`${base}/console/events`, { headers: { cookie } })).status).toBe(401);
  });

  it("ends at its token's expiry", async () => {
    const token = await host.osToken("ops-expiring", "operator", 2);
    const expiresAtMs =
      (JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString()) as { exp: number }).exp *
      1000;
    const cookie = await signIn(base, token);
    const { text, endedAt } = await readUntilEnd(await openFeed(cookie));
    expect(endedAt).toBeGreaterThanOrEqual(expiresAtMs);
    expect(endedAt - expiresAtMs).toBeLessThan(1_000);
    expect(text).toMatch(/event: signed-out\ndata: expired\n\n$/);
  });

  it("a revocation of another operator leaves the feed streaming", async () => {
    const cookie = await signIn(base, await host.osToken("ops-bystander", "operator"));
    const body = await openFeed(cookie);
    const admin = `Bearer ${await host.osToken("ops-admin", "operator")}`;
    await fetch(`${base}/v1/lamp/devices/ops-someone-else`, {
      method: "DELETE",
      headers: { authorization: admin },
    });
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("event: tick")) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += decoder.decode(value, { stream: true });
    }
    expect(text).not.toContain("signed-out");
    await reader.cancel();
  });
});
