// Campaigns: the list with delivery figures, and creating one (lists, senders, schedule, quiet hours).
import { useQuery } from '@tanstack/react-query';
import { Link, useLocation } from 'wouter';
import { data, page } from '../api.ts';
import type { Item } from '../shapes.ts';
import {
  Field,
  FormDisclosure,
  PagedTable,
  PageHeader,
  Status,
  text,
  useAction,
  usePagedList,
  when,
} from '../ui.tsx';
import type { ContactList } from './contact-lists.tsx';

export type Campaign = Item<'/v2/portal/campaigns'>;

function CreateCampaign() {
  const [, navigate] = useLocation();
  const lists = useQuery({
    queryKey: ['contact-lists', 'all'],
    queryFn: () => page<ContactList>('/v2/portal/contact-lists?limit=100'),
  });
  const create = useAction(
    (form) => {
      const scheduled = text(form, 'scheduledAt');
      const quiet = form.get('quiet') === 'on';
      return data<Campaign>('POST', '/v2/portal/campaigns', {
        name: text(form, 'name'),
        message: text(form, 'message'),
        contactListIds: form.getAll('contactListIds').map(String),
        senders: text(form, 'senders')
          ?.split(/[\s,]+/)
          .filter(Boolean),
        scheduledAt: scheduled ? new Date(scheduled).toISOString() : undefined,
        timezone: text(form, 'timezone'),
        quietHours: quiet ? { start: text(form, 'quietStart'), end: text(form, 'quietEnd') } : null,
        trackLinks: form.get('trackLinks') === 'on',
      });
    },
    [['campaigns']],
    (campaign) => navigate(`/campaigns/${campaign.id}`),
  );
  return (
    <FormDisclosure summary="New campaign" mutation={create} label="Create campaign" submit="Create draft">
      <Field label="Name">{(id) => <input id={id} name="name" required maxLength={200} />}</Field>
      <Field label="Message" hint="Merge variables such as {{first_name|there}} are filled per recipient">
        {(id, hint) => <textarea id={id} name="message" rows={3} required aria-describedby={hint} />}
      </Field>
      <Field label="Contact lists">
        {(id) => (
          <select id={id} name="contactListIds" multiple required size={4}>
            {lists.data?.data.map((list) => (
              <option key={list.id} value={list.id}>
                {list.name} ({list.memberCount})
              </option>
            ))}
          </select>
        )}
      </Field>
      <div className="grid">
        <Field label="Senders (optional)" hint="Your numbers, comma-separated; default: your default sender">
          {(id, hint) => <input id={id} name="senders" aria-describedby={hint} />}
        </Field>
        <Field label="Schedule for (optional)">
          {(id) => <input id={id} name="scheduledAt" type="datetime-local" />}
        </Field>
        <Field label="Time zone">
          {(id) => (
            <input id={id} name="timezone" defaultValue={Intl.DateTimeFormat().resolvedOptions().timeZone} />
          )}
        </Field>
      </div>
      <fieldset>
        <legend>Quiet hours (each recipient's local time)</legend>
        <label>
          <input type="checkbox" name="quiet" defaultChecked /> Send only between
        </label>
        <div className="grid">
          <Field label="From">
            {(id) => <input id={id} name="quietStart" type="time" defaultValue="08:00" />}
          </Field>
          <Field label="Until">
            {(id) => <input id={id} name="quietEnd" type="time" defaultValue="21:00" />}
          </Field>
        </div>
      </fieldset>
      <label>
        <input type="checkbox" name="trackLinks" /> Track links: shorten each link to a tracked link and count
        who clicks
      </label>
    </FormDisclosure>
  );
}

export default function Campaigns() {
  const list = usePagedList<Campaign>(['campaigns'], '/v2/portal/campaigns', 'offset', {
    poll: (rows) => rows.some((c) => c.status === 'sending' || c.status === 'scheduled'),
  });
  return (
    <>
      <PageHeader title="Campaigns" />
      <CreateCampaign />
      <PagedTable
        list={list}
        caption="Campaigns"
        empty="No campaigns yet."
        columns={[
          { header: 'Name', cell: (c) => <Link href={`/campaigns/${c.id}`}>{c.name}</Link> },
          { header: 'Status', cell: (c) => <Status value={c.status} /> },
          { header: 'Recipients', cell: (c) => c.recipientCount ?? '—' },
          { header: 'Sent', cell: (c) => c.messages_sent },
          { header: 'Delivered', cell: (c) => c.messages_delivered },
          { header: 'Failed', cell: (c) => c.messages_failed },
          { header: 'Created', cell: (c) => when(c.createdAt) },
        ]}
      />
    </>
  );
}
