import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OperatorHost } from "../openapi/operator-host.js";

let host: OperatorHost;
beforeAll(async () => {
  host = await OperatorHost.start("operator-auth");
}, 60_000);
afterAll(() => host?.stop());

/** Every kind of operator route: console pages, panels, the live feed, actions, Bull Board, the API document and docs. */
const OPERATOR_ROUTES = [
  { method: "GET", url: "/console/" },
  { method: "GET", url: "/console/runs?state=pending" },
  { method: "GET", url: "/console/problems" },
  { method: "GET", url: "/console/results/lamp-1/r-1" },
  { method: "GET", url: "/console/panels/devices" },
  { method: "GET", url: "/console/panels/pipeline" },
  { method: "GET", url: "/console/events" },
  { method: "GET", url: "/console/assets/console.js" },
  { method: "POST", url: "/console/dead-letters/redrive" },
  { method: "GET", url: "/console/queues/" },
  { method: "GET", url: "/console/queues/api/queues" },
  { method: "GET", url: "/openapi.json" },
  { method: "GET", url: "/docs" },
  { method: "GET", url: "/docs/json" },
  { method: "GET", url: "/docs/static/index.html" },
] as const;

async function answer(route: (typeof OPERATOR_ROUTES)[number], authorization?: string) {
  const response = await host.http.inject({
    method: route.method,
    url: route.url,
    headers: authorization ? { authorization } : {},
  });
  return { status: response.statusCode, body: response.json() as { error: { code: string } } };
}

describe("operator surfaces refuse everyone but operators", () => {
  it.each(OPERATOR_ROUTES)("$method $url: 401 without a token", async (route) => {
    expect(await answer(route)).toEqual({
      status: 401,
      body: { error: { code: "UNAUTHORIZED", message: "missing bearer token" } },
    });
  });

  it.each(OPERATOR_ROUTES)("$method $url: 401 for a bad token", async (route) => {
    const forged = (await host.osToken("ops", "operator")).replace(/.{6}$/, "AAAAAA");
    for (const authorization of ["Bearer not-a-jwt", `Bearer ${forged}`]) {
      const refused = await answer(route, authorization);
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe("UNAUTHORIZED");
    }
  });

  it.each(OPERATOR_ROUTES)("$method $url: 403 FORBIDDEN for a device token", async (route) => {
    expect(await answer(route, `Bearer ${await host.osToken("lamp-1", "device")}`)).toEqual({
      status: 403,
      body: { error: { code: "FORBIDDEN", message: "operator role required" } },
    });
  });

  it("a Harness peer token is refused too; a Harness operator reads the API document but not the console", async () => {
    const peer = `Bearer ${await host.harnessToken("lamp-1", "os")}`;
    expect((await answer({ method: "GET", url: "/openapi.json" }, peer)).status).toBe(403);
    const harnessOperator = `Bearer ${await host.harnessToken("ops", "operator")}`;
    expect((await answer({ method: "GET", url: "/openapi.json" }, harnessOperator)).status).toBe(200);
    expect((await answer({ method: "GET", url: "/console/" }, harnessOperator)).status).toBe(401);
  });

  it("an OS operator is let in everywhere (by header, and by the console's sign-in cookie)", async () => {
    const token = await host.osToken("ops", "operator");
    for (const url of [
      "/console/",
      "/console/queues/",
      "/openapi.json",
      "/docs/json",
      "/console/panels/pipeline",
    ]) {
      const response = await host.http.inject({ url, headers: { authorization: `Bearer ${token}` } });
      expect(response.statusCode, url).toBe(200);
    }
    const signIn = await host.http.inject({
      method: "POST",
      url: "/console/login",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ token }).toString(),
    });
    expect(signIn.statusCode).toBe(303);
    const cookie = String(signIn.headers["set-cookie"]).split(";")[0] ?? "";
    expect(String(signIn.headers["set-cookie"])).toMatch(/HttpOnly; SameSite=Strict/);
    const page = await host.http.inject({ url: "/console/", headers: { cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("<h1>Overview</h1>");
  });

  it("a browser without a session gets the sign-in page with the refusal, still as a 401", async () => {
    const response = await host.http.inject({ url: "/console/", headers: { accept: "text/html" } });
    expect(response.statusCode).toBe(401);
    expect(response.body).toContain('action="/console/login"');
    expect(response.body).toContain("missing bearer token");
  });
});
