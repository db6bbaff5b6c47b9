// The inbox: the organization's conversations, newest activity first, beside the open thread on wide screens
// (one or the other at phone width). Filters: unread only, open or closed, assigned to me, unassigned or anyone.
// Every query's key starts with 'conversations', which the live event stream (live.ts) marks stale on each
// text, call, voicemail, agent call and conversation change: new messages appear without a reload or a poll.
// Keyboard: j/k or the arrow keys move through the list, Enter opens, Escape goes back to the list, r goes to
// the reply box; nothing is captured while typing in a field.
import { useEffect, useState } from 'react';
import { Link, useLocation, useParams } from 'wouter';
import { qs } from '../api.ts';
import { useMe } from '../session.ts';
import { ErrorNote, Field, LoadMore, PageHeader, rowsOf, usePagedList } from '../ui.tsx';
import {
  type Conversation,
  type Member,
  memberName,
  shortTime,
  useContactName,
  useMembers,
} from './inbox-shared.ts';
import { Thread } from './inbox-thread.tsx';

function Row({
  conversation,
  current,
  members,
}: {
  conversation: Conversation;
  current: boolean;
  members: Member[];
}) {
  const name = useContactName(conversation);
  const last = conversation.lastMessage;
  const assignee = members.find((member) => member.userId === conversation.assignedTo);
  return (
    <li>
      <Link
        href={`/inbox/${conversation.id}`}
        data-inbox-item={conversation.id}
        aria-current={current ? 'true' : undefined}
        className={conversation.unreadCount > 0 ? 'unread' : undefined}
      >
        <span className="who">
          <strong>{name}</strong>
          <time dateTime={conversation.lastActivityAt}>{shortTime(conversation.lastActivityAt)}</time>
        </span>
        <span className="last">
          {last ? `${last.direction === 'outbound' ? 'You: ' : ''}${last.body}` : 'No texts yet (calls only)'}
          {last?.mediaCount ? ` (+${last.mediaCount} media)` : ''}
        </span>
        <small className="meta">
          to {conversation.number}
          {conversation.status === 'closed' ? ' · closed' : ''}
          {conversation.assignedTo ? ` · ${memberName(assignee)}` : ''}
          {conversation.unreadCount > 0 ? (
            <mark className="badge">
              {conversation.unreadCount}
              <span className="visually-hidden"> unread</span>
            </mark>
          ) : null}
        </small>
      </Link>
    </li>
  );
}

/** True when a key press belongs to what the user is typing, not to the inbox's shortcuts. */
function typing(event: KeyboardEvent): boolean {
  const target = event.target as HTMLElement | null;
  if (!target) return false;
  return (
    target.isContentEditable ||
    ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName) ||
    event.altKey ||
    event.ctrlKey ||
    event.metaKey
  );
}

function useInboxKeys(openId: string | undefined) {
  const [, navigate] = useLocation();
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (typing(event) || document.querySelector('dialog[open]')) return;
      // Only the list as shown: at phone width an open thread hides it, and the arrows scroll the page again.
      const items = Array.from(document.querySelectorAll<HTMLAnchorElement>('[data-inbox-item]')).filter(
        (item) => item.offsetParent !== null,
      );
      const move = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[event.key];
      if (move !== undefined && items.length > 0) {
        event.preventDefault();
        let at = items.indexOf(document.activeElement as HTMLAnchorElement);
        if (at === -1) at = items.findIndex((item) => item.dataset.inboxItem === openId);
        const next = at === -1 ? 0 : Math.min(items.length - 1, Math.max(0, at + move));
        items[next]?.focus();
        items[next]?.scrollIntoView({ block: 'nearest' });
      } else if (event.key === 'Escape' && openId) {
        event.preventDefault();
        navigate('/inbox');
        // Back in the list, on the thread just left.
        setTimeout(() => document.querySelector<HTMLElement>(`[data-inbox-item="${openId}"]`)?.focus(), 0);
      } else if (event.key === 'r' && openId) {
        const reply = document.getElementById('inbox-reply');
        if (reply) {
          event.preventDefault();
          reply.focus();
        }
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [openId, navigate]);
}

type Assigned = 'anyone' | 'me' | 'none';

export default function Inbox() {
  const { id } = useParams<{ id?: string }>();
  const me = useMe();
  const members = useMembers();
  const [unread, setUnread] = useState(false);
  const [status, setStatus] = useState<'open' | 'closed' | ''>('open');
  const [assigned, setAssigned] = useState<Assigned>('anyone');
  const assignedTo = assigned === 'me' ? me.data?.user.id : assigned === 'none' ? 'none' : undefined;
  const list = usePagedList<Conversation>(
    ['conversations', 'list'],
    `/v2/portal/conversations${qs({ unread: unread || undefined, status, assignedTo })}`,
    'keyset',
  );
  const rows = rowsOf(list);
  useInboxKeys(id);

  return (
    <div className="inbox" data-thread-open={id ? 'true' : undefined}>
      <div className="inbox-list">
        <PageHeader title="Inbox" />
        <form className="inline-form inbox-filters" aria-label="Filter conversations">
          <label className="checkbox">
            <input type="checkbox" checked={unread} onChange={(event) => setUnread(event.target.checked)} />
            Unread only
          </label>
          <Field label="Status">
            {(fieldId) => (
              <select
                id={fieldId}
                value={status}
                onChange={(event) => setStatus(event.target.value as 'open' | 'closed' | '')}
              >
                <option value="open">Open</option>
                <option value="closed">Closed</option>
                <option value="">Any</option>
              </select>
            )}
          </Field>
          <Field label="Assigned to">
            {(fieldId) => (
              <select
                id={fieldId}
                value={assigned}
                onChange={(event) => setAssigned(event.target.value as Assigned)}
              >
                <option value="anyone">Anyone</option>
                <option value="me">Me</option>
                <option value="none">Unassigned</option>
              </select>
            )}
          </Field>
        </form>
        <p className="visually-hidden" id="inbox-keys">
          Keys: j or k to move, Enter to open, Escape to return to the list, r to reply.
        </p>
        <ErrorNote error={list.error} />
        {rows === undefined ? (
          <p aria-busy="true">Loading…</p>
        ) : rows.length === 0 ? (
          <p className="empty">No conversations here.</p>
        ) : (
          <ul className="conversations" aria-label="Conversations" aria-describedby="inbox-keys">
            {rows.map((conversation) => (
              <Row
                key={conversation.id}
                conversation={conversation}
                current={conversation.id === id}
                members={members.data ?? []}
              />
            ))}
          </ul>
        )}
        <LoadMore list={list} />
      </div>
      {id ? (
        <section className="inbox-thread" aria-label="Conversation">
          <Thread key={id} id={id} members={members.data ?? []} />
        </section>
      ) : (
        <section className="inbox-thread inbox-none" aria-label="Conversation">
          <p className="empty">Choose a conversation (j and k move through the list, Enter opens it).</p>
        </section>
      )}
    </div>
  );
}
