import { dirname, relative, resolve, sep } from "node:path";

/**
 * The import boundary of the project: a service folder imports only itself and libs/; libs/ never imports a
 * service. Wiring that really spans services (services/catalog.ts, the all-in-one, run-service) sits at the top
 * of services/ and is exempt, as are tests, tools and benchmarks, which exercise services from outside.
 */
const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");

function ownerOf(file) {
  const parts = relative(root, file).split(sep);
  if (parts[0] === "libs") return { kind: "libs" };
  if (parts[0] === "services" && parts.length > 2 && parts[1] !== "all-in-one") {
    return { kind: "service", name: parts[1] };
  }
  return undefined;
}

const serviceBoundaries = {
  meta: {
    type: "problem",
    docs: {
      description: "no import from one service folder into another, and no import of a service from libs/",
    },
    messages: {
      crossService:
        "services/{{from}} must not import from services/{{to}}: give shared code a home in libs/",
      libsImportsService: "libs/ must not import from services/{{to}}",
    },
    schema: [],
  },
  create(context) {
    const from = ownerOf(context.filename);
    if (!from) return {};
    function check(node) {
      const source = node.source?.value;
      if (typeof source !== "string" || !source.startsWith(".")) return;
      const [top, to] = relative(root, resolve(dirname(context.filename), source)).split(sep);
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
