import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The project's root folder (tools/real-engines is two levels below it). */
export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
