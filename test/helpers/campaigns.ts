// What the campaign tests share: the developer API as an organization, a contact list of fresh contacts, a
// draft campaign, and the messages a campaign made. `app` is read at each call (the suite starts it in before).
import assert from 'node:assert/strict';
import type { TestApp } from './app.ts';
import { freshNumber, type Sender } from './messaging.ts';

export function campaignKit(app: () => TestApp) {
  const api = (who: Sender, method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    app().request(method, `/api/v2${path}`, { apiKey: who.key, body, headers });

  /** A list of `n` fresh contacts (area 202, Eastern time unless `fields` says), returning its id and phones. */
  async function list(
    who: Sender,
    n: number,
    fields: (i: number) => Record<string, unknown> = () => ({}),
    phone: (i: number) => string = () => freshNumber(),
  ) {
    const created = await api(who, 'POST', '/contact-lists', { name: `List ${freshNumber()}` });
    assert.equal(created.status, 201, created.text);
    const listId = created.body.data.id as string;
    const rows = Array.from({ length: n }, (_, i) => ({
      phone: phone(i),
      firstName: `Ann${i}`,
      ...fields(i),
    }));
    if (n === 0) return { listId, contacts: [] };
    const imported = await api(who, 'POST', '/contacts/import', { contacts: rows });
    assert.equal(imported.status, 200, imported.text);
    assert.equal(imported.body.data.rejected, 0, imported.text);
    const contacts = await app().ctx.db.query<{ id: string; phone: string }>(
      'SELECT id, phone FROM contacts WHERE organization_id = $1 AND phone = ANY($2::text[]) ORDER BY created_at, id',
      [who.id, rows.map((r) => r.phone)],
    );
    const added = await api(who, 'POST', `/contact-lists/${listId}/members`, {
      contactIds: contacts.map((c) => c.id),
    });
    assert.equal(added.status, 200, added.text);
    return { listId, contacts };
  }

  async function campaign(who: Sender, body: Record<string, unknown>) {
    const res = await api(who, 'POST', '/campaigns', {
      name: 'Promo',
      message: 'Hi {{first_name}}',
      ...body,
    });
    assert.equal(res.status, 201, res.text);
    return res.body.data as { id: string; status: string };
  }

  const get = async (who: Sender, id: string) => (await api(who, 'GET', `/campaigns/${id}`)).body.data;
  const messagesOf = (campaignId: string) =>
    app().ctx.db.query<{ id: string; to_number: string; from_number: string; status: string; body: string }>(
      'SELECT id, to_number, from_number, status, body FROM messages WHERE campaign_id = $1 ORDER BY created_at, id',
      [campaignId],
    );
  return { api, list, campaign, get, messagesOf };
}
