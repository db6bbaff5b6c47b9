// Finding the http(s) links of a message's text, for link tracking. A single left-to-right scan with no
// regular expression: every character is looked at a bounded number of times, so a text built to trip a
// backtracking matcher (thousands of "http://" or unclosed brackets) costs the same as any other.
//
// A link starts at "http://" or "https://" (any case) not glued to a letter or digit before it, and runs to the
// first character a URL cannot hold unescaped (a space, a control character, <>"{}|\^` and backquote); then,
// as people write links in sentences, trailing punctuation (.,;:!?'*) and closing brackets without an opening
// one inside the link are left out. A link with no host ("https://" alone) is not one.

/** One link found: where it is in the text and what it says. */
export interface FoundLink {
  start: number;
  end: number;
  url: string;
}

const STOPS = new Set(['<', '>', '"', '{', '}', '|', '\\', '^', '`']);
const TRAILING = new Set(['.', ',', ';', ':', '!', '?', "'", '*']);
const PAIRS: Record<string, string> = { ')': '(', ']': '[' };

function endsLink(char: string): boolean {
  const code = char.charCodeAt(0);
  if (code <= 0x20 || code === 0x7f || (code >= 0x80 && code <= 0x9f)) return true;
  if (STOPS.has(char)) return true;
  // Unicode spaces (no-break, ideographic, line and paragraph separators) end a link as a space does.
  return code >= 0xa0 && /\s/.test(char);
}

function isWordChar(char: string | undefined): boolean {
  if (char === undefined) return false;
  const code = char.charCodeAt(0);
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** The links of `text`, in order. */
export function findLinks(text: string): FoundLink[] {
  const lower = text.toLowerCase();
  const found: FoundLink[] = [];
  let from = 0;
  for (;;) {
    const at = lower.indexOf('http', from);
    if (at < 0) return found;
    const schemeEnd = lower.startsWith('://', at + 4)
      ? at + 7
      : lower.startsWith('s://', at + 4)
        ? at + 8
        : -1;
    if (schemeEnd < 0 || isWordChar(text[at - 1])) {
      from = at + 4;
      continue;
    }
    let end = schemeEnd;
    while (end < text.length && !endsLink(text[end]!)) end++;
    end = trimmed(text, schemeEnd, end);
    const host = text[schemeEnd];
    if (end > schemeEnd && host !== '/' && host !== '?' && host !== '#') {
      found.push({ start: at, end, url: text.slice(at, end) });
      from = end;
    } else {
      from = schemeEnd;
    }
  }
}

/** `end` moved back over trailing punctuation and unbalanced closing brackets (one pass over the link). */
function trimmed(text: string, start: number, end: number): number {
  const open: Record<string, number> = { '(': 0, '[': 0 };
  const close: Record<string, number> = { ')': 0, ']': 0 };
  for (let index = start; index < end; index++) {
    const char = text[index]!;
    if (char in open) open[char]!++;
    else if (char in close) close[char]!++;
  }
  while (end > start) {
    const last = text[end - 1]!;
    if (TRAILING.has(last)) {
      end--;
    } else if (last in PAIRS && close[last]! > open[PAIRS[last]!]!) {
      close[last]!--;
      end--;
    } else {
      return end;
    }
  }
  return end;
}
