/**
 * Turns an answer written for a screen (markdown, code, links, tables) into text a voice can say. The stored
 * `fullText` is never changed; this only derives what the Lamp speaks.
 */

export interface SpeechOptions {
  /** Upper bound of the spoken text, hint included. */
  maxChars: number;
}

export const CODE_BLOCK_SPEECH = "I've put a code example on screen.";
export const TABLE_SPEECH = "There's a table on screen.";
export const TRUNCATION_HINT = "The full answer is on screen.";
/** Said when nothing speakable is left (an answer that was only an image, say). */
export const NOTHING_SPEAKABLE = "The answer is on screen.";
export const LINK_SPEECH = "a link";

/** Shortest budget that still leaves room for a sentence before the hint. */
export const MIN_SPEECH_CHARS = TRUNCATION_HINT.length + 20;

type Block =
  { kind: "text"; text: string } | { kind: "sentence"; text: string } | { kind: "placeholder"; text: string };

export function renderSpeech(fullText: string, { maxChars }: SpeechOptions): string {
  if (maxChars < MIN_SPEECH_CHARS) throw new RangeError(`maxChars must be at least ${MIN_SPEECH_CHARS}`);
  if (fullText === "") return "";
  const spoken = joinBlocks(readBlocks(fullText.replace(/\r\n?/g, "\n").split("\n")));
  const speakable = /[\p{L}\p{N}]/u.test(spoken) ? spoken : NOTHING_SPEAKABLE;
  return fitToLength(speakable, maxChars);
}

// ---- block level -----------------------------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const LIST_ITEM = /^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$/;
const BLOCKQUOTE = /^\s*>\s?/;
const INDENTED_CODE = /^(?: {4}|\t)/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)+\|?\s*$/;
const REFERENCE_DEFINITION = /^ {0,3}\[[^\]]+\]:\s*\S+/;

function readBlocks(lines: string[]): Block[] {
  const blocks: Block[] = [];
  let paragraph: string[] = [];
  const endParagraph = () => {
    if (paragraph.length > 0) blocks.push({ kind: "text", text: paragraph.join(" ") });
    paragraph = [];
  };
  for (let index = 0; index < lines.length; index += 1) {
    const line = (lines[index] as string).replace(BLOCKQUOTE, "");
    const next = lines[index + 1]?.replace(BLOCKQUOTE, "");
    const fence = FENCE.exec(line);
    if (fence) {
      endParagraph();
      index = closingFence(lines, index, fence[1] as string);
      blocks.push({ kind: "placeholder", text: CODE_BLOCK_SPEECH });
    } else if (line.trim() === "") {
      endParagraph();
    } else if (paragraph.length === 0 && INDENTED_CODE.test(line) && !LIST_ITEM.test(line)) {
      while (
        index + 1 < lines.length &&
        (INDENTED_CODE.test(lines[index + 1] as string) || lines[index + 1]?.trim() === "")
      )
        index += 1;
      blocks.push({ kind: "placeholder", text: CODE_BLOCK_SPEECH });
    } else if (line.includes("|") && next !== undefined && TABLE_SEPARATOR.test(next)) {
      endParagraph();
      index += 1;
      while (index + 1 < lines.length && (lines[index + 1] as string).includes("|")) index += 1;
      blocks.push({ kind: "placeholder", text: TABLE_SPEECH });
    } else if (HEADING.test(line)) {
      endParagraph();
      blocks.push({ kind: "sentence", text: (HEADING.exec(line) as RegExpExecArray)[1] as string });
    } else if (paragraph.length === 1 && SETEXT_UNDERLINE.test(line)) {
      blocks.push({ kind: "sentence", text: paragraph[0] as string });
      paragraph = [];
    } else if (RULE.test(line) || REFERENCE_DEFINITION.test(line) || /^\s*<\/?[a-z][^>]*>\s*$/i.test(line)) {
      endParagraph();
    } else if (LIST_ITEM.test(line)) {
      endParagraph();
      blocks.push({ kind: "sentence", text: (LIST_ITEM.exec(line) as RegExpExecArray)[1] as string });
    } else {
      paragraph.push(line.trim());
    }
  }
  endParagraph();
  return blocks;
}

/** Index of the line closing a fence opened at `start` (or the last line when the fence never closes). */
function closingFence(lines: string[], start: number, opener: string): number {
  const closer = new RegExp(`^ {0,3}${opener[0] === "`" ? "`" : "~"}{${opener.length},}\\s*$`);
  for (let index = start + 1; index < lines.length; index += 1)
    if (closer.test((lines[index] as string).replace(BLOCKQUOTE, ""))) return index;
  return lines.length - 1;
}

function joinBlocks(blocks: Block[]): string {
  const said = new Set<string>();
  const sentences: string[] = [];
  for (const block of blocks) {
    if (block.kind === "placeholder") {
      // Each kind of thing on screen is mentioned once; "a code example" five times is noise.
      if (!said.has(block.text)) sentences.push(block.text);
      said.add(block.text);
      continue;
    }
    const text = speakInline(block.text);
    if (text === "") continue;
    sentences.push(block.kind === "sentence" ? asSentence(text) : text);
  }
  return normalizeWhitespace(
    sentences.map((text, index) => asSentenceBoundary(text, index === sentences.length - 1)).join(" "),
  );
}

/** Headings and list items become sentences of their own. */
function asSentence(text: string): string {
  return /[.!?…:;]$/.test(text) ? text.replace(/[:;]$/, ".") : `${text}.`;
}

/** A block running into the next needs an end mark, or the voice reads both as one sentence; a colon may lead on. */
function asSentenceBoundary(text: string, last: boolean): string {
  if (/[.!?…]["')\]]?$/.test(text)) return text;
  if (text.endsWith(":") && !last) return text;
  return `${text.replace(/[:;,]$/, "")}.`;
}

// ---- inline level ----------------------------------------------------------------------------------------------

const URL_PATTERN = /\b(?:https?:\/\/|www\.)[^\s<>()[\]]+[^\s<>()[\].,;:!?'"]/gi;

const ESCAPED = /\\([\\`*_{}[\]()#+\-.!|>~])/g;
const ESCAPE_SLOT = /\uE000(\d+)\uE001/g;

function speakInline(text: string): string {
  // Escaped markup characters are literal text: park them so no emphasis rule can pair them up.
  const escaped: string[] = [];
  const parked = text.replace(
    ESCAPED,
    (_match, character: string) => `\uE000${escaped.push(character) - 1}\uE001`,
  );
  return normalizeWhitespace(
    parked
      .replace(/!\[[^\]]*\]\([^)]*\)/g, "")
      .replace(/!\[[^\]]*\]\[[^\]]*\]/g, "")
      .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1")
      .replace(/\[([^\]]+)\]\[[^\]]*\]/g, "$1")
      .replace(/<(?:https?:\/\/|mailto:)[^>]+>/gi, LINK_SPEECH)
      .replace(/<\/?[a-z][^>]*>/gi, "")
      .replace(URL_PATTERN, LINK_SPEECH)
      .replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_match, _ticks, code: string) => code.trim())
      .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "$2")
      .replace(/(^|[^\w*])\*(?=\S)([^*]*?\S)\*(?![\w*])/g, "$1$2")
      .replace(/(^|[^\w])_(?=\S)([^_]*?\S)_(?!\w)/g, "$1$2")
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "$1")
      .replace(ESCAPE_SLOT, (_match, slot: string) => escaped[Number(slot)] ?? ""),
  );
}

function normalizeWhitespace(text: string): string {
  return text
    .replace(/\s+/g, " ")
    .replace(/\s+([.,!?;:])/g, "$1")
    .replace(/([.!?])\.+(?=\s|$)/g, "$1")
    .trim();
}

// ---- length ----------------------------------------------------------------------------------------------------

const SENTENCE_END = /[.!?…]["')\]]?(?=\s|$)/g;

/** Cuts at the last sentence end that leaves room for the hint; a single over-long sentence is cut at a word. */
function fitToLength(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const budget = maxChars - TRUNCATION_HINT.length - 1;
  let cut = 0;
  for (const match of text.matchAll(SENTENCE_END)) {
    const end = (match.index ?? 0) + match[0].length;
    if (end > budget) break;
    cut = end;
  }
  if (cut > 0) return `${text.slice(0, cut)} ${TRUNCATION_HINT}`;
  const words = text.slice(0, budget - 1);
  const lastSpace = words.lastIndexOf(" ");
  const head = (lastSpace > 0 ? words.slice(0, lastSpace) : words).replace(/[\s,;:.-]+$/, "");
  return `${head}… ${TRUNCATION_HINT}`;
}
