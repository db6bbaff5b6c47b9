// Carrier pacing: a carrier takes each sending number's messages no faster than the throughput of its type
// (docs/messaging.md), so every outbound message books the number's next free slot and is handed over then.
// Excess is queued, never dropped. Slots live in the database so that every worker and every send agree.
import type { SqlFragment } from '../platform/db/fragment.ts';
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
    const { text, params } = this.slotBooking(sender, now);
    const [booked] = await tx.query<{ slot: Date }>(text, params);
    return booked!.slot;
  }

  /**
   * bookSlot() as SQL returning the one `slot`, for a statement that writes more with it; with `after`, a CTE
   * of that statement, booked for each row it has (none or one), and only once it has them.
   */
  slotBooking(sender: PacedNumber, now: Date, after?: string): SqlFragment {
    const intervalMs = Math.ceil(1000 / this.carrier.messagesPerSecond(sender.type));
    const row = '$1, $2::timestamptz + make_interval(secs => $3)';
    return {
      text: `INSERT INTO carrier_pacing (number, next_free_at) ${after ? `SELECT ${row} FROM ${after}` : `VALUES (${row})`}
       ON CONFLICT (number) DO UPDATE
         SET next_free_at = GREATEST(carrier_pacing.next_free_at, $2::timestamptz) + make_interval(secs => $3)
       RETURNING next_free_at - make_interval(secs => $3) AS slot`,
      params: [sender.number, now, intervalMs / 1000],
    };
  }

  /**
   * Books slots for several messages in order (a campaign's batch): each at its sender's next free slot at or
   * after its `from`, as bookSlot() would one by one, and stops after the first slot that starts later than
   * `until`. Returns the slots booked, in order. Three statements whatever the batch: the senders' rows are
   * created if new, locked (in the order of their numbers, so two batches never wait on each other in a
   * circle), and moved once.
   */
  async bookSlots(
    tx: Queryable,
    requests: { sender: PacedNumber; from: Date }[],
    until: Date,
  ): Promise<Date[]> {
    if (requests.length === 0) return [];
    const numbers = [...new Set(requests.map((request) => request.sender.number))].sort();
    const earliest = new Date(Math.min(...requests.map((request) => request.from.getTime())));
    await tx.query(
      `INSERT INTO carrier_pacing (number, next_free_at) SELECT number, $2 FROM unnest($1::text[]) AS number
       ON CONFLICT (number) DO NOTHING`,
      [numbers, earliest],
    );
    const rows = await tx.query<{ number: string; next_free_at: Date }>(
      `SELECT number, next_free_at FROM carrier_pacing WHERE number = ANY($1::text[]) ORDER BY number FOR UPDATE`,
      [numbers],
    );
    const nextFree = new Map(rows.map((row) => [row.number, new Date(row.next_free_at).getTime()]));
    const slots: Date[] = [];
    for (const { sender, from } of requests) {
      const intervalMs = Math.ceil(1000 / this.carrier.messagesPerSecond(sender.type));
      const start = Math.max(nextFree.get(sender.number) ?? from.getTime(), from.getTime());
      nextFree.set(sender.number, start + intervalMs);
      slots.push(new Date(start));
      if (start > until.getTime()) break;
    }
    const moved = [...new Set(requests.slice(0, slots.length).map((request) => request.sender.number))];
    await tx.query(
      `UPDATE carrier_pacing SET next_free_at = moved.next_free_at
         FROM unnest($1::text[], $2::timestamptz[]) AS moved(number, next_free_at)
        WHERE carrier_pacing.number = moved.number`,
      [moved, moved.map((number) => new Date(nextFree.get(number)!).toISOString())],
    );
    return slots;
  }
}
