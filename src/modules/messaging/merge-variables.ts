// Merge variables (CONTRACT section 6): a send or campaign text may say `{{first_name}}`, `{{last_name}}`,
// `{{full_name}}`, `{{company}}`, `{{email}}` or `{{phone}}`, filled from the recipient's contact, and
// `{{first_name|there}}` gives a fallback when the value is missing. A name outside that set is refused with
// 422 UNSUPPORTED_MERGE_VARS before anything is sent (spec "Errors"), so a recipient never receives a raw
// `{{…}}`. The send route calls findUnsupported first, then render per recipient.

import { ApiError } from '../../platform/errors.ts';

export const SUPPORTED_MERGE_VARIABLES = [
  'first_name',
  'last_name',
  'full_name',
  'company',
  'email',
  'phone',
] as const;
export type MergeVariable = (typeof SUPPORTED_MERGE_VARIABLES)[number];

export interface MergeTag {
  /** The tag as written, braces included. */
  raw: string;
  /** The name, trimmed; case matters. */
  name: string;
  /** Text after the first `|`, trimmed; undefined when there is no `|`. */
  fallback?: string;
  /** Offsets of the tag in the text: raw === text.slice(start, end). */
  start: number;
  end: number;
}

export interface MergeContact {
  firstName?: string | null;
  lastName?: string | null;
  company?: string | null;
  email?: string | null;
  phone?: string | null;
}

// `{{`, anything without a brace, `}}`. So an unclosed `{{`, single braces, and braces inside a tag leave the
// text literal; in `{{{first_name}}}` the inner tag is the variable and the outer braces stay as written.
const TAG = /\{\{([^{}]*)\}\}/g;

const isSupported = (name: string): name is MergeVariable =>
  (SUPPORTED_MERGE_VARIABLES as readonly string[]).includes(name);

function parseTag(raw: string, inner: string, start: number): MergeTag | undefined {
  const pipe = inner.indexOf('|');
  const name = (pipe < 0 ? inner : inner.slice(0, pipe)).trim();
  // `{{}}`, `{{ }}` and `{{|x}}` name no variable: they stay literal text.
  if (name === '') return undefined;
  const tag: MergeTag = { raw, name, start, end: start + raw.length };
  if (pipe >= 0) tag.fallback = inner.slice(pipe + 1).trim();
  return tag;
}

/** Every merge tag in the text, in order. */
export function parseMergeTags(text: string): MergeTag[] {
  const tags: MergeTag[] = [];
  for (const match of text.matchAll(TAG)) {
    const tag = parseTag(match[0], match[1], match.index);
    if (tag) tags.push(tag);
  }
  return tags;
}

/** Names outside the supported set, each once, in order of first use: what a 422 should list. */
export function findUnsupported(text: string): string[] {
  const names = parseMergeTags(text)
    .map((tag) => tag.name)
    .filter((name) => !isSupported(name));
  return [...new Set(names)];
}

function contactValue(name: MergeVariable, contact: MergeContact | null | undefined): string {
  const clean = (value: string | null | undefined) => value?.trim() ?? '';
  switch (name) {
    case 'first_name':
      return clean(contact?.firstName);
    case 'last_name':
      return clean(contact?.lastName);
    case 'full_name':
      return [clean(contact?.firstName), clean(contact?.lastName)].filter(Boolean).join(' ');
    case 'company':
      return clean(contact?.company);
    case 'email':
      return clean(contact?.email);
    case 'phone':
      return clean(contact?.phone);
  }
}

/**
 * Fills supported tags from the contact (none: a number with no contact). A value that is missing, empty or
 * only whitespace takes the tag's fallback, or nothing. Unsupported tags are left as written: callers refuse
 * them with findUnsupported before rendering.
 */
export function render(text: string, contact: MergeContact | null | undefined): string {
  return text.replace(TAG, (raw: string, inner: string, offset: number) => {
    const tag = parseTag(raw, inner, offset);
    if (!tag || !isSupported(tag.name)) return raw;
    return contactValue(tag.name, contact) || (tag.fallback ?? '');
  });
}

/** The longest value of each contact field among some recipients, in characters (code points); 0 when none. */
export type MergeFieldLengths = Record<'firstName' | 'lastName' | 'company' | 'email' | 'phone', number>;

/**
 * At most how many UTF-16 code units `text` takes once rendered for any recipient whose fields are no longer
 * than `longest`: each tag becomes its value or its fallback, and a character takes at most two code units.
 */
export function renderedUnitsAtMost(text: string, longest: MergeFieldLengths): number {
  // A contact whose every field is as long as the longest: each tag's value is then as long as it can be.
  const widest: MergeContact = {
    firstName: 'x'.repeat(longest.firstName),
    lastName: 'x'.repeat(longest.lastName),
    company: 'x'.repeat(longest.company),
    email: 'x'.repeat(longest.email),
    phone: 'x'.repeat(longest.phone),
  };
  let units = text.length;
  for (const tag of parseMergeTags(text)) {
    if (!isSupported(tag.name)) continue;
    const value = contactValue(tag.name, widest).length;
    units += 2 * Math.max(value, tag.fallback?.length ?? 0) - tag.raw.length;
  }
  return units;
}

/** The 422 UNSUPPORTED_MERGE_VARS for a text naming unsupported variables (a send's or a campaign's), if any. */
export function unsupportedMergeVariables(text: string): ApiError | undefined {
  const unsupported = findUnsupported(text);
  if (unsupported.length === 0) return undefined;
  return new ApiError(
    422,
    `Unsupported merge variables: ${unsupported.map((name) => `{{${name}}}`).join(', ')}; supported are ` +
      SUPPORTED_MERGE_VARIABLES.map((name) => `{{${name}}}`).join(', '),
    { code: 'UNSUPPORTED_MERGE_VARS' },
  );
}
