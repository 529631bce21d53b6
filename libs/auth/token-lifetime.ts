import { envInt } from "../config/env-fields.js";
import { DEFAULT_MAX_TOKEN_LIFETIME_SECONDS } from "./tokens.js";

/** At most ten years: a configured maximum is still a maximum. */
const lifetimeSeconds = envInt(DEFAULT_MAX_TOKEN_LIFETIME_SECONDS, 60, 10 * 365 * 86_400);

/** The longest lifetime an OS token (aud `os`: Lamps and OS operators) may claim where OS tokens are verified. */
export const osTokenLifetimeEnvFields = { OS_TOKEN_MAX_LIFETIME_S: lifetimeSeconds };

/** The longest lifetime a Harness token (aud `harness`: the OS's peer tokens, Harness operators) may claim. */
export const harnessTokenLifetimeEnvFields = { HARNESS_TOKEN_MAX_LIFETIME_S: lifetimeSeconds };
