// Reads the Prometheus text exposition format (version 0.0.4) as a scraper does, strictly: every sample's
// family must be announced by # HELP and # TYPE before it, every line must parse, label values are unescaped.
// Tests compare two scrapes by the value of one series.
import assert from 'node:assert/strict';

export interface Family {
  name: string;
  type: string;
  help: string;
}

export interface Scrape {
  families: Map<string, Family>;
  /** Series key (`name{a="1",b="2"}`, labels sorted) → value. */
  samples: Map<string, number>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

export function parsePrometheus(text: string): Scrape {
  const families = new Map<string, Family>();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      const family = families.get(name!) ?? { name: name!, type: '', help: '' };
      if (kind === 'HELP') family.help = rest!;
      else family.type = rest!;
      families.set(name!, family);
      continue;
    }
    assert.ok(!line.startsWith('#'), `an unknown comment line: ${line}`);
    const match = SAMPLE.exec(line);
    assert.ok(match, `a line that is not a sample: ${line}`);
    const [, name, labelText, valueText] = match;
    const family = familyOf(families, name!);
    assert.ok(family?.type && family.help, `${name} has no # HELP and # TYPE before it`);
    const labels: [string, string][] = [];
    if (labelText) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < labelText.length) {
        const label = LABEL.exec(labelText);
        assert.ok(label, `labels that do not parse: ${line}`);
        labels.push([label[1]!, label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))]);
      }
    }
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    assert.ok(!Number.isNaN(value) || valueText === 'NaN', `a value that is not a number: ${line}`);
    samples.set(seriesKey(name!, Object.fromEntries(labels)), value);
  }
  return { families, samples };
}

/** A histogram's `_bucket`, `_sum` and `_count` belong to its family; a counter's samples carry `_total`. */
function familyOf(families: Map<string, Family>, sample: string): Family | undefined {
  if (families.has(sample)) return families.get(sample);
  for (const suffix of ['_bucket', '_sum', '_count', '_created']) {
    if (sample.endsWith(suffix) && families.has(sample.slice(0, -suffix.length)))
      return families.get(sample.slice(0, -suffix.length));
  }
  return undefined;
}

export function seriesKey(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((label) => `${label}="${labels[label]}"`);
  return parts.length > 0 ? `${name}{${parts.join(',')}}` : name;
}

/** A series' value, 0 when the scrape has none (a counter not moved yet has no series). */
export function seriesValue(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  return scrape.samples.get(seriesKey(name, labels)) ?? 0;
}

/** How much a series moved between two scrapes. */
export function moved(
  before: Scrape,
  after: Scrape,
  name: string,
  labels: Record<string, string> = {},
): number {
  return seriesValue(after, name, labels) - seriesValue(before, name, labels);
}
