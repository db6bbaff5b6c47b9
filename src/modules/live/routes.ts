// GET /v2/portal/events: the organization's events as server-sent events (the WHATWG HTML "server-sent
// events" format), for a signed-in member's browser (EventSource sends the session cookie). Each event is
//   id: <event id>            what the browser sends back as Last-Event-ID when it reconnects
//   event: <type>             message.sent, call.completed, conversation.assigned…
//   data: <JSON>              the webhook payload, byte for byte the shape a webhook receives
// A comment line every LIVE_HEARTBEAT_SECONDS keeps proxies from closing an idle stream; at each one the session is
// checked again, so a stream ends when its session does (signed out, expired, removed from the organization).
// A client that reads too slowly is cut off rather than buffered without bound: it reconnects and resumes.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf } from '../../platform/http/caller.ts';
import type { LiveEvent, LiveEvents } from '../../platform/live-events.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { identityModule, sessionTokenOf } from '../identity/index.ts';

export interface LiveServices {
  live: LiveEvents;
}

/** What the browser waits before reconnecting (the stream's `retry:` field). */
const RECONNECT_MS = 3_000;
/** Streams one instance holds for one organization: every tab of every member, with room to spare. */
export const MAX_STREAMS_PER_ORGANIZATION = 50;
/** Bytes waiting for a slow client beyond which its stream is ended (it resumes with Last-Event-ID). */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** One event in the server-sent events format; `data` is one line (JSON escapes its newlines). */
export function eventFrame(event: LiveEvent): string {
  const payload = JSON.stringify({
    type: event.type,
    timestamp: event.createdAt.toISOString(),
    data: event.data,
  });
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${payload}\n\n`;
}

export const liveRoutes: ModuleRoutes<LiveServices> =
  ({ live }, platform, use) =>
  async (app: App) => {
    const { sessions } = use(identityModule);
    const streams = new Map<string, Set<() => void>>();

    // Open streams would hold the server's close until their clients left: end them when it starts closing.
    app.addHook('preClose', async () => {
      for (const ends of streams.values()) for (const end of [...ends]) end();
      await live.close();
    });

    app.get(
      '/events',
      {
        schema: {
          operationId: 'events.stream',
          tags: ['Live events'],
          summary: "Stream the organization's events as they happen (server-sent events)",
          description:
            'A `text/event-stream` of every event recorded for the organization from now on, each with `id`, ' +
            '`event` (its type) and `data` (the webhook payload). Send `Last-Event-ID` to resume after an ' +
            `event (up to 1,000 are replayed). 429 TOO_MANY_STREAMS past ${MAX_STREAMS_PER_ORGANIZATION} ` +
            'streams of one organization on one server.',
          headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: 100 })) }),
          response: {
            200: {
              description: 'The stream (never ends on its own while the session lasts)',
              content: { 'text/event-stream': { schema: Type.String() } },
            },
          },
        },
      },
      async (request, reply) => {
        const { organizationId } = callerOf(request);
        const token = sessionTokenOf(request)!;
        const open = streams.get(organizationId) ?? new Set();
        if (open.size >= MAX_STREAMS_PER_ORGANIZATION) {
          throw new ApiError(
            429,
            `This organization already has ${MAX_STREAMS_PER_ORGANIZATION} live streams open on this server`,
            { code: 'TOO_MANY_STREAMS' },
          );
        }
        streams.set(organizationId, open);

        const raw = reply.raw;
        let ended = false;
        let stopWatching: (() => void) | undefined;
        let heartbeat: NodeJS.Timeout | undefined;
        const end = () => {
          if (ended) return;
          ended = true;
          clearInterval(heartbeat);
          stopWatching?.();
          open.delete(end);
          if (open.size === 0 && streams.get(organizationId) === open) streams.delete(organizationId);
          raw.end();
        };
        const write = (chunk: string) => {
          if (ended) return;
          raw.write(chunk);
          if (raw.writableLength > MAX_BUFFERED_BYTES) end();
        };
        open.add(end);
        // The response's close: the client went away (or the stream was ended here).
        raw.once('close', end);

        reply.hijack();
        raw.writeHead(200, {
          ...(reply.getHeaders() as Record<string, string>),
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store, no-transform',
          // A reverse proxy (nginx) would otherwise hold events back in its buffer.
          'x-accel-buffering': 'no',
        });
        raw.write(`retry: ${RECONNECT_MS}\n\n`);
        heartbeat = setInterval(() => {
          write(': keep-alive\n\n');
          sessions.authenticate(token).then(
            (session) => {
              if (session.organizationId !== organizationId || !session.role) end();
            },
            () => end(),
          );
        }, platform.config.liveHeartbeatSeconds * 1000);
        heartbeat.unref();
        try {
          const lastEventId = request.headers['last-event-id'];
          const stop = await live.watch(
            organizationId,
            (event) => write(eventFrame(event)),
            typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined,
          );
          if (ended) stop();
          else stopWatching = stop;
        } catch (error) {
          request.log.warn({ err: error }, 'live events: could not watch');
          end();
        }
      },
    );
  };
