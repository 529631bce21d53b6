import { z } from "zod";
import { osTokenLifetimeEnvFields } from "../../libs/auth/token-lifetime.js";
import { envJwtSecret } from "../../libs/config/env-fields.js";

export const consoleConfigSchema = z.object({
  /** Verifies operators' OS tokens (aud `os`), as the device-gateway does; also keys the console's CSRF tokens. */
  AUTH_JWT_SECRET: envJwtSecret,
  ...osTokenLifetimeEnvFields,
});
