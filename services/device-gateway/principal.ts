import type { FastifyRequest } from "fastify";
import { bearerToken, verifyToken, type Principal } from "../../libs/auth/tokens.js";

/** The caller of a Lamp or API request, from its Bearer JWT only; undefined when absent or invalid. */
export async function principalOf(request: FastifyRequest, secret: string): Promise<Principal | undefined> {
  const token = bearerToken(request.headers.authorization);
  if (!token) return undefined;
  try {
    return await verifyToken(secret, token);
  } catch {
    return undefined;
  }
}
