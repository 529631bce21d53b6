import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { format, resolveConfig } from "prettier";
import { renderStreamCatalog, withCatalogSection } from "../libs/contract/catalog-table.js";

/** Rewrites the stream catalog section of docs/architecture.md from libs/contract/catalog.ts (`npm run docs:catalog`). */
const path = fileURLToPath(new URL("../docs/architecture.md", import.meta.url));
const regenerated = withCatalogSection(readFileSync(path, "utf8"), renderStreamCatalog());
const options = await resolveConfig(path);
writeFileSync(path, await format(regenerated, { ...options, filepath: path }));
process.stdout.write(`${path}: stream catalog regenerated\n`);
