// The office of the transfer tests (sip-transfer*.test.ts): the front desk (101) and sales (102) with raw UDP
// phones registered, a trunk on a port of its own for SIPp, and what the tests read: the calls, their
// call.transferred events, and the NOTIFYs of a REFER checked against RFC 3515's rules.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp } from './app.ts';
import type { Sender } from './messaging.ts';
import { type SipExtension, sipOffice } from './sip-office.ts';
import { type PhoneDialog, SipPhone, type SipText } from './sip-phone.ts';
import { freePort } from './sipp.ts';

export interface TransferOffice {
  t: TestApp;
  /** Our SIP port. */
  port: number;
  /** Where the trunk (SIPp) listens. */
  trunkPort: number;
  office: Sender;
  desk: SipExtension;
  sales: SipExtension;
  deskPhone: SipPhone;
  salesPhone: SipPhone;
  close(): Promise<void>;
}

export async function transferOffice(): Promise<TransferOffice> {
  const trunkPort = await freePort();
  const { t, port, office, create } = await sipOffice({
    config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } },
  });
  const desk = await create('101');
  const sales = await create('102');
  const deskPhone = await SipPhone.open(port, desk);
  const salesPhone = await SipPhone.open(port, sales);
  assert.equal(await deskPhone.register(), 200);
  assert.equal(await salesPhone.register(), 200);
  return {
    t,
    port,
    trunkPort,
    office,
    desk,
    sales,
    deskPhone,
    salesPhone,
    async close() {
      deskPhone.close();
      salesPhone.close();
      t.ctx.sipListener.stop();
      await t.close();
    },
  };
}

/** A header's first value. */
export const header = (message: SipText, name: string) => message.headers[name]?.[0] ?? '';
/** A message's CSeq number. */
export const cseq = (message: SipText) => Number(header(message, 'cseq').split(' ')[0]);

/** What the transfer tests read of the office's calls. */
export function callReader({ t, office }: Pick<TransferOffice, 't' | 'office'>) {
  const latestCall = async (offset = 0) => {
    const [row] = await t.ctx.db.query<{ id: string }>(
      'SELECT id FROM calls WHERE organization_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET $2',
      [office.id, offset],
    );
    return (await t.ctx.calls.get(office.id, row!.id)) as unknown as Record<string, any>;
  };
  /** The call once `ok` holds (polled for up to 10 s). */
  const until = async (id: string, ok: (call: Record<string, any>) => boolean) => {
    for (let i = 0; i < 400; i++) {
      const call = (await t.ctx.calls.get(office.id, id)) as unknown as Record<string, any>;
      if (ok(call)) return call;
      await sleep(25);
    }
    throw new Error(`call ${id} never got there: ${JSON.stringify(await t.ctx.calls.get(office.id, id))}`);
  };
  const transferredEvents = async (callId: string) =>
    (
      await t.ctx.db.query<{ data: Record<string, any> }>(
        `SELECT data FROM events WHERE type = 'call.transferred' AND data->>'callId' = $1`,
        [callId],
      )
    ).map((row) => row.data);
  return { latestCall, until, transferredEvents };
}

/** The desk's REFER in `dialog` (no Refer-To when `referTo` is not given); its final response. */
export const deskRefers = (deskPhone: SipPhone, dialog: PhoneDialog, referTo?: string) =>
  deskPhone.inDialogRequest('REFER', dialog, {
    ...(referTo ? { 'Refer-To': referTo } : {}),
    'Referred-By': `<sip:101@localhost>`,
  });

/**
 * The next NOTIFY the desk gets for the REFER of CSeq `seq` in `dialog`, checked against RFC 3515's rules (and
 * the strict checker's, which sees every message we send); its sipfrag status line and its CSeq.
 */
export async function notified(deskPhone: SipPhone, dialog: PhoneDialog, seq: number, final: boolean) {
  const notify = await deskPhone.next('NOTIFY');
  assert.equal(header(notify, 'call-id'), dialog.callId, 'the NOTIFY is in the REFER’s dialog');
  assert.equal(header(notify, 'event'), `refer;id=${seq}`);
  assert.match(header(notify, 'content-type'), /^message\/sipfrag(;version=2\.0)?$/);
  assert.ok(header(notify, 'contact'), 'a NOTIFY has a Contact');
  assert.match(
    header(notify, 'subscription-state'),
    final ? /^terminated;reason=noresource$/ : /^active;expires=\d+$/,
  );
  assert.match(notify.body, /^SIP\/2\.0 \d{3} [^\r\n]+\r\n$/);
  return { line: notify.body.trim(), cseq: cseq(notify) };
}
