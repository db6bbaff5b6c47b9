// API versions are dates (spec "Versioning"). A request may pin one with the `API-Version` header; every
// response names the version in force. The changelog is served by GET /api/version, newest first.
export interface VersionEntry {
  version: string;
  changes: string[];
}

export const CHANGELOG: VersionEntry[] = [
  {
    version: '2026-09-01',
    changes: [
      'Added `delivery_stats` / `deliveryStats` and campaign analytics fields; campaign `deliveryRate` / `failureRate` redefined to match',
      'Send limits return specific statuses and codes instead of 500',
      'Segment counting uses the GSM-7 character set',
    ],
  },
  {
    version: '2026-06-10',
    changes: [
      'Baseline public API reference by product',
      'API-key authentication with per-key scopes',
      'Offset paging on all list endpoints plus keyset paging on high-volume history endpoints',
      'Webhooks with signed payloads and a subscribable event catalog',
      '`RateLimit-*` headers',
    ],
  },
];

export const CURRENT_VERSION = CHANGELOG[0]!.version;
export const KNOWN_VERSIONS = new Set(CHANGELOG.map((entry) => entry.version));

/**
 * The deprecation policy (docs/versioning.md): a version is deprecated the day its successor is released and
 * keeps working beside it for a cool-down of at least COOL_DOWN_DAYS, until its sunset date; after that a
 * request that asks for it is refused and an organization pinned to it is answered as of its successor.
 */
export const COOL_DOWN_DAYS = 180;

export interface VersionLifecycle {
  version: string;
  /** The day its successor was released; absent while it is the current version. */
  deprecatedAt?: string;
  successor?: string;
  /** The first day it is no longer served. */
  sunsetAt?: string;
}

export const LIFECYCLE: VersionLifecycle[] = [
  { version: '2026-09-01' },
  { version: '2026-06-10', deprecatedAt: '2026-09-01', successor: '2026-09-01', sunsetAt: '2027-03-01' },
];

export type VersionStatus = 'current' | 'deprecated' | 'sunset';

function lifecycleOf(version: string): VersionLifecycle {
  return LIFECYCLE.find((entry) => entry.version === version) ?? { version };
}

/** Where `version` stands at `now`. */
export function versionStatus(version: string, now: Date): VersionStatus {
  const { sunsetAt, deprecatedAt } = lifecycleOf(version);
  if (sunsetAt && now.getTime() >= Date.parse(`${sunsetAt}T00:00:00Z`)) return 'sunset';
  return deprecatedAt ? 'deprecated' : 'current';
}

/** The version an organization pinned to `version` is answered as of: its successor once it is sunset. */
export function servedVersion(version: string, now: Date): string {
  let served = version;
  while (versionStatus(served, now) === 'sunset' && lifecycleOf(served).successor) {
    served = lifecycleOf(served).successor!;
  }
  return served;
}

/**
 * The headers of a response answered as of a deprecated version: `Deprecation` (RFC 9745, the day it was
 * deprecated as `@<epoch seconds>`), `Sunset` (RFC 8594, an HTTP date) and a `Link` to its successor.
 */
export function deprecationHeaders(version: string, now: Date): Record<string, string> | undefined {
  if (versionStatus(version, now) !== 'deprecated') return undefined;
  const { deprecatedAt, sunsetAt, successor } = lifecycleOf(version);
  const headers: Record<string, string> = {
    Deprecation: `@${Date.parse(`${deprecatedAt}T00:00:00Z`) / 1000}`,
  };
  if (sunsetAt) headers.Sunset = new Date(`${sunsetAt}T00:00:00Z`).toUTCString();
  if (successor) headers.Link = `</api/version#${successor}>; rel="successor-version"`;
  return headers;
}

/** Every version with its status and dates, newest first: what GET /api/version lists. */
export function versionTable(now: Date) {
  return LIFECYCLE.map((entry) => ({
    version: entry.version,
    status: versionStatus(entry.version, now),
    deprecatedAt: entry.deprecatedAt ?? null,
    successor: entry.successor ?? null,
    sunsetAt: entry.sunsetAt ?? null,
  }));
}

/**
 * A change a version made to a response, and how to undo it for a request pinned to an older version (Stripe's
 * version gates). A resource keeps one list of its gates; later versions add entries, never edit old ones.
 */
export interface VersionGate<T> {
  /** The version that made the change. */
  since: string;
  /** Turns the response as it is now into the response as it was before `since`. */
  undo(value: T): T;
}

/** `value` as a request pinned to `version` sees it: every gate newer than that version undone, newest first. */
export function asOfVersion<T>(value: T, version: string, gates: readonly VersionGate<T>[]): T {
  let result = value;
  for (const gate of [...gates].sort((a, b) => b.since.localeCompare(a.since))) {
    if (version < gate.since) result = gate.undo(result);
  }
  return result;
}
