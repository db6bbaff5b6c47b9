// The secret an organization's requests to its own apps are signed with (docs/voice.md "Flows from your app"):
// the POSTs a number's webhook route, a gather's actionUrl and a redirect's url make for steps, and the call's
// end sent to a webhook route's URL. One per organization (not per number), because a stored flow's actionUrl
// has no number's route to take a secret from, and one secret is what an app configures once.
// It is a `whsec_` secret like an endpoint's (the standardwebhooks and svix verifiers take it), made when first
// needed, sealed at rest (purpose `flow-app-secret`, bound to the organization id). Unlike an endpoint's it can
// be read again by whoever may change call flows (an app needs it in its configuration, as Twilio's auth token
// is read in its console); rotating it keeps the previous one signing beside it for 24 hours.
import type { Clock } from '../../platform/clock.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { newWebhookSecret, ROTATION_OVERLAP_MS } from '../webhooks/index.ts';

interface SecretRow {
  organization_id: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The secret as its owner reads it (GET /call-flows/signing-secret). */
export interface FlowAppSecret {
  secret: string;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export class FlowAppSecrets {
  constructor(private readonly deps: { db: Database; clock: Clock; box: SecretBox }) {}

  /** The organization's secret, made now if it has none. */
  async read(organizationId: string): Promise<FlowAppSecret> {
    const row = await this.ensure(organizationId);
    return {
      secret: this.open(row, row.secret_sealed),
      previousSecretExpiresAt: row.previous_secret_expires_at?.toISOString() ?? null,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    };
  }

  /** A new secret; the one it replaces signs beside it for 24 hours (only that one: an older one retires). */
  async rotate(organizationId: string): Promise<FlowAppSecret> {
    await this.ensure(organizationId);
    const now = this.deps.clock.now();
    await this.deps.db.query(
      `UPDATE flow_app_secrets
          SET previous_secret_sealed = secret_sealed, previous_secret_expires_at = $3,
              secret_sealed = $2, updated_at = $4
        WHERE organization_id = $1`,
      [
        organizationId,
        this.deps.box.seal(newWebhookSecret(), organizationId),
        new Date(now.getTime() + ROTATION_OVERLAP_MS),
        now,
      ],
    );
    return this.read(organizationId);
  }

  /** The secrets a request is signed with now: the current one, and the one it replaced while that signs. */
  async signing(organizationId: string): Promise<string[]> {
    const row = await this.ensure(organizationId);
    const secrets = [this.open(row, row.secret_sealed)];
    const previous = row.previous_secret_sealed;
    if (
      previous &&
      row.previous_secret_expires_at &&
      row.previous_secret_expires_at > this.deps.clock.now()
    ) {
      try {
        secrets.push(this.open(row, previous));
      } catch {
        // Left out, as an endpoint's replaced secret is: the app was given the current one.
      }
    }
    return secrets;
  }

  private open(row: SecretRow, sealed: string): string {
    return this.deps.box.open(sealed, row.organization_id);
  }

  /** The row, inserted first when missing; two at once both end with the one that was inserted. */
  private async ensure(organizationId: string, db: Queryable = this.deps.db): Promise<SecretRow> {
    const find = async () =>
      (
        await db.query<SecretRow>('SELECT * FROM flow_app_secrets WHERE organization_id = $1', [
          organizationId,
        ])
      )[0];
    const found = await find();
    if (found) return found;
    const now = this.deps.clock.now();
    await db.query(
      `INSERT INTO flow_app_secrets (organization_id, secret_sealed, created_at, updated_at)
       VALUES ($1, $2, $3, $3) ON CONFLICT (organization_id) DO NOTHING`,
      [organizationId, this.deps.box.seal(newWebhookSecret(), organizationId), now],
    );
    return (await find())!;
  }
}
