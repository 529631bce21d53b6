/**
 * The headers every answer of every service carries. One policy for all: no inline script or style, nothing from
 * another origin, no framing. `base-uri 'self'` because Bull Board resolves its assets against its own `<base>`;
 * `img-src data:` for the icons Swagger UI and Bull Board inline in their stylesheets. Nothing is cached: every
 * page worth having is behind a credential.
 */
export const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
} as const;
