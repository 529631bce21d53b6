/**
 * A static check of a Lua script (its includes inlined): every key a `redis.call`/`redis.pcall` touches must be
 * derived from KEYS — `KEYS[n]` itself, or a name bound only to such a value, followed by nothing but `..`
 * suffixes. Our KEYS are hash-tagged, so a derived key shares its slot; anything else (an ARGV, a literal, a key
 * read from Redis) could live on another slot. Redis 7 itself only refuses keys held by another node, so a
 * cross-slot key that happens to sit on the same node would pass on a cluster until the slots move.
 *
 * Names are tracked per script, not per scope: a name is derived when every binding of it (assignment, function
 * parameter at every call site, generic-for value over a list of derived names) is derived, `false` or `nil`.
 * That over-approximates towards findings, never towards silence.
 */

export interface KeyFinding {
  command: string;
  /** The key argument as written. */
  key: string;
  line: number;
}

type TokenKind = "name" | "string" | "number" | "symbol";
interface Token {
  kind: TokenKind;
  /** A string keeps its quotes (`'x'`), so it never reads as the symbol it contains. */
  text: string;
  line: number;
}

/** Commands without key arguments (a channel is not a key). */
const KEYLESS = new Set(["PUBLISH", "TIME"]);
/** Commands whose every argument is a key. */
const ALL_KEYS = new Set(["DEL", "EXISTS", "UNLINK", "TOUCH", "MGET"]);
/** Commands whose first argument is their only key. */
const FIRST_KEY = new Set(
  (
    "GET SET INCR INCRBY DECR PEXPIRE EXPIRE PTTL TTL HSET HSETNX HGET HMGET HDEL HEXISTS HLEN HGETALL HINCRBY " +
    "ZADD ZREM ZRANGE ZRANGEBYSCORE ZREVRANGE ZCARD ZSCORE ZRANK ZCOUNT ZREMRANGEBYSCORE SADD SREM SISMEMBER " +
    "SMEMBERS SCARD XADD XTRIM XRANGE XREVRANGE XLEN XPENDING XACK XCLAIM XAUTOCLAIM XDEL LPUSH RPUSH LRANGE LLEN LINDEX LREM"
  ).split(" "),
);
const KEYWORDS = new Set(
  "and break do else elseif end false for function goto if in local nil not or repeat return then true until while".split(
    " ",
  ),
);
const NEUTRAL = new Set(["false", "nil"]);
const EXPRESSION_KEYWORDS = new Set(["false", "nil", "true", "not", "function"]);
/** Iterator functions: a generic-for value is derived from the list they are given, not from them. */
const ITERATORS = new Set(["ipairs", "pairs"]);

/** Every key argument of the script that is not derived from KEYS. */
export function underivedKeys(source: string): KeyFinding[] {
  const tokens = scoped(tokenize(source));
  const bindings = collectBindings(tokens);
  const derived = derivedNames(bindings, keyTables(tokens));
  const findings: KeyFinding[] = [];
  for (const call of redisCalls(tokens)) {
    const [commandArg, ...args] = call.args;
    const command =
      commandArg?.length === 1 && commandArg[0]?.kind === "string" ? commandArg[0].text.slice(1, -1) : "";
    const line = commandArg?.[0]?.line ?? call.line;
    const keyArgs = keyArguments(command.toUpperCase(), args);
    if (keyArgs === undefined) {
      findings.push({ command: command || "(not a literal)", key: "(no key rule for this command)", line });
      continue;
    }
    for (const key of keyArgs)
      if (!isDerived(key, derived)) findings.push({ command, key: key.map(unscopedText).join(" "), line });
  }
  return findings;
}

function keyArguments(command: string, args: Token[][]): Token[][] | undefined {
  if (KEYLESS.has(command)) return [];
  if (ALL_KEYS.has(command)) return args;
  if (FIRST_KEY.has(command)) return args.slice(0, 1);
  if (command === "XINFO") return args.slice(1, 2);
  if (command === "ZDIFF" || command === "ZUNION" || command === "ZINTER") {
    const count = Number(args[0]?.[0]?.text);
    return Number.isInteger(count) ? args.slice(1, 1 + count) : undefined;
  }
  return undefined;
}

/** What is derived: names bound to derived values, and tables of key functions (`os_keys.run(base, id)`). */
interface Derived {
  names: ReadonlySet<string>;
  keyTables: ReadonlySet<string>;
}

/**
 * `KEYS[...]`, a derived name, or a key function called on a derived first argument, then only `.. <anything>` at
 * the top level.
 */
function isDerived(expression: Token[], derived: Derived): boolean {
  const [first, second, third, fourth] = expression;
  if (first === undefined) return false;
  let rest: Token[];
  if (first.text === "KEYS" && second?.text === "[") {
    const close = matching(expression, 1);
    rest = expression.slice(close + 1);
  } else if (first.kind === "name" && derived.names.has(first.text)) {
    rest = expression.slice(1);
  } else if (
    derived.keyTables.has(unscopedText(first)) &&
    second?.text === "." &&
    third &&
    fourth?.text === "("
  ) {
    const [base] = splitArguments(expression, 3);
    if (base === undefined || !isDerived(base, derived)) return false;
    rest = expression.slice(matching(expression, 3) + 1);
  } else return false;
  return rest.length === 0 || rest[0]?.text === "..";
}

/**
 * Tables whose every function is `function <table>.<name>(base, ...) return base .. <...> end` (the generated key
 * includes): such a function only extends its first argument, so its result is derived when that is.
 */
function keyTables(tokens: Token[]): Set<string> {
  const verdicts = new Map<string, boolean>();
  tokens.forEach((token, at) => {
    if (token.text !== "function" || tokens[at + 2]?.text !== "." || tokens[at + 4]?.text !== "(") return;
    const table = unscopedText(tokens[at + 1] as Token);
    const base = tokens[at + 5];
    const body = tokens.slice(matching(tokens, at + 4) + 1);
    const end = body.findIndex((candidate) => candidate.text === "end");
    const extendsBase =
      body[0]?.text === "return" &&
      base?.kind === "name" &&
      body[1]?.text === base.text &&
      (end === 2 || body[2]?.text === "..") &&
      body.slice(0, end).every((candidate) => candidate.text !== "(" && candidate.text !== "function");
    verdicts.set(table, (verdicts.get(table) ?? true) && extendsBase);
  });
  return new Set([...verdicts].filter(([, extendsBase]) => extendsBase).map(([table]) => table));
}

interface Binding {
  name: string;
  /** The bound value: an expression, or for a generic-for value the list it iterates (every name must be derived). */
  value: Token[];
  kind: "expression" | "iterated";
}

/**
 * Names reachable from KEYS through derived bindings (least fixed point), minus every name with a binding that is
 * not derived under that assumption (greatest fixed point within them): a parameter passed its own name back in a
 * recursive call stays derived, a name also bound to an ARGV does not.
 */
function derivedNames(bindings: Binding[], keyTables: ReadonlySet<string>): Derived {
  const byName = new Map<string, Binding[]>();
  for (const binding of bindings) byName.set(binding.name, [...(byName.get(binding.name) ?? []), binding]);
  const names = new Set<string>();
  const derived: Derived = { names, keyTables };
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, list] of byName)
      if (!names.has(name) && list.some((binding) => bindingDerivation(binding, derived) === "derived")) {
        names.add(name);
        grew = true;
      }
  }
  for (let shrank = true; shrank;) {
    shrank = false;
    for (const name of names)
      if ((byName.get(name) ?? []).some((binding) => bindingDerivation(binding, derived) === "other")) {
        names.delete(name);
        shrank = true;
      }
  }
  return derived;
}

function bindingDerivation(binding: Binding, derived: Derived): "derived" | "neutral" | "other" {
  const { value } = binding;
  if (value.length === 1 && NEUTRAL.has(value[0]?.text ?? "")) return "neutral";
  if (binding.kind === "expression") return isDerived(value, derived) ? "derived" : "other";
  const names = value.filter(
    (token) => token.kind === "name" && !KEYWORDS.has(token.text) && !ITERATORS.has(token.text),
  );
  return names.length > 0 && names.every((token) => derived.names.has(token.text)) ? "derived" : "other";
}

/** Assignments (`local a, b = x, y` and `a = x` outside table constructors), function parameters, for variables. */
function collectBindings(tokens: Token[]): Binding[] {
  const bindings: Binding[] = [];
  const functions = new Map<string, string[]>();
  let braces = 0;
  let parens = 0;
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index] as Token;
    if (token.text === "{") braces += 1;
    if (token.text === "}") braces -= 1;
    if (token.text === "(") parens += 1;
    if (token.text === ")") parens -= 1;
    if (token.text === "function") {
      const open = tokens.findIndex((candidate, at) => at > index && candidate.text === "(");
      const name = tokens
        .slice(index + 1, open)
        .map((t) => t.text)
        .join("");
      const close = matching(tokens, open);
      const params = tokens.slice(open + 1, close).filter((t) => t.kind === "name");
      if (name !== "")
        functions.set(
          name,
          params.map((t) => t.text),
        );
      for (const param of params)
        if (name === "") bindings.push({ name: param.text, value: [], kind: "expression" });
      continue;
    }
    if (token.text === "for") {
      const names: string[] = [];
      let at = index + 1;
      for (; isName(tokens[at]) || tokens[at]?.text === ","; at += 1)
        if (tokens[at]?.kind === "name") names.push(tokens[at]?.text ?? "");
      const doAt = tokens.findIndex((candidate, after) => after > at && candidate.text === "do");
      const iterated = tokens.slice(at + 1, doAt);
      names.forEach((name, position) =>
        bindings.push({
          name,
          value: tokens[at]?.text === "in" && position === names.length - 1 ? iterated : [],
          kind: "iterated",
        }),
      );
      continue;
    }
    if (braces > 0 || parens > 0 || token.kind !== "name" || KEYWORDS.has(token.text)) continue;
    const previous = tokens[index - 1]?.text;
    if (previous === "." || previous === ":" || previous === ",") continue;
    const names = [token.text];
    let at = index + 1;
    while (tokens[at]?.text === "," && tokens[at + 1]?.kind === "name") {
      names.push(tokens[at + 1]?.text ?? "");
      at += 2;
    }
    if (tokens[at]?.text !== "=") continue;
    const values = expressionList(tokens, at + 1);
    names.forEach((name, position) =>
      bindings.push({ name, value: values[position] ?? [], kind: "expression" }),
    );
  }
  for (const [name, params] of functions)
    for (const args of callsOf(tokens, name))
      params.forEach((param, position) =>
        bindings.push({ name: param, value: args[position] ?? [], kind: "expression" }),
      );
  return bindings;
}

/** The comma-separated expressions starting at `from`, up to where the statement ends. */
function expressionList(tokens: Token[], from: number): Token[][] {
  const list: Token[][] = [[]];
  for (let at = from; at < tokens.length; at += 1) {
    const token = tokens[at] as Token;
    const current = list[list.length - 1] as Token[];
    if (token.text === "(" || token.text === "[" || token.text === "{") {
      const close = matching(tokens, at);
      current.push(...tokens.slice(at, close + 1));
      at = close;
      continue;
    }
    if (token.text === ",") {
      list.push([]);
      continue;
    }
    const last = current[current.length - 1];
    if (last !== undefined && endsOperand(last) && startsOperand(token)) break;
    if (last === undefined && KEYWORDS.has(token.text) && !EXPRESSION_KEYWORDS.has(token.text)) break;
    current.push(token);
  }
  return list;
}

const endsOperand = (token: Token) =>
  token.kind !== "symbol"
    ? !KEYWORDS.has(token.text) || ["true", "false", "nil", "end"].includes(token.text)
    : [")", "]", "}"].includes(token.text);
const startsOperand = (token: Token) =>
  (token.kind !== "symbol" && !["and", "or", "then", "do"].includes(token.text)) || token.text === "{";

function callsOf(tokens: Token[], name: string): Token[][][] {
  const calls: Token[][][] = [];
  tokens.forEach((token, at) => {
    if (token.text !== name || tokens[at + 1]?.text !== "(" || tokens[at - 1]?.text === "function") return;
    calls.push(splitArguments(tokens, at + 1));
  });
  return calls;
}

function redisCalls(tokens: Token[]): { args: Token[][]; line: number }[] {
  const calls: { args: Token[][]; line: number }[] = [];
  tokens.forEach((token, at) => {
    if (token.text !== "redis" || tokens[at + 1]?.text !== ".") return;
    const method = tokens[at + 2]?.text;
    if ((method !== "call" && method !== "pcall") || tokens[at + 3]?.text !== "(") return;
    calls.push({ args: splitArguments(tokens, at + 3), line: token.line });
  });
  return calls;
}

/** The top-level arguments of the call whose `(` is at `open`. */
function splitArguments(tokens: Token[], open: number): Token[][] {
  const close = matching(tokens, open);
  const args: Token[][] = [[]];
  for (let at = open + 1; at < close; at += 1) {
    const token = tokens[at] as Token;
    if (token.text === "(" || token.text === "[" || token.text === "{") {
      const end = matching(tokens, at);
      args[args.length - 1]?.push(...tokens.slice(at, end + 1));
      at = end;
    } else if (token.text === ",") args.push([]);
    else args[args.length - 1]?.push(token);
  }
  return args.filter((arg) => arg.length > 0);
}

const PAIRS: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

function matching(tokens: Token[], open: number): number {
  const opener = tokens[open]?.text ?? "";
  const closer = PAIRS[opener];
  let depth = 0;
  for (let at = open; at < tokens.length; at += 1) {
    if (tokens[at]?.text === opener) depth += 1;
    if (tokens[at]?.text === closer) depth -= 1;
    if (depth === 0) return at;
  }
  throw new Error(`unbalanced ${opener} at line ${tokens[open]?.line}`);
}

const SYMBOLS = ["...", "..", "==", "~=", "<=", ">=", "::"];

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let at = 0;
  const push = (kind: TokenKind, text: string) => tokens.push({ kind, text, line });
  while (at < source.length) {
    const rest = source.slice(at);
    const char = source[at] as string;
    const longBracket = /^\[(=*)\[/.exec(rest);
    if (rest.startsWith("--")) {
      const long = /^--\[(=*)\[/.exec(rest);
      const end = long ? source.indexOf(`]${long[1]}]`, at) + long[0].length - 2 : source.indexOf("\n", at);
      const stop = end < 0 ? source.length : end;
      line += countLines(source.slice(at, stop));
      at = stop;
    } else if (longBracket) {
      const end = source.indexOf(`]${longBracket[1]}]`, at) + longBracket[0].length;
      push("string", `'${source.slice(at + longBracket[0].length, end - longBracket[0].length)}'`);
      line += countLines(source.slice(at, end));
      at = end;
    } else if (char === "'" || char === '"') {
      let end = at + 1;
      while (source[end] !== char) end += source[end] === "\\" ? 2 : 1;
      push("string", `'${source.slice(at + 1, end)}'`);
      at = end + 1;
    } else if (/\s/.test(char)) {
      if (char === "\n") line += 1;
      at += 1;
    } else if (/[A-Za-z_]/.test(char)) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest)?.[0] ?? char;
      push("name", name);
      at += name.length;
    } else if (/[0-9]/.test(char)) {
      const number = /^(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)/.exec(rest)?.[0] ?? char;
      push("number", number);
      at += number.length;
    } else {
      const symbol = SYMBOLS.find((candidate) => rest.startsWith(candidate)) ?? char;
      push("symbol", symbol);
      at += symbol.length;
    }
  }
  return tokens;
}

const countLines = (text: string) => text.split("\n").length - 1;

const isName = (token: Token | undefined) => token?.kind === "name" && !KEYWORDS.has(token.text);
const unscopedText = (token: Token) => token.text.replace(/@\d+$/, "");

/**
 * Renames every local (a `local` name, a function parameter, a for variable) to `name@<scope>` for the block it is
 * declared in, so two functions' `key` parameters or two loops' `target` are different names.
 */
function scoped(tokens: Token[]): Token[] {
  const renamed = tokens.map((token) => ({ ...token }));
  const blocks: Map<string, string>[] = [new Map()];
  let nextScope = 0;
  let forVariables: Map<string, string> | undefined;
  const declare = (scope: Map<string, string>, token: Token, id: number) => {
    const unique = `${token.text}@${id}`;
    scope.set(token.text, unique);
    token.text = unique;
  };
  for (let at = 0; at < renamed.length; at += 1) {
    const token = renamed[at] as Token;
    const previous = renamed[at - 1]?.text;
    if (token.text === "function") {
      const scope = new Map<string, string>();
      const id = (nextScope += 1);
      if (previous === "local" && isName(renamed[at + 1]))
        declare(blocks[blocks.length - 1] as Map<string, string>, renamed[at + 1] as Token, id);
      const open = renamed.findIndex((candidate, after) => after > at && candidate.text === "(");
      const close = matching(renamed, open);
      for (let param = open + 1; param < close; param += 1)
        if (isName(renamed[param])) declare(scope, renamed[param] as Token, id);
      blocks.push(scope);
      at = close;
      continue;
    }
    if (token.text === "for") {
      forVariables = new Map();
      const id = (nextScope += 1);
      let variable = at + 1;
      for (; isName(renamed[variable]) || renamed[variable]?.text === ","; variable += 1)
        if (isName(renamed[variable])) declare(forVariables, renamed[variable] as Token, id);
      at = variable - 1;
      continue;
    }
    if (token.text === "do") {
      blocks.push(forVariables ?? new Map());
      forVariables = undefined;
      continue;
    }
    if (token.text === "if" || token.text === "repeat") blocks.push(new Map());
    if (token.text === "end" || token.text === "until") blocks.pop();
    if (token.text === "local" && renamed[at + 1]?.text !== "function") {
      const id = (nextScope += 1);
      for (let name = at + 1; isName(renamed[name]) || renamed[name]?.text === ","; name += 1)
        if (isName(renamed[name]))
          declare(blocks[blocks.length - 1] as Map<string, string>, renamed[name] as Token, id);
      continue;
    }
    if (!isName(token) || previous === "." || previous === ":") continue;
    for (let depth = blocks.length - 1; depth >= 0; depth -= 1) {
      const unique = blocks[depth]?.get(token.text);
      if (unique !== undefined) {
        token.text = unique;
        break;
      }
    }
  }
  return renamed;
}
