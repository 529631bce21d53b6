import { describe, expect, it } from "vitest";
import { CsrfGuard, type CsrfRefusal } from "./csrf-guard.js";
import type { SessionCredential } from "./operator-session.js";

const guard = new CsrfGuard("unit-csrf-secret-0123456789abcdef-0123");
const HOST = "console.example:8082";
const onCookie: SessionCredential = { authorization: "Bearer session-token", viaCookie: true };
const onHeader: SessionCredential = { authorization: "Bearer api-token", viaCookie: false };
const token = guard.tokenFor(onCookie);

describe("the console's forgery guard", () => {
  it.each<[string, Record<string, string>, unknown, SessionCredential, CsrfRefusal | undefined]>([
    ["same origin with the token", { origin: `http://${HOST}` }, { csrf: token }, onCookie, undefined],
    [
      "Origin withheld (no-referrer), Sec-Fetch-Site same-origin",
      { origin: "null", "sec-fetch-site": "same-origin" },
      { csrf: token },
      onCookie,
      undefined,
    ],
    [
      "the token in the header",
      { "sec-fetch-site": "same-origin", "x-csrf-token": token },
      {},
      onCookie,
      undefined,
    ],
    [
      "another port of the site",
      { origin: "http://console.example:9999" },
      { csrf: token },
      onCookie,
      "cross_origin",
    ],
    [
      "same-site by Sec-Fetch-Site, whatever Origin says",
      { origin: `http://${HOST}`, "sec-fetch-site": "same-site" },
      { csrf: token },
      onCookie,
      "cross_origin",
    ],
    ["cross-site", { "sec-fetch-site": "cross-site" }, { csrf: token }, onCookie, "cross_origin"],
    ["an opaque origin alone", { origin: "null" }, { csrf: token }, onCookie, "cross_origin"],
    ["no origin at all on the cookie", {}, { csrf: token }, onCookie, "missing_origin"],
    ["no token", { origin: `http://${HOST}` }, {}, onCookie, "csrf_token"],
    [
      "another session's token",
      { origin: `http://${HOST}` },
      { csrf: guard.tokenFor(onHeader) },
      onCookie,
      "csrf_token",
    ],
    ["a bearer client without origin (curl)", {}, {}, onHeader, undefined],
    ["a bearer client from another origin", { origin: "https://evil.example" }, {}, onHeader, "cross_origin"],
  ])("%s", (_name, headers, body, credential, refusal) => {
    expect(guard.refusalOf({ headers: { host: HOST, ...headers }, body }, credential)).toBe(refusal);
  });

  it("the token is bound to the session and to the secret", () => {
    expect(guard.tokenFor(onCookie)).toBe(token);
    expect(guard.tokenFor(onHeader)).not.toBe(token);
    expect(new CsrfGuard("another-secret-0123456789abcdef-0123").tokenFor(onCookie)).not.toBe(token);
  });
});
