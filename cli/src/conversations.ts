// `comms conversations`: the inbox from a terminal (docs/conversations.md): list threads, show one with its
// timeline in time order, reply in it (a send, with a send's refusals), mark it read, close it.
import type { Comms } from '@commsplatform/sdk';
import { type Command, Option } from 'commander';
import { printJson, printRecord, printTable, type Row } from './output.ts';

export interface CommandDeps {
  client: () => Promise<Comms>;
  /** --json was given. */
  json: () => boolean;
  collect: (value: string, previous?: string[]) => string[];
  positiveInteger: (value: string) => number;
}

function printOne(deps: CommandDeps, record: Row, fields?: string[]): void {
  if (deps.json()) printJson(record);
  else printRecord(record, fields);
}

export function addConversationCommands(program: Command, deps: CommandDeps): void {
  const conversations = program
    .command('conversations')
    .description('threads with your customers: texts, calls and voicemails of one phone and one number');

  const CONVERSATION_COLUMNS = [
    'id',
    'phone',
    'number',
    'status',
    'unread',
    'assignedTo',
    'lastActivityAt',
    'last',
  ];
  const conversationRow = (conversation: {
    unreadCount: number;
    lastMessage: { direction: string; body: string } | null;
  }): Row => ({
    ...conversation,
    unread: conversation.unreadCount,
    last: conversation.lastMessage
      ? `${conversation.lastMessage.direction === 'inbound' ? '<' : '>'} ${conversation.lastMessage.body}`
      : '',
  });

  conversations
    .command('list')
    .description('conversations, newest activity first')
    .option('--unread', 'only those with unread inbound texts, calls or voicemails')
    .addOption(new Option('--status <status>', 'open or closed').choices(['open', 'closed']))
    .option('--assigned-to <userId>', "a member's user id, or 'none'")
    .option('--number <number>', 'only threads on this number of ours')
    .option('--limit <n>', 'how many (default 20)', deps.positiveInteger, 20)
    .action(
      async (options: {
        unread?: boolean;
        status?: 'open' | 'closed';
        assignedTo?: string;
        number?: string;
        limit: number;
      }) => {
        const page = await (await deps.client()).conversations.list({
          limit: options.limit,
          ...(options.unread && { unread: true }),
          ...(options.status && { status: options.status }),
          ...(options.assignedTo && { assignedTo: options.assignedTo }),
          ...(options.number && { number: options.number }),
        });
        if (deps.json()) printJson(page.data);
        else printTable(page.data.map(conversationRow), CONVERSATION_COLUMNS);
      },
    );

  conversations
    .command('show <id>')
    .description('a conversation and its timeline, oldest first (the newest --limit items)')
    .option('--limit <n>', 'how many items (default 20)', deps.positiveInteger, 20)
    .action(async (id: string, options: { limit: number }) => {
      const comms = await deps.client();
      const [conversation, timeline] = await Promise.all([
        comms.conversations.get(id),
        comms.conversations.timeline(id, { limit: options.limit }),
      ]);
      const items = [...timeline.data].reverse();
      if (deps.json()) {
        printJson({ ...conversation, timeline: items });
        return;
      }
      printRecord(conversationRow(conversation), ['id', 'phone', 'number', 'status', 'unread', 'assignedTo']);
      process.stdout.write('\n');
      printTable(
        items.map((item) => ({
          ...item,
          what:
            item.body ?? item.summary ?? (item.durationSeconds === null ? '' : `${item.durationSeconds} s`),
        })),
        ['at', 'direction', 'type', 'status', 'what'],
      );
    });

  conversations
    .command('reply <id>')
    .description("reply in a conversation: a text from its number to its phone (a send's rules apply)")
    .option('-m, --message <text>', 'the text, merge variables allowed')
    .option('--media <url>', 'hosted media URL (repeatable)', deps.collect)
    .action(async (id: string, options: { message?: string; media?: string[] }) => {
      const sent = await (await deps.client()).conversations.reply(id, {
        ...(options.message !== undefined && { message: options.message }),
        ...(options.media && { mediaUrls: options.media }),
      });
      printOne(deps, sent, ['id', 'status', 'from', 'to', 'segments', 'body']);
    });

  conversations
    .command('read <id>')
    .description('mark a conversation read')
    .action(async (id: string) =>
      printOne(deps, conversationRow(await (await deps.client()).conversations.markRead(id)), [
        'id',
        'status',
        'unread',
      ]),
    );

  conversations
    .command('close <id>')
    .description('close a conversation (a new inbound text reopens it)')
    .action(async (id: string) =>
      printOne(deps, await (await deps.client()).conversations.update(id, { status: 'closed' }), [
        'id',
        'status',
      ]),
    );
}
