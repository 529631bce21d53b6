import { z } from "zod";

/** A whole-number command-line option (given as text) of at least `min`, `fallback` when absent. */
export const countOption = (fallback: number, min = 1) => z.coerce.number().int().min(min).default(fallback);
