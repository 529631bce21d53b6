import { dirname, relative, resolve, sep } from "node:path";

/**
 * The import boundary of the project: a service folder imports only itself and libs/; libs/ never imports a
 * service. Wiring that really spans services (services/catalog.ts, the all-in-one, run-service) sits at the top
 * of services/ and is exempt, as are tests, tools and benchmarks, which exercise services from outside.
 *
 * Inside libs/, each folder sits in a layer and imports only its own folder and folders of lower layers (its tests
 * are exempt). This is the one place the order is written (docs/architecture.md, "Layout", explains it).
 */
export const LIBS_LAYERS = [
  ["errors", "timing", "collections", "logging", "config", "processes"],
  ["auth"],
  ["contract"],
  ["redis"],
  ["metrics"],
  ["streams", "leases", "retention", "test-support", "http"],
  ["os-store", "harness-store"],
  ["service"],
];

function layerOf(folder) {
  const layer = LIBS_LAYERS.findIndex((folders) => folders.includes(folder));
  return layer === -1 ? undefined : layer;
}

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");

function ownerOf(file) {
  const parts = relative(root, file).split(sep);
  if (parts[0] === "libs") return { kind: "libs", folder: parts[1], test: file.endsWith(".test.ts") };
  if (parts[0] === "services" && parts.length > 2 && parts[1] !== "all-in-one") {
    return { kind: "service", name: parts[1] };
  }
  return undefined;
}

const serviceBoundaries = {
  meta: {
    type: "problem",
    docs: {
      description:
        "no import from one service folder into another, no import of a service from libs/, and no upward import inside libs/",
    },
    messages: {
      crossService:
        "services/{{from}} must not import from services/{{to}}: give shared code a home in libs/",
      libsImportsService: "libs/ must not import from services/{{to}}",
      libsImportsUpward:
        "libs/{{from}} must not import from libs/{{to}}: a lib imports only lower layers (LIBS_LAYERS)",
      libsUnlayered:
        "libs/{{folder}} has no layer: add it to LIBS_LAYERS in tools/lint/service-boundaries.js",
    },
    schema: [],
  },
  create(context) {
    const from = ownerOf(context.filename);
    if (!from) return {};
    function checkLayers(node, fromFolder, toFolder) {
      if (fromFolder === toFolder) return;
      for (const folder of [fromFolder, toFolder])
        if (layerOf(folder) === undefined)
          return context.report({ node, messageId: "libsUnlayered", data: { folder } });
      if (layerOf(toFolder) >= layerOf(fromFolder))
        context.report({ node, messageId: "libsImportsUpward", data: { from: fromFolder, to: toFolder } });
    }
    function check(node) {
      const source = node.source?.value;
      if (typeof source !== "string" || !source.startsWith(".")) return;
      const [top, to] = relative(root, resolve(dirname(context.filename), source)).split(sep);
      if (top === "libs" && from.kind === "libs" && to !== undefined) {
        // A test exercises its lib from outside, with whatever it needs to set it up.
        if (!from.test) checkLayers(node, from.folder, to);
        return;
      }
      if (top !== "services" || to === undefined) return;
      if (from.kind === "libs") context.report({ node, messageId: "libsImportsService", data: { to } });
      else if (to !== from.name)
        context.report({ node, messageId: "crossService", data: { from: from.name, to } });
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default { rules: { "service-boundaries": serviceBoundaries } };
