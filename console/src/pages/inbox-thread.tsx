// One conversation beside the inbox: the timeline in time order (texts both ways with their status; calls,
// voicemails and agent calls as compact lines), the contact and their consent, assignment, close or reopen, and
// the reply box. Opening the thread marks it read, and so does a new inbound item while it is open (the
// person is looking at it). A refused reply (403 RECIPIENT_OPTED_OUT after a STOP) shows the server's words.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { Link } from 'wouter';
import { call, data, get } from '../api.ts';
import type { Data, Item as RowOf } from '../shapes.ts';
import { ActionButton, ErrorNote, rowsOf, Status, usePagedList, when } from '../ui.tsx';
import type { Contact } from './contacts.tsx';
import { Reply } from './inbox-reply.tsx';
import { type Conversation, type Member, memberName, shortTime, useContactName } from './inbox-shared.ts';

type TimelineItem = RowOf<'/v2/portal/conversations/{id}/timeline'>;

type ConsentEvent = Data<'/v2/portal/contacts/{id}/consent-history'>[number];

const minutes = (seconds: number | null) =>
  seconds === null ? '' : ` · ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;

function Item({ item }: { item: TimelineItem }) {
  const time = (
    <time dateTime={item.at} title={when(item.at)}>
      {shortTime(item.at)}
    </time>
  );
  if (item.type === 'message') {
    return (
      <li className={`item text ${item.direction}`} data-item={item.id}>
        <p>
          {item.body}
          {item.mediaCount ? <small> (+{item.mediaCount} media)</small> : null}
        </p>
        <small>
          <span className="visually-hidden">{item.direction === 'inbound' ? 'Received' : 'Sent'} </span>
          {time} {item.status ? <Status value={item.status} /> : null}
        </small>
      </li>
    );
  }
  const what =
    item.type === 'call'
      ? `${item.direction === 'inbound' ? 'Call from them' : 'Call to them'} · ${(item.status ?? '').replaceAll('_', ' ')}`
      : item.type === 'voicemail'
        ? 'Voicemail'
        : `AI agent call${item.status ? ` · ${item.status.replaceAll('_', ' ')}` : ''}`;
  return (
    <li className="item event" data-item={item.id}>
      <small>
        {what}
        {minutes(item.durationSeconds)} · {time}
        {item.type === 'voicemail' ? (
          <>
            {' '}
            · <Link href="/voicemail">listen</Link>
          </>
        ) : null}
        {item.summary ? <span className="summary"> — {item.summary}</span> : null}
      </small>
    </li>
  );
}

function ContactPanel({ conversation }: { conversation: Conversation }) {
  const { contactId } = conversation;
  const path = `/v2/portal/contacts/${encodeURIComponent(contactId ?? '')}`;
  const contact = useQuery({
    queryKey: ['contacts', contactId],
    queryFn: () => get<Contact>(path),
    enabled: contactId !== null,
    staleTime: 60_000,
  });
  const history = useQuery({
    queryKey: ['contacts', contactId, 'consent'],
    queryFn: () => get<ConsentEvent[]>(`${path}/consent-history`),
    enabled: contactId !== null,
  });
  if (contactId === null) {
    return (
      <details className="contact-panel">
        <summary>Contact</summary>
        <p>
          {conversation.phone} is not in your contacts. <Link href="/contacts">Add it</Link> to reply with
          their name in merge variables.
        </p>
      </details>
    );
  }
  const c = contact.data;
  return (
    <details className="contact-panel" open>
      <summary>Contact and consent</summary>
      <ErrorNote error={contact.error} />
      {c ? (
        <dl>
          <dt>Name</dt>
          <dd>
            <Link href={`/contacts/${c.id}`}>{c.fullName ?? c.phone}</Link>
          </dd>
          <dt>E-mail</dt>
          <dd>{c.email ?? '—'}</dd>
          <dt>Company</dt>
          <dd>{c.company ?? '—'}</dd>
          <dt>Consent</dt>
          <dd data-testid="consent">
            {c.optedOut ? `Opted out (${c.optOutMethod ?? 'unknown'}) ${when(c.optedOutAt)}` : 'Subscribed'}
          </dd>
        </dl>
      ) : (
        <p aria-busy="true">Loading…</p>
      )}
      {history.data?.length ? (
        <ul className="consent-history" aria-label="Consent history">
          {history.data.slice(0, 5).map((event) => (
            <li key={event.id}>
              <small>
                {event.action.replaceAll('_', ' ')}
                {event.method ? ` (${event.method})` : ''} · {when(event.createdAt)}
              </small>
            </li>
          ))}
        </ul>
      ) : null}
    </details>
  );
}

function Assignment({
  conversation,
  members,
  path,
}: {
  conversation: Conversation;
  members: Member[];
  path: string;
}) {
  const client = useQueryClient();
  const assign = useMutation<unknown, Error, string | null>({
    mutationFn: (assignedTo) => data('PATCH', path, { assignedTo }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['conversations'] }),
  });
  return (
    <div className="assignment">
      <label>
        Assigned to
        <select
          value={conversation.assignedTo ?? ''}
          aria-busy={assign.isPending}
          disabled={assign.isPending}
          onChange={(event) => assign.mutate(event.target.value || null)}
        >
          <option value="">Nobody</option>
          {conversation.assignedTo && !members.some((m) => m.userId === conversation.assignedTo) ? (
            <option value={conversation.assignedTo}>a former member</option>
          ) : null}
          {members.map((member) => (
            <option key={member.userId} value={member.userId ?? ''}>
              {memberName(member)}
            </option>
          ))}
        </select>
      </label>
      <ErrorNote error={assign.error} />
    </div>
  );
}

export function Thread({ id, members }: { id: string; members: Member[] }) {
  const path = `/v2/portal/conversations/${encodeURIComponent(id)}`;
  const client = useQueryClient();
  const conversation = useQuery({ queryKey: ['conversations', id], queryFn: () => get<Conversation>(path) });
  const timeline = usePagedList<TimelineItem>(
    ['conversations', id, 'timeline'],
    `${path}/timeline`,
    'keyset',
    {
      limit: 50,
    },
  );
  // Pages come newest first (as every list of the API); a thread reads oldest first.
  const items = rowsOf(timeline)?.slice().reverse();
  const newest = items?.at(-1)?.id;
  const log = useRef<HTMLOListElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const name = useContactName(conversation.data ?? { contactId: null, phone: '' });

  const unread = conversation.data?.unreadCount ?? 0;
  useEffect(() => {
    if (unread === 0) return;
    void call('POST', `${path}/read`)
      .then(() => client.invalidateQueries({ queryKey: ['conversations'] }))
      .catch(() => undefined);
  }, [unread, path, client]);

  // The newest item in view as it arrives; loading earlier ones leaves the view where it was.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs because the newest item changed
  useEffect(() => {
    if (log.current) log.current.scrollTop = log.current.scrollHeight;
  }, [newest]);
  const loaded = conversation.isSuccess;
  useEffect(() => {
    if (loaded) heading.current?.focus({ preventScroll: true });
  }, [loaded]);

  if (conversation.isError) return <ErrorNote error={conversation.error} />;
  const c = conversation.data;
  if (!c) return <p aria-busy="true">Loading…</p>;
  return (
    <>
      <header className="thread-header">
        <Link href="/inbox" className="back">
          ← Inbox
        </Link>
        <h2 ref={heading} tabIndex={-1}>
          {name}
        </h2>
        <p>
          {name !== c.phone ? `${c.phone} · ` : ''}on {c.number} · <Status value={c.status} />
        </p>
        <div className="thread-actions">
          <Assignment conversation={c} members={members} path={path} />
          <ActionButton
            label={c.status === 'open' ? 'Close' : 'Reopen'}
            className="secondary outline"
            run={() => data('PATCH', path, { status: c.status === 'open' ? 'closed' : 'open' })}
            invalidate={[['conversations']]}
          />
        </div>
      </header>
      <ContactPanel conversation={c} />
      <ErrorNote error={timeline.error} />
      {timeline.hasNextPage ? (
        <button
          type="button"
          className="secondary outline"
          aria-busy={timeline.isFetchingNextPage}
          onClick={() => timeline.fetchNextPage()}
        >
          Earlier items
        </button>
      ) : null}
      {items === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region is reachable by keyboard
        <ol className="timeline" aria-label="Timeline" ref={log} tabIndex={0}>
          {items.map((item) => (
            <Item key={item.id} item={item} />
          ))}
        </ol>
      )}
      <Reply path={path} />
    </>
  );
}
