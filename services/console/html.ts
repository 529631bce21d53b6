/** HTML that is already safe to place in a page (built by `html`, never from raw input). */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Interpolated = SafeHtml | string | number | boolean | null | undefined | Interpolated[];

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

function render(value: Interpolated): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/** A template tag that escapes every interpolated value unless it is SafeHtml (nested templates, lists of them). */
export function html(strings: TemplateStringsArray, ...values: Interpolated[]): SafeHtml {
  return new SafeHtml(
    strings.reduce(
      (out, part, index) => out + part + (index < values.length ? render(values[index]) : ""),
      "",
    ),
  );
}
