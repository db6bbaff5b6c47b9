// comms: the Communications Platform from a terminal, over the SDK. Every command prints for people by
// default and the API's JSON with --json. Exit codes: 0 done, 1 the API refused (its message on standard
// error), 2 no answer (the server is unreachable) or a usage error.
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Comms, CommsApiError, CommsConnectionError, CommsError } from '@commsplatform/sdk';
import { Command, InvalidArgumentError, Option } from 'commander';
import { completionScript } from './completion.ts';
import { configPath, readConfig, removeConfig, writeConfig } from './config.ts';
import { addConversationCommands } from './conversations.ts';
import { listen } from './listen.ts';
import { printJson, printJsonLine, printRecord, printTable, progressBar, type Row } from './output.ts';

const VERSION = '0.1.0';

interface GlobalOptions {
  json?: boolean;
  apiKey?: string;
  baseUrl?: string;
}

const program = new Command()
  .name('comms')
  .description(
    'The Communications Platform from your terminal: messages, contacts, campaigns, calls, webhooks.',
  )
  .version(VERSION)
  .option('--json', 'print JSON instead of tables')
  .addOption(new Option('--api-key <key>', 'API key (default: COMMS_API_KEY, then `comms login`)').hideHelp())
  .option(
    '--base-url <url>',
    'server (default: COMMS_BASE_URL, then `comms login`, then http://localhost:3000)',
  )
  .showHelpAfterError();

const globals = () => program.opts<GlobalOptions>();

async function client(): Promise<Comms> {
  const stored = await readConfig();
  const apiKey = globals().apiKey ?? process.env.COMMS_API_KEY ?? stored.apiKey;
  if (!apiKey) throw new UsageError('Not logged in: run `comms login` (or set COMMS_API_KEY).');
  const baseUrl = globals().baseUrl ?? process.env.COMMS_BASE_URL ?? stored.baseUrl;
  return new Comms({ apiKey, baseUrl });
}

class UsageError extends Error {}

const positiveInteger = (value: string) => {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('Not a positive integer.');
  return number;
};

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `--quiet-hours`: checked here, turned into the API's value by quietHoursWindow. */
const quietHours = (value: string) => {
  if (value !== 'off' && !/^\d{2}:\d{2}-\d{2}:\d{2}$/.test(value))
    throw new InvalidArgumentError("Give HH:MM-HH:MM (e.g. 09:00-20:00) or 'off'.");
  return value;
};
const quietHoursWindow = (value: string) =>
  value === 'off' ? null : { start: value.slice(0, 5), end: value.slice(6) };

/** Prints a list's rows: a table of `columns`, or the records as JSON. */
function printList(rows: Row[], columns: string[]): void {
  if (globals().json) printJson(rows);
  else printTable(rows, columns);
}

function printOne(record: Row, fields?: string[]): void {
  if (globals().json) printJson(record);
  else printRecord(record, fields);
}

const MESSAGE_COLUMNS = ['id', 'createdAt', 'direction', 'status', 'from', 'to', 'segments', 'body'];

// login / logout / whoami

program
  .command('login')
  .description(
    'check an API key and keep it (with the server) in your config directory, readable by you only',
  )
  .option('--key <key>', 'the API key (default: read from standard input)')
  .action(async (options: { key?: string }) => {
    let apiKey = options.key ?? globals().apiKey;
    if (!apiKey) {
      if (process.stdin.isTTY) process.stderr.write('API key: ');
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) {
        chunks.push(chunk as Buffer);
        if (chunk.includes(10)) break;
      }
      apiKey = Buffer.concat(chunks).toString('utf8').split('\n')[0]?.trim();
    }
    if (!apiKey) throw new UsageError('No API key given.');
    const baseUrl = globals().baseUrl ?? process.env.COMMS_BASE_URL;
    const me = await new Comms({ apiKey, baseUrl }).me.get();
    const path = await writeConfig({ apiKey, ...(baseUrl && { baseUrl }) });
    if (globals().json) printJson({ organization: me.organization, configPath: path });
    else
      process.stdout.write(
        `Logged in to ${me.organization.name} (${me.organization.id}). Key saved in ${path}\n`,
      );
  });

program
  .command('logout')
  .description('forget the stored API key')
  .action(async () => {
    await removeConfig();
    if (!globals().json) process.stdout.write(`Removed ${configPath()}\n`);
  });

program
  .command('whoami')
  .description('the organization and key in use')
  .action(async () => {
    const me = await (await client()).me.get();
    if (globals().json) printJson(me);
    else
      printRecord({
        organization: me.organization.name,
        id: me.organization.id,
        plan: me.organization.plan,
        key: me.key.prefix,
        scopes: me.key.scopes.join(' '),
      });
  });

// send / messages

program
  .command('send')
  .description('send an SMS or MMS now, or with --at at a later time')
  .requiredOption('--to <number>', 'recipient, E.164 or national')
  .option('-m, --message <text>', 'text; merge variables such as {{first_name}} are filled from the contact')
  .option('--from <number>', "one of the organization's numbers (default: its default)")
  .option('--media <url>', 'hosted media URL (repeatable)', collect)
  .option(
    '--at <time>',
    'schedule it: an ISO 8601 time 15 minutes to 35 days ahead (cancel: comms messages cancel)',
    isoTime,
  )
  .option(
    '--quiet-hours <start-end>',
    'only between these local times of the recipient, e.g. 08:00-21:00 (default: none)',
    quietHours,
  )
  .option('--track-links', 'replace its links with tracked short links and count clicks (link.clicked)')
  .action(
    async (options: {
      to: string;
      message?: string;
      from?: string;
      media?: string[];
      at?: string;
      quietHours?: string;
      trackLinks?: boolean;
    }) => {
      const sent = await (await client()).messages.send({
        to: options.to,
        message: options.message,
        from: options.from,
        media: options.media,
        ...(options.at !== undefined && { sendAt: options.at }),
        ...(options.quietHours && { quietHours: quietHoursWindow(options.quietHours) }),
        ...(options.trackLinks && { trackLinks: true }),
      });
      printOne(sent, [
        'id',
        'status',
        ...(sent.sendAt ? ['sendAt'] : []),
        'from',
        'to',
        'segments',
        'encoding',
      ]);
    },
  );

/** An ISO 8601 time as the server wants it; anything Date cannot read is refused here, before a request. */
function isoTime(value: string): string {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError(`--at: not a date-time: ${value}`);
  return at.toISOString();
}

const messages = program.command('messages').description('message history');

messages
  .command('list')
  .description('messages, newest first; --follow keeps printing new ones as they arrive')
  .option(
    '--status <status>',
    'scheduled, queued, sent, delivered, failed, undelivered, cancelled or received',
  )
  .option('--direction <direction>', 'outbound or inbound')
  .option('--number <number>', 'only messages to or from this number')
  .option('--limit <n>', 'how many (default 20)', positiveInteger, 20)
  .option('-f, --follow', 'keep watching for new messages (Ctrl-C to stop)')
  .option('--interval <seconds>', 'how often --follow asks (default 2)', positiveInteger, 2)
  .action(
    async (options: {
      status?: string;
      direction?: string;
      number?: string;
      limit: number;
      follow?: boolean;
      interval: number;
    }) => {
      const comms = await client();
      const query = {
        status: options.status as never,
        direction: options.direction as never,
        number: options.number,
      };
      const page = await comms.messages.list({ ...query, limit: options.limit });
      if (!options.follow) {
        printList(page.data, MESSAGE_COLUMNS);
        return;
      }
      // Following: oldest first, one line per message, then whatever is newer than what was shown.
      const seen = new Set<string>();
      const show = (rows: Row[]) => {
        for (const row of [...rows].reverse()) {
          if (seen.has(String(row.id))) continue;
          seen.add(String(row.id));
          if (globals().json) printJsonLine(row);
          else
            process.stdout.write(
              `${row.createdAt}  ${row.direction === 'inbound' ? '<-' : '->'} ${row.direction === 'inbound' ? row.from : row.to}  ${row.status}  ${row.id}  ${row.body}\n`,
            );
        }
      };
      show(page.data);
      let since = page.data[0]?.createdAt;
      for (;;) {
        await sleep(options.interval * 1000);
        const newer = await comms.messages.list({ ...query, limit: 100, ...(since && { since }) });
        show(newer.data);
        since = newer.data[0]?.createdAt ?? since;
      }
    },
  );

messages
  .command('get <id>')
  .description('one message, with its delivery state')
  .action(async (id: string) => printOne(await (await client()).messages.get(id)));

messages
  .command('cancel <id>')
  .description('cancel a scheduled message (one that has left the schedule cannot be)')
  .action(async (id: string) =>
    printOne(await (await client()).messages.cancel(id), ['id', 'status', 'sendAt', 'to']),
  );

// contacts

const contacts = program.command('contacts').description('contacts');

contacts
  .command('import <file>')
  .description('import contacts from a CSV file; rejected rows are reported by row number')
  .action(async (file: string) => {
    const bytes = await readFile(file).catch(() => {
      throw new UsageError(`Cannot read ${file}`);
    });
    const bar = progressBar(`Uploading ${basename(file)}`);
    let result: Awaited<ReturnType<Comms['contacts']['import']>>;
    try {
      result = await (await client()).contacts.import(
        { file: bytes, filename: basename(file), contentType: 'text/csv' },
        { onUploadProgress: (sent, total) => bar.update(sent, total), timeoutMs: 10 * 60_000 },
      );
    } finally {
      bar.end();
    }
    if (globals().json) {
      printJson(result);
      return;
    }
    process.stdout.write(
      `Imported ${result.imported}, updated ${result.updated}, rejected ${result.rejected} (${(await stat(file)).size} bytes)\n`,
    );
    if (result.errors.length > 0) {
      process.stdout.write('Rejected rows:\n');
      printTable(result.errors, ['row', 'reason']);
      if (result.rejected > result.errors.length)
        process.stdout.write(`…and ${result.rejected - result.errors.length} more\n`);
    }
  });

contacts
  .command('list')
  .description('contacts, newest first')
  .option('--search <text>', 'name, phone or e-mail containing this')
  .option('--limit <n>', 'how many (default 20)', positiveInteger, 20)
  .action(async (options: { search?: string; limit: number }) => {
    const page = await (await client()).contacts.list({ search: options.search, limit: options.limit });
    printList(page.data, ['id', 'phone', 'firstName', 'lastName', 'email', 'optedOut']);
  });

// campaigns

const campaigns = program.command('campaigns').description('SMS campaigns to contact lists');

campaigns
  .command('create')
  .description('create a draft campaign (launch it with `comms campaigns launch <id>`)')
  .requiredOption('--name <name>', 'its name')
  .requiredOption('-m, --message <text>', 'the text, merge variables allowed')
  .requiredOption('--list <id>', 'a contact list to send to (repeatable)', collect)
  .option(
    '--sender <number>',
    'a number to send from (repeatable; default: the organization default)',
    collect,
  )
  .option('--media <url>', 'hosted media URL (repeatable)', collect)
  .option('--schedule <time>', 'when to start, ISO 8601 (default: at launch)')
  .option('--timezone <zone>', 'IANA time zone for recipients whose own is unknown, e.g. America/New_York')
  .option(
    '--quiet-hours <window>',
    "local sending window HH:MM-HH:MM (default 08:00-21:00), or 'off'",
    quietHours,
  )
  .action(
    async (options: {
      name: string;
      message: string;
      list: string[];
      sender?: string[];
      media?: string[];
      schedule?: string;
      timezone?: string;
      quietHours?: string;
    }) => {
      const campaign = await (await client()).campaigns.create({
        name: options.name,
        message: options.message,
        contactListIds: options.list,
        ...(options.sender && { senders: options.sender }),
        ...(options.media && { mediaUrls: options.media }),
        ...(options.schedule && { scheduledAt: options.schedule }),
        ...(options.timezone && { timezone: options.timezone }),
        ...(options.quietHours && { quietHours: quietHoursWindow(options.quietHours) }),
      });
      printOne(campaign, ['id', 'name', 'status', 'scheduledAt']);
    },
  );

campaigns
  .command('launch <id>')
  .description('start sending a draft (or scheduled) campaign')
  .action(async (id: string) =>
    printOne(await (await client()).campaigns.launch(id), ['id', 'name', 'status']),
  );

campaigns
  .command('stats <id>')
  .description("a campaign's delivery statistics; --watch refreshes them until it finishes")
  .option('-w, --watch', 'refresh every 2 s until the campaign has finished')
  .action(async (id: string, options: { watch?: boolean }) => {
    const comms = await client();
    for (;;) {
      const [campaign, analytics] = await Promise.all([
        comms.campaigns.get(id),
        comms.campaigns.analytics(id),
      ]);
      if (globals().json) printJsonLine({ ...analytics, status: campaign.status });
      else printRecord({ status: campaign.status, ...(analytics as Row) });
      const finished = ['completed', 'cancelled', 'failed'].includes(campaign.status);
      if (!options.watch || finished) return;
      await sleep(2000);
      if (!globals().json) process.stdout.write('\n');
    }
  });

campaigns
  .command('list')
  .description('campaigns, newest first')
  .action(async () => {
    const page = await (await client()).campaigns.list({ limit: 50 });
    printList(page.data, ['id', 'name', 'status', 'createdAt']);
  });

// conversations

addConversationCommands(program, { client, json: () => globals().json === true, collect, positiveInteger });

// calls

const calls = program.command('calls').description('phone calls');

calls
  .command('list')
  .description('calls, newest first')
  .option('--limit <n>', 'how many (default 20)', positiveInteger, 20)
  .action(async (options: { limit: number }) => {
    const page = await (await client()).calls.list({ limit: options.limit });
    printList(page.data, ['id', 'startedAt', 'direction', 'status', 'from', 'to', 'durationSeconds']);
  });

// webhooks

const hooks = program.command('webhooks').description('webhook endpoints and a local forwarder');

hooks
  .command('list')
  .description("the organization's webhook endpoints (manage them in the console)")
  .action(async () => {
    const page = await (await client()).webhooks.list({ limit: 100 });
    printList(page.data, ['id', 'url', 'events', 'enabled']);
  });

hooks
  .command('listen')
  .description('receive webhooks locally, verify their signatures and forward them to your handler')
  .requiredOption('--forward-to <url>', 'your handler, e.g. http://localhost:8080/webhooks')
  .option('--port <port>', 'port to listen on (default 4242)', positiveInteger, 4242)
  .option('--host <host>', 'address to listen on (default 127.0.0.1)', '127.0.0.1')
  .option('--secret <secret>', "the endpoint's signing secret, whsec_… (default: COMMS_WEBHOOK_SECRET)")
  .option('--skip-verify', 'forward without checking signatures')
  .action(
    async (options: {
      forwardTo: string;
      port: number;
      host: string;
      secret?: string;
      skipVerify?: boolean;
    }) => {
      const secret = options.secret ?? process.env.COMMS_WEBHOOK_SECRET;
      if (!secret && !options.skipVerify)
        throw new UsageError(
          'Give the endpoint secret (--secret or COMMS_WEBHOOK_SECRET), or --skip-verify.',
        );
      const server = await listen(
        {
          port: options.port,
          host: options.host,
          forwardTo: options.forwardTo,
          secret,
          json: Boolean(globals().json),
        },
        (line) => {
          if (globals().json) printJsonLine(line);
          else if (line.verified === false) process.stdout.write(`✗ ${line.id} refused: ${line.error}\n`);
          else
            process.stdout.write(
              `${line.type} ${line.id} -> ${line.forwardedTo} ${line.status ?? `failed: ${line.error}`}\n`,
            );
        },
      );
      const address = server.address() as { port: number };
      const url = `http://${options.host}:${address.port}/`;
      if (globals().json) printJsonLine({ listening: url, forwardTo: options.forwardTo });
      else
        process.stdout.write(
          `Listening on ${url} and forwarding to ${options.forwardTo}. Point a webhook endpoint at it (console: Webhooks). Ctrl-C to stop.\n`,
        );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      server.close();
    },
  );

program
  .command('completion')
  .description('print a shell completion script: comms completion bash > /etc/bash_completion.d/comms')
  .argument('[shell]', 'bash or zsh', 'bash')
  .action((shell: string) => {
    if (shell !== 'bash' && shell !== 'zsh') throw new UsageError('Shells: bash, zsh.');
    process.stdout.write(completionScript(program, shell));
  });

function fail(error: unknown): never {
  const json = globals().json;
  if (error instanceof CommsApiError) {
    const detail = [error.status, error.code, error.reason].filter(Boolean).join(' ');
    if (json)
      printJson({
        error: {
          status: error.status,
          code: error.code,
          reason: error.reason,
          message: error.message,
          data: error.data,
        },
      });
    process.stderr.write(`Error: ${error.message} (${detail})\n`);
    const rows = (error.data as { errors?: Row[] } | undefined)?.errors;
    if (!json && Array.isArray(rows) && rows.length > 0) {
      process.stderr.write('Rejected rows:\n');
      for (const row of rows) process.stderr.write(`  row ${row.row}: ${row.reason}\n`);
    }
    if (error.retryAfter !== undefined) process.stderr.write(`Retry after ${error.retryAfter} s.\n`);
    process.exit(1);
  }
  if (error instanceof CommsConnectionError) {
    process.stderr.write(`Error: ${error.message}. Is the server running (--base-url)?\n`);
    process.exit(2);
  }
  if (error instanceof UsageError || error instanceof CommsError) {
    process.stderr.write(`Error: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}

program.parseAsync().catch(fail);
