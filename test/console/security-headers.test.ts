import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OperatorHost } from "../openapi/operator-host.js";
import { signIn } from "./console-session.js";

let host: OperatorHost;
let base: string;
beforeAll(async () => {
  host = await OperatorHost.start("security-headers");
  base = await host.listen();
}, 60_000);
afterAll(() => host?.stop());

/** HTML and JSON answers of every kind the operator host serves, admitted and refused. */
const ROUTES = [
  { url: "/console/", kind: "console page" },
  { url: "/console/panels/pipeline", kind: "console panel" },
  { url: "/console/assets/console.js", kind: "console script" },
  { url: "/console/queues/", kind: "Bull Board" },
  { url: "/docs/static/index.html", kind: "API docs UI" },
  { url: "/openapi.json", kind: "API document" },
  { url: "/v1/runs?deviceId=lamp-1", kind: "OS API (JSON)" },
  { url: "/no/such/route", kind: "no such route (404)" },
  { url: "/healthz", kind: "probe" },
] as const;

function expectSecurityHeaders(headers: Headers, label: string): void {
  const policy = headers.get("content-security-policy") ?? "";
  expect(policy, label).toContain("default-src 'self'");
  expect(policy, label).toContain("frame-ancestors 'none'");
  expect(policy, label).not.toContain("unsafe-inline");
  expect(policy, label).not.toContain("unsafe-eval");
  expect(headers.get("x-frame-options"), label).toBe("DENY");
  expect(headers.get("x-content-type-options"), label).toBe("nosniff");
  expect(headers.get("referrer-policy"), label).toBe("no-referrer");
  expect(headers.get("cache-control"), label).toBe("no-store");
}

describe("every answer carries the security headers", () => {
  it.each(ROUTES)("$kind ($url): admitted", async ({ url }) => {
    const operator = `Bearer ${await host.osToken("ops", "operator")}`;
    const response = await fetch(`${base}${url}`, { headers: { authorization: operator } });
    expect(response.status, url).toBeLessThan(500);
    expectSecurityHeaders(response.headers, url);
  });

  it.each(ROUTES)("$kind ($url): refused or anonymous", async ({ url }) => {
    const response = await fetch(`${base}${url}`);
    expectSecurityHeaders(response.headers, url);
  });

  it("on the session cookie too, and on the live feed's event stream", async () => {
    const cookie = await signIn(base, await host.osToken("ops-headers", "operator"));
    const page = await fetch(`${base}/console/`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expectSecurityHeaders(page.headers, "/console/ by cookie");
    const controller = new AbortController();
    const feed = await fetch(`${base}/console/events`, { headers: { cookie }, signal: controller.signal });
    expect(feed.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expectSecurityHeaders(feed.headers, "/console/events");
    controller.abort();
  });

  it("the console's pages hold no inline script or style", async () => {
    const operator = `Bearer ${await host.osToken("ops", "operator")}`;
    for (const url of ["/console/", "/console/runs", "/console/problems", "/console/login"]) {
      const html = await (await fetch(`${base}${url}`, { headers: { authorization: operator } })).text();
      expect(html, url).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html, url).not.toMatch(/<style|\sstyle=|\son[a-z]+=/);
    }
  });
});
