// Calls on the developer API and the portal (CONTRACT section 9): scopes calls:read and calls:write, the voice
// product; in the portal any member places and hangs up calls. The operator's region capacity and the
// simulated PBX's test controls are here too.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { envelope, HourlyQuery, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { PageEnvelope, PageQuery, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import { toCall } from './call-end.ts';
import {
  CALL_STATS_MAX_DAYS,
  CallCreate,
  CallHourlySchema,
  CallSchema,
  CallTransfer,
  RegionParams,
  RegionSchema,
  RegionUpdate,
  TestCallEvent,
  TestInbound,
} from './schemas.ts';
import type { VoiceServices } from './services.ts';
import { PBX_EVENTS } from './simulated-calls.ts';

const tags = ['Calls'];
const read = { scope: 'calls:read', product: 'voice' } as const;
const write = { scope: 'calls:write', product: 'voice' } as const;

export const callRoutes: ModuleRoutes<VoiceServices> =
  ({ calls }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);
    // The server is closing: the calls' hang-up listener lets go of its connection (twice is harmless).
    app.addHook('onClose', () => calls.close());

    app.get(
      '/calls',
      {
        config: read,
        schema: {
          operationId: 'calls.list',
          tags,
          summary: "The organization's calls, newest first (offset, or keyset with `cursor`)",
          querystring: Type.Object({
            ...PageQuery.properties,
            since: Type.Optional(
              Type.String({ format: 'date-time', description: 'Calls created at or after (ISO 8601)' }),
            ),
            live: Type.Optional(
              Type.Boolean({
                description: 'Only the calls not yet ended (ringing or in progress): who talks now',
              }),
            ),
          }),
          response: { 200: PageEnvelope(CallSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await calls.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.get(
      '/calls/stats/hourly',
      {
        config: read,
        schema: {
          operationId: 'calls.hourly',
          tags,
          summary: 'Calls created in each hour of a window (default: the last 24 hours)',
          description:
            'Calls by direction, and how many were answered, one bucket per hour from `since` (at most ' +
            `${CALL_STATS_MAX_DAYS} days before \`until\`): what a dashboard charts.`,
          querystring: HourlyQuery(CALL_STATS_MAX_DAYS),
          response: { 200: envelope(CallHourlySchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await calls.hourly(callerOf(request).organizationId, request.query),
      }),
    );

    app.post(
      '/calls',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'calls.create',
          tags,
          summary:
            'Place a call: click-to-call (ring `extensionId`, then the callee), to a phone, or extension to ' +
            'extension. 202: it plays out from here; follow it with GET or the call.* events',
          body: CallCreate,
          response: { 202: envelope(CallSchema) },
        },
      },
      async (request, reply) => {
        const org = await organizations.ofCaller(callerOf(request));
        return reply.status(202).send({ success: true, data: await calls.place(org, request.body) });
      },
    );

    app.get(
      '/calls/:id',
      {
        config: read,
        schema: {
          operationId: 'calls.get',
          tags,
          summary: 'One call',
          params: IdParams,
          response: { 200: envelope(CallSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await calls.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.post(
      '/calls/:id/hangup',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'calls.hangup',
          tags,
          summary:
            'End a call now (canceled before an answer, completed after); an ended call is answered as is',
          params: IdParams,
          response: { 200: envelope(CallSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await calls.hangup(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.post(
      '/calls/:id/transfer',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'calls.transfer',
          tags,
          summary:
            'Transfer a call in progress to an extension or a phone number (blind by default, or attended). ' +
            '202: the target rings from here; the record says `transferredTo` and call.transferred is sent once ' +
            'it answers (docs/voice.md "Transfers")',
          params: IdParams,
          body: CallTransfer,
          response: { 202: envelope(CallSchema) },
        },
      },
      async (request, reply) => {
        const data = await calls.transfer(callerOf(request).organizationId, request.params.id, request.body);
        return reply.status(202).send({ success: true, data });
      },
    );
  };

/** Each region's PBX capacity (operator API). */
export const regionOperatorRoutes: ModuleRoutes<VoiceServices> =
  ({ calls }) =>
  async (app: App) => {
    app.get(
      '/regions',
      {
        schema: {
          operationId: 'operator.regions.list',
          tags: ['Regions'],
          summary: "Each data-residency region's PBX capacity and the calls holding a place now",
          response: { 200: envelope(Type.Array(RegionSchema)) },
        },
      },
      async () => ({ success: true as const, data: await calls.regions() }),
    );

    app.put(
      '/regions/:region',
      {
        schema: {
          operationId: 'operator.regions.update',
          tags: ['Regions'],
          summary: "Set a region's capacity in concurrent calls (0 stops new calls; calls under way go on)",
          params: RegionParams,
          body: RegionUpdate,
          response: { 200: envelope(RegionSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await calls.setRegion(request.params.region, request.body.maxConcurrentCalls),
      }),
    );
  };

/**
 * What the test control says happens next: the events of TestCallEvent, the caller's keys (CONTRACT
 * section 13: `{event: "digits", digits: "12#"}`), keys being what a phone's keypad sends (RFC 4733 0-15),
 * and the caller's words to a speech gather (`{event: "speech", text: "sales please"}`).
 */
const TestCallEventWithKeys = Type.Object(
  {
    ...TestCallEvent.properties,
    event: Type.Enum([...PBX_EVENTS]),
    digits: Type.Optional(
      Type.String({ pattern: '^[0-9*#A-D]{1,64}$', description: 'digits: the keys the caller presses' }),
    ),
    text: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'utterance, speech: the words' }),
    ),
  },
  { additionalProperties: false },
);

/** The simulated PBX's test controls (operator API, APP_ENV=test only). */
export const pbxTestControls: ModuleRoutes<VoiceServices> =
  ({ calls, simulatedPbx }) =>
  async (app: App) => {
    app.post(
      '/test/pbx/inbound',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'test.pbx.inbound',
          tags: ['Test controls'],
          summary:
            'A call arrives at one of our numbers (APP_ENV=test only). With `outcome` it plays through at ' +
            'once; without, it waits for POST /test/pbx/calls/{id}',
          body: TestInbound,
          response: { 201: envelope(CallSchema) },
        },
      },
      async (request, reply) => {
        const { from, to, ...behaviour } = request.body;
        const instant = behaviour.outcome !== undefined;
        let settled: Promise<void> = Promise.resolve();
        const arrival = await calls.arrive({ from, to }, (callId) => {
          simulatedPbx.script(callId, behaviour, instant);
          settled = simulatedPbx.settled(callId);
        });
        await (instant ? arrival.program : settled);
        return reply.status(201).send({ success: true, data: toCall(await calls.getAny(arrival.call.id)) });
      },
    );

    app.post(
      '/test/pbx/calls/:id',
      {
        config: { errorStatuses: [409] },
        schema: {
          operationId: 'test.pbx.call',
          tags: ['Test controls'],
          summary: 'Say what happens next on a simulated call (APP_ENV=test only); answers its new state',
          params: IdParams,
          body: TestCallEventWithKeys,
          response: { 200: envelope(CallSchema) },
        },
      },
      async (request) => {
        await calls.getAny(request.params.id);
        const { event, text, audio, digits } = request.body;
        if (event === 'utterance' && !text && !audio) {
          throw ApiError.badRequest(
            'An utterance carries the words as `text` or a WAV of them as `audio` (base64)',
          );
        }
        if (event === 'digits' && !digits)
          throw ApiError.badRequest('A digits event carries the keys as `digits`');
        if (event === 'speech' && !text)
          throw ApiError.badRequest('A speech event carries the words as `text`');
        await simulatedPbx.drive(
          request.params.id,
          event,
          { text, audio: audio ? Buffer.from(audio, 'base64') : undefined },
          digits,
        );
        return { success: true as const, data: toCall(await calls.getAny(request.params.id)) };
      },
    );
  };
