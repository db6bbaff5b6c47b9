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
