// Carrier pacing: a carrier takes each sending number's messages no faster than the throughput of its type
// (docs/messaging.md), so every outbound message books the number's next free slot and is handed over then.
// Excess is queued, never dropped. Slots live in the database so that every worker and every send agree.
import type { Queryable } from '../platform/db/index.ts';
import type { Carrier, NumberType } from './carrier.ts';

/** A number we send from, as far as pacing cares. */
export interface PacedNumber {
  number: string;
  type: NumberType;
}

export class CarrierPacing {
  private readonly carrier: Carrier;

  constructor(deps: { carrier: Carrier }) {
    this.carrier = deps.carrier;
  }

  /**
   * Books `sender`'s next free slot at or after `now` and returns when it starts. Booked in `tx`, the
   * caller's transaction, so a send that rolls back gives its slot back. The upsert takes the number's row
   * lock, which makes concurrent sends from one number queue one slot apart.
   */
  async bookSlot(tx: Queryable, sender: PacedNumber, now: Date): Promise<Date> {
    const intervalMs = Math.ceil(1000 / this.carrier.messagesPerSecond(sender.type));
    const [booked] = await tx.query<{ slot: Date }>(
      `INSERT INTO carrier_pacing (number, next_free_at) VALUES ($1, $2::timestamptz + make_interval(secs => $3))
       ON CONFLICT (number) DO UPDATE
         SET next_free_at = GREATEST(carrier_pacing.next_free_at, $2::timestamptz) + make_interval(secs => $3)
       RETURNING next_free_at - make_interval(secs => $3) AS slot`,
      [sender.number, now, intervalMs / 1000],
    );
    return booked!.slot;
  }
}
