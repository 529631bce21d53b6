import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CODE_BLOCK_SPEECH,
  MIN_SPEECH_CHARS,
  NOTHING_SPEAKABLE,
  renderSpeech,
  TABLE_SPEECH,
  TRUNCATION_HINT,
} from "./render-speech.js";

const speak = (text: string, maxChars = 600) => renderSpeech(text, { maxChars });

describe("renderSpeech", () => {
  it("leaves plain prose as it is", () => {
    expect(speak("Finished: two red planes and two blue planes.")).toBe(
      "Finished: two red planes and two blue planes.",
    );
  });

  it("turns headings into sentences without their markers", () => {
    expect(speak("# Summary\nAll tests pass.\n\n## Next steps ##\nShip it.")).toBe(
      "Summary. All tests pass. Next steps. Ship it.",
    );
  });

  it("turns setext headings into sentences", () => {
    expect(speak("Summary\n=======\nAll good.")).toBe("Summary. All good.");
  });

  it("removes bold, italic, strikethrough and escapes but keeps snake_case words", () => {
    expect(
      speak("This is **very** _important_ and *new*, not ~~old~~. Call my_function_name \\*now\\*."),
    ).toBe("This is very important and new, not old. Call my_function_name *now*.");
  });

  it("speaks link text and drops the address", () => {
    expect(
      speak("See [the guide](https://example.com/guide) and [docs][1].\n\n[1]: https://example.com/docs"),
    ).toBe("See the guide and docs.");
  });

  it("drops images entirely", () => {
    expect(speak("Here is the chart: ![a bar chart](chart.png) as promised.")).toBe(
      "Here is the chart: as promised.",
    );
  });

  it("describes bare and angle-bracket URLs as a link", () => {
    expect(speak("Open https://example.com/a?b=c. Or <https://example.org>.")).toBe(
      "Open a link. Or a link.",
    );
  });

  it("turns list items into sentences", () => {
    expect(
      speak("I changed three things:\n\n- the parser\n- the *router*\n1. the tests\n- [x] done already"),
    ).toBe("I changed three things: the parser. the router. the tests. done already.");
  });

  it("strips blockquote markers", () => {
    expect(speak("> The build failed.\n> It was the linter.")).toBe("The build failed. It was the linter.");
  });

  it("replaces a fenced code block with a short spoken description", () => {
    const text = "Use this:\n\n```ts\nconst x = 1;\nconsole.log(x);\n```\n\nThen run it.";
    expect(speak(text)).toBe(`Use this: ${CODE_BLOCK_SPEECH} Then run it.`);
  });

  it("replaces tilde fences and unclosed fences too", () => {
    expect(speak("~~~\nrm -rf /tmp/x\n~~~\nDone.")).toBe(`${CODE_BLOCK_SPEECH} Done.`);
    expect(speak("Start:\n```\nnever closed\nstill code")).toBe(`Start: ${CODE_BLOCK_SPEECH}`);
  });

  it("replaces an indented code block with the description", () => {
    expect(speak("Run this:\n\n    npm install\n    npm test\n\nThat is all.")).toBe(
      `Run this: ${CODE_BLOCK_SPEECH} That is all.`,
    );
  });

  it("mentions code on screen once however many blocks there are", () => {
    expect(speak("A:\n```\n1\n```\nB:\n```\n2\n```")).toBe(`A: ${CODE_BLOCK_SPEECH} B.`);
  });

  it("keeps inline code as plain words", () => {
    expect(speak("Run `npm test` and check ``a `b` c``.")).toBe("Run npm test and check a `b` c.");
  });

  it("describes a table instead of reading its cells", () => {
    const text = "Results:\n\n| name | count |\n| --- | ---: |\n| red | 2 |\n| blue | 2 |\n\nAll counted.";
    expect(speak(text)).toBe(`Results: ${TABLE_SPEECH} All counted.`);
  });

  it("drops horizontal rules and html tags", () => {
    expect(speak("One.\n\n---\n\n<div>\nTwo <b>bold</b>.\n</div>")).toBe("One. Two bold.");
  });

  it("normalizes whitespace and line breaks inside a paragraph", () => {
    expect(speak("  many   spaces\r\nand\tlines  \n\n\n next  ")).toBe("many spaces and lines. next.");
  });

  it("never returns empty speech for a non-empty input", () => {
    expect(speak("![only an image](x.png)")).toBe(NOTHING_SPEAKABLE);
    expect(speak("   \n\t ")).toBe(NOTHING_SPEAKABLE);
    expect(speak("---")).toBe(NOTHING_SPEAKABLE);
    expect(speak("```\ncode only\n```")).toBe(CODE_BLOCK_SPEECH);
  });

  it("returns empty speech only for empty input", () => {
    expect(speak("")).toBe("");
  });

  it("cuts a long answer at a sentence boundary and says the rest is on screen", () => {
    const sentence = "This sentence has exactly fifty characters in it. ";
    const spoken = speak(sentence.repeat(20), 200);
    expect(spoken).toBe(`${sentence.repeat(3).trim()} ${TRUNCATION_HINT}`);
    expect(spoken.length).toBeLessThanOrEqual(200);
  });

  it("cuts a single over-long sentence at a word boundary", () => {
    const spoken = speak(`${"word ".repeat(200)}end.`, 100);
    expect(spoken.endsWith(`word… ${TRUNCATION_HINT}`)).toBe(true);
    expect(spoken.length).toBeLessThanOrEqual(100);
  });

  it("does not cut an answer that fits", () => {
    const text = "Short answer. ".repeat(5).trim();
    expect(speak(text, text.length)).toBe(text);
  });

  it("refuses a budget too small to hold the hint", () => {
    expect(() => speak("x", MIN_SPEECH_CHARS - 1)).toThrow(RangeError);
  });

  it("always fits the budget, is never empty and never contains markup for arbitrary input", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 3000 }),
        fc.integer({ min: MIN_SPEECH_CHARS, max: 900 }),
        (text, max) => {
          const spoken = renderSpeech(text, { maxChars: max });
          expect(spoken.length).toBeGreaterThan(0);
          expect(spoken.length).toBeLessThanOrEqual(max);
          expect(spoken).not.toMatch(/```|https?:\/\//);
        },
      ),
      { numRuns: 300 },
    );
  });
});
