// Voicemails (scope voicemails:read), recordings and transcriptions (scope recordings:read) on the developer
// API and the portal, with the voice product (CONTRACT section 9). Audio is `audio/wav` and honours `Range`,
// so a player can seek. In the portal any member reads them and marks voicemails read; only owners and admins
// delete either (docs/auth.md "Who may do what"): both are callers' voices and their transcripts, and deleting
// them is for who answers for what the organization keeps.
import { Type } from 'typebox';
import type { App } from '../../platform/http/app-type.ts';
import { sendBytes } from '../../platform/http/byte-range.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { RecordingSchema, TranscriptionSchema, VoicemailPatch, VoicemailSchema } from './schemas.ts';
import type { VoiceServices } from './services.ts';

const voicemails = { scope: 'voicemails:read', product: 'voice' } as const;
const recordings = { scope: 'recordings:read', product: 'voice' } as const;
const Deleted = envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) }));
const audioResponse = {
  200: {
    description: 'audio/wav: 8 kHz mono 16-bit PCM',
    content: { 'audio/wav': { schema: Type.String({ format: 'binary' }) } },
  },
};

export const mediaRoutes: ModuleRoutes<VoiceServices> =
  ({ media }) =>
  async (app: App) => {
    app.get(
      '/voicemails',
      {
        config: voicemails,
        schema: {
          operationId: 'voicemails.list',
          tags: ['Voicemails'],
          summary: "The organization's voicemails, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(VoicemailSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await media.voicemails(caller.organizationId, request.query, cursorScope(caller)),
        );
      },
    );

    app.get(
      '/voicemails/:id',
      {
        config: voicemails,
        schema: {
          operationId: 'voicemails.get',
          tags: ['Voicemails'],
          summary: 'One voicemail',
          params: IdParams,
          response: { 200: envelope(VoicemailSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await media.voicemail(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/voicemails/:id',
      {
        config: voicemails,
        schema: {
          operationId: 'voicemails.update',
          tags: ['Voicemails'],
          summary: 'Mark a voicemail read or unread',
          params: IdParams,
          body: VoicemailPatch,
          response: { 200: envelope(VoicemailSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await media.markVoicemail(
          callerOf(request).organizationId,
          request.params.id,
          request.body.read,
        ),
      }),
    );

    app.delete(
      '/voicemails/:id',
      {
        config: { ...voicemails, role: 'manager' },
        schema: {
          operationId: 'voicemails.delete',
          tags: ['Voicemails'],
          summary: 'Delete a voicemail, its audio and its transcriptions',
          params: IdParams,
          response: { 200: Deleted },
        },
      },
      async (request) => {
        await media.remove('voicemails', callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    app.get(
      '/voicemails/:id/audio',
      {
        config: { ...voicemails, errorStatuses: [416] },
        schema: {
          operationId: 'voicemails.audio',
          tags: ['Voicemails'],
          summary: 'The voicemail audio (audio/wav); `Range` requests are answered 206',
          params: IdParams,
          response: audioResponse,
        },
      },
      async (request, reply) => {
        const audio = await media.audio('voicemails', callerOf(request).organizationId, request.params.id);
        return sendBytes(request, reply, audio, 'audio/wav');
      },
    );

    app.get(
      '/recordings',
      {
        config: recordings,
        schema: {
          operationId: 'recordings.list',
          tags: ['Recordings'],
          summary: "The organization's call recordings, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(RecordingSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await media.recordings(caller.organizationId, request.query, cursorScope(caller)),
        );
      },
    );

    app.get(
      '/recordings/:id',
      {
        config: recordings,
        schema: {
          operationId: 'recordings.get',
          tags: ['Recordings'],
          summary: 'One recording',
          params: IdParams,
          response: { 200: envelope(RecordingSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await media.recording(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.delete(
      '/recordings/:id',
      {
        config: { ...recordings, role: 'manager' },
        schema: {
          operationId: 'recordings.delete',
          tags: ['Recordings'],
          summary: 'Delete a recording, its audio and its transcriptions',
          params: IdParams,
          response: { 200: Deleted },
        },
      },
      async (request) => {
        await media.remove('recordings', callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    app.get(
      '/recordings/:id/audio',
      {
        config: { ...recordings, errorStatuses: [416] },
        schema: {
          operationId: 'recordings.audio',
          tags: ['Recordings'],
          summary: 'The recording audio (audio/wav); `Range` requests are answered 206',
          params: IdParams,
          response: audioResponse,
        },
      },
      async (request, reply) => {
        const audio = await media.audio('recordings', callerOf(request).organizationId, request.params.id);
        return sendBytes(request, reply, audio, 'audio/wav');
      },
    );

    app.get(
      '/transcriptions',
      {
        config: recordings,
        schema: {
          operationId: 'transcriptions.list',
          tags: ['Transcriptions'],
          summary: 'Transcriptions of voicemails and recordings, newest first (offset paging)',
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(TranscriptionSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await media.transcriptions(caller.organizationId, request.query, cursorScope(caller)),
        );
      },
    );

    app.get(
      '/transcriptions/:id',
      {
        config: recordings,
        schema: {
          operationId: 'transcriptions.get',
          tags: ['Transcriptions'],
          summary: 'One transcription, with the engine that made it',
          params: IdParams,
          response: { 200: envelope(TranscriptionSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await media.transcription(callerOf(request).organizationId, request.params.id),
      }),
    );
  };
