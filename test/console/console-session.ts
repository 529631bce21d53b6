import { expect } from "vitest";

/** Signs in at the console's form over a real socket, as a browser on that origin does; the session cookie. */
export async function signIn(base: string, token: string): Promise<string> {
  const response = await fetch(`${base}/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
    body: new URLSearchParams({ token }).toString(),
  });
  expect(response.status).toBe(303);
  return (response.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
}

/** The CSRF token the console's overview page put in its forms for this session. */
export async function pageCsrfToken(base: string, cookie: string): Promise<string> {
  const page = await (await fetch(`${base}/console/`, { headers: { cookie } })).text();
  const token = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  expect(token).toBeDefined();
  return token ?? "";
}
