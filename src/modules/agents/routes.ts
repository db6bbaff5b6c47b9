// Knowledge bases and agents on the developer API and the portal (CONTRACT section 10). Scopes agents:read
// and agents:write (chat too: a reply may call the agent's tools); the agents product; in the portal any member
// reads and tries an agent in chat, owners and admins change them.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.ts';
import type { App } from '../../platform/http/app-type.ts';
import { callerOf, cursorScope } from '../../platform/http/caller.ts';
import { multipartUpload, REQUEST_BODY_DOC } from '../../platform/http/openapi.ts';
import { envelope, IdParams } from '../../platform/http/schemas.ts';
import type { ModuleRoutes } from '../../platform/module.ts';
import { OffsetPageQuery, PageEnvelope, pageResponse } from '../../platform/pagination.ts';
import { organizationsModule } from '../organizations/index.ts';
import { replyOrUnavailable } from './brain.ts';
import { MAX_DOCUMENT_FILE_BYTES } from './documents.ts';
import {
  AgentCallPlace,
  AgentCallSchema,
  AgentCreate,
  AgentPatch,
  AgentSchema,
  ChatReplySchema,
  ChatRequest,
  DocumentPatch,
  DocumentSchema,
  KnowledgeBaseCreate,
  KnowledgeBasePatch,
  KnowledgeBaseSchema,
  SearchHitSchema,
  SearchRequest,
} from './schemas.ts';
import type { AgentsServices } from './services.ts';

const read = { scope: 'agents:read', product: 'agents' } as const;
const write = { scope: 'agents:write', product: 'agents', role: 'manager' } as const;
const Deleted = envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true) }));
const DocumentParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  documentId: Type.String({ minLength: 1, maxLength: 100 }),
});

export const knowledgeRoutes: ModuleRoutes<AgentsServices> =
  ({ knowledge }) =>
  async (app: App) => {
    const tags = ['Knowledge bases'];

    app.get(
      '/knowledge-bases',
      {
        config: read,
        schema: {
          operationId: 'knowledgeBases.list',
          tags,
          summary: "The organization's knowledge bases, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(KnowledgeBaseSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await knowledge.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/knowledge-bases',
      {
        config: write,
        schema: {
          operationId: 'knowledgeBases.create',
          tags,
          summary: 'Create a knowledge base; its language sets how its documents are searched',
          body: KnowledgeBaseCreate,
          response: { 201: envelope(KnowledgeBaseSchema) },
        },
      },
      async (request, reply) =>
        reply.status(201).send({
          success: true,
          data: await knowledge.create(callerOf(request).organizationId, request.body),
        }),
    );

    app.get(
      '/knowledge-bases/:id',
      {
        config: read,
        schema: {
          operationId: 'knowledgeBases.get',
          tags,
          summary: 'One knowledge base with its document and chunk counts',
          params: IdParams,
          response: { 200: envelope(KnowledgeBaseSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await knowledge.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/knowledge-bases/:id',
      {
        config: write,
        schema: {
          operationId: 'knowledgeBases.update',
          tags,
          summary: 'Rename or describe it, or change its language (its documents are re-indexed)',
          params: IdParams,
          body: KnowledgeBasePatch,
          response: { 200: envelope(KnowledgeBaseSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await knowledge.update(callerOf(request).organizationId, request.params.id, request.body),
      }),
    );

    app.delete(
      '/knowledge-bases/:id',
      {
        config: write,
        schema: {
          operationId: 'knowledgeBases.delete',
          tags,
          summary: 'Delete it and its documents; agents stop answering from it',
          params: IdParams,
          response: { 200: Deleted },
        },
      },
      async (request) => {
        await knowledge.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    app.get(
      '/knowledge-bases/:id/documents',
      {
        config: read,
        schema: {
          operationId: 'knowledgeBases.documents.list',
          tags,
          summary: "The base's documents, newest first (offset paging), without their text",
          params: IdParams,
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(DocumentSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(
          await knowledge.pageDocuments(
            caller.organizationId,
            request.params.id,
            request.query,
            cursorScope(caller),
          ),
        );
      },
    );

    app.post(
      '/knowledge-bases/:id/documents',
      {
        config: { ...write, uploadLimit: MAX_DOCUMENT_FILE_BYTES + 64 * 1024, errorStatuses: [413, 415] },
        schema: {
          operationId: 'knowledgeBases.documents.create',
          tags,
          summary: 'Add a document: JSON `{title, content}`, or a file in the multipart field `file`',
          description:
            'A file may be text (.txt), Markdown (.md), CSV (.csv), HTML (.html) or PDF (.pdf), at most ' +
            `${MAX_DOCUMENT_FILE_BYTES / 1024 / 1024} MB; an optional multipart field \`title\` names it (default: the file name). ` +
            'Its text is split into overlapping chunks and indexed at once. Refusals: 400 DOCUMENT_EMPTY, ' +
            'DOCUMENT_UNREADABLE; 413 for a file over the limit or DOCUMENT_TOO_LARGE for more than 500,000 ' +
            'characters of text; 415 UNSUPPORTED_DOCUMENT_TYPE.',
          [REQUEST_BODY_DOC]: multipartUpload(
            'A .txt, .md, .csv, .html or .pdf file',
            { title: 'The document title (default: the file name)' },
            Type.Object({ title: Type.String(), content: Type.String() }),
          ),
          params: IdParams,
          response: { 201: envelope(DocumentSchema) },
        },
      },
      async (request, reply) => {
        const { organizationId } = callerOf(request);
        await knowledge.get(organizationId, request.params.id); // 404 before the body is read
        let document: Awaited<ReturnType<typeof knowledge.addText>>;
        if (request.isMultipart()) {
          const file = await documentFile(request);
          document = await knowledge.addFile(organizationId, request.params.id, file);
        } else {
          const body = request.body as { title?: unknown; content?: unknown } | undefined;
          document = await knowledge.addText(
            organizationId,
            request.params.id,
            checkedDocument(request, body),
          );
        }
        return reply.status(201).send({ success: true, data: document });
      },
    );

    app.get(
      '/knowledge-bases/:id/documents/:documentId',
      {
        config: read,
        schema: {
          operationId: 'knowledgeBases.documents.get',
          tags,
          summary: 'One document with its text',
          params: DocumentParams,
          response: { 200: envelope(DocumentSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await knowledge.getDocument(
          callerOf(request).organizationId,
          request.params.id,
          request.params.documentId,
        ),
      }),
    );

    app.patch(
      '/knowledge-bases/:id/documents/:documentId',
      {
        config: { ...write, errorStatuses: [413] },
        schema: {
          operationId: 'knowledgeBases.documents.update',
          tags,
          summary: "Change a document's title or text; it is re-indexed at once",
          params: DocumentParams,
          body: DocumentPatch,
          response: { 200: envelope(DocumentSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await knowledge.updateDocument(
          callerOf(request).organizationId,
          request.params.id,
          request.params.documentId,
          request.body,
        ),
      }),
    );

    app.delete(
      '/knowledge-bases/:id/documents/:documentId',
      {
        config: write,
        schema: {
          operationId: 'knowledgeBases.documents.delete',
          tags,
          summary: 'Delete a document and its chunks',
          params: DocumentParams,
          response: { 200: Deleted },
        },
      },
      async (request) => {
        const { id, documentId } = request.params;
        await knowledge.deleteDocument(callerOf(request).organizationId, id, documentId);
        return { success: true as const, data: { id: documentId, deleted: true as const } };
      },
    );

    app.post(
      '/knowledge-bases/:id/search',
      {
        config: read,
        schema: {
          operationId: 'knowledgeBases.search',
          tags,
          summary: 'The chunks that best match a question, best first, with their scores',
          params: IdParams,
          body: SearchRequest,
          response: { 200: envelope(Type.Array(SearchHitSchema)) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await knowledge.searchBase(
          callerOf(request).organizationId,
          request.params.id,
          request.body.query,
          request.body.limit ?? 5,
        ),
      }),
    );
  };

export const agentRoutes: ModuleRoutes<AgentsServices> =
  ({ agents, brain, agentCalls }, _platform, use) =>
  async (app: App) => {
    const { organizations } = use(organizationsModule);
    const tags = ['Agents'];

    app.get(
      '/agents',
      {
        config: read,
        schema: {
          operationId: 'agents.list',
          tags,
          summary: "The organization's agents, newest first (offset paging)",
          querystring: OffsetPageQuery,
          response: { 200: PageEnvelope(AgentSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await agents.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.post(
      '/agents',
      {
        config: write,
        schema: {
          operationId: 'agents.create',
          tags,
          summary: 'Create an agent',
          body: AgentCreate,
          response: { 201: envelope(AgentSchema) },
        },
      },
      async (request, reply) => {
        const org = await organizations.ofCaller(callerOf(request));
        return reply.status(201).send({ success: true, data: await agents.create(org, request.body) });
      },
    );

    app.get(
      '/agents/:id',
      {
        config: read,
        schema: {
          operationId: 'agents.get',
          tags,
          summary: 'One agent',
          params: IdParams,
          response: { 200: envelope(AgentSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await agents.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.patch(
      '/agents/:id',
      {
        config: write,
        schema: {
          operationId: 'agents.update',
          tags,
          summary: 'Change an agent; fields given replace what was there (arrays whole)',
          params: IdParams,
          body: AgentPatch,
          response: { 200: envelope(AgentSchema) },
        },
      },
      async (request) => {
        const org = await organizations.ofCaller(callerOf(request));
        return { success: true as const, data: await agents.update(org, request.params.id, request.body) };
      },
    );

    app.delete(
      '/agents/:id',
      {
        config: write,
        schema: {
          operationId: 'agents.delete',
          tags,
          summary: 'Delete an agent; numbers routed to it lose their route, its call records stay',
          params: IdParams,
          response: { 200: Deleted },
        },
      },
      async (request) => {
        await agents.delete(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: { id: request.params.id, deleted: true as const } };
      },
    );

    app.post(
      '/agents/:id/calls',
      {
        config: { ...write, errorStatuses: [409] },
        schema: {
          operationId: 'agents.calls.create',
          tags,
          summary:
            'The agent calls a phone number from one of your numbers; it talks once the callee answers',
          description:
            '202 with the agent call (`queued`); follow it on GET /agent-calls/{id} or the agent_call.* events. ' +
            'Needs the voice product too. 409 VOICE_REGION_UNAVAILABLE when the region is full.',
          params: IdParams,
          body: AgentCallPlace,
          response: { 202: envelope(AgentCallSchema) },
        },
      },
      async (request, reply) => {
        const org = await organizations.ofCaller(callerOf(request));
        const call = await agentCalls.place(org, request.params.id, request.body);
        return reply.status(202).send({ success: true, data: call });
      },
    );

    app.get(
      '/agent-calls',
      {
        config: read,
        schema: {
          operationId: 'agentCalls.list',
          tags,
          summary: 'Calls agents took or placed, newest first (offset paging)',
          querystring: Type.Object({
            ...OffsetPageQuery.properties,
            callId: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 100,
                description:
                  'Only the agent call on this call (`call_…`): a live call page finds its transcript',
              }),
            ),
          }),
          response: { 200: PageEnvelope(AgentCallSchema) },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        return pageResponse(await agentCalls.page(caller.organizationId, request.query, cursorScope(caller)));
      },
    );

    app.get(
      '/agent-calls/:id',
      {
        config: read,
        schema: {
          operationId: 'agentCalls.get',
          tags,
          summary: 'One agent call with its transcript, outcome and summary',
          params: IdParams,
          response: { 200: envelope(AgentCallSchema) },
        },
      },
      async (request) => ({
        success: true as const,
        data: await agentCalls.get(callerOf(request).organizationId, request.params.id),
      }),
    );

    app.post(
      '/agents/:id/chat',
      {
        // agents:write: a reply may call the agent's tools, which act in the world (book, cancel). Any portal
        // member may try an agent.
        config: { scope: 'agents:write', product: 'agents', errorStatuses: [502] },
        schema: {
          operationId: 'agents.chat',
          tags,
          summary:
            'Talk to an agent in text: its reply to the conversation, with the same brain as on a call',
          description:
            "The last message must be the caller's (`user`). The reply cites the knowledge-base documents it is " +
            'grounded in (`sources`); `action` says what the agent does next on a call. 502 AGENT_UNAVAILABLE ' +
            'when the configured model does not answer.',
          params: IdParams,
          body: ChatRequest,
          response: { 200: envelope(ChatReplySchema) },
        },
      },
      async (request) => {
        const { messages } = request.body;
        if (messages.at(-1)!.role !== 'user') {
          throw ApiError.badRequest('messages: the last message must be the caller\'s (role "user")');
        }
        const agent = await agents.profile(callerOf(request).organizationId, request.params.id);
        return { success: true as const, data: await replyOrUnavailable(brain, agent, messages) };
      },
    );
  };

/** JSON `{title, content}` checked as the schema would (the route also takes multipart, so it has none). */
function checkedDocument(
  request: FastifyRequest,
  body: { title?: unknown; content?: unknown } | undefined,
): { title: string; content: string } {
  const problems: string[] = [];
  const title = body?.title;
  const content = body?.content;
  if (typeof title !== 'string' || title.length < 1 || title.length > 200) {
    problems.push('body.title must be a string of 1 to 200 characters');
  }
  if (typeof content !== 'string' || content.length < 1)
    problems.push('body.content must be a non-empty string');
  if (body && Object.keys(body).some((key) => key !== 'title' && key !== 'content')) {
    problems.push('body must have only title and content');
  }
  if (problems.length > 0 || request.body === undefined) {
    throw ApiError.badRequest(
      problems.length > 0
        ? problems.join('; ')
        : 'Send JSON {title, content} or a file in the multipart field "file"',
    );
  }
  return { title: title as string, content: content as string };
}

/** The multipart document: the `file` field's bytes and name, and an optional `title` field before it. */
async function documentFile(request: FastifyRequest) {
  let title: string | undefined;
  try {
    for await (const part of request.parts({ limits: { fileSize: MAX_DOCUMENT_FILE_BYTES } })) {
      if (part.type === 'field' && part.fieldname === 'title' && typeof part.value === 'string') {
        title = part.value.trim().slice(0, 200) || undefined;
      } else if (part.type === 'file' && part.fieldname === 'file') {
        const bytes = await part.toBuffer();
        // The parser marks a file cut at the limit but does not always throw for it.
        if (part.file.truncated) {
          throw new ApiError(413, `The file is larger than ${MAX_DOCUMENT_FILE_BYTES / 1024 / 1024} MB`);
        }
        return { bytes, filename: part.filename, mediaType: part.mimetype, title };
      } else if (part.type === 'file') {
        part.file.resume();
      }
    }
  } catch (error) {
    if (error instanceof ApiError || (error as { statusCode?: number }).statusCode) throw error;
    throw ApiError.badRequest(`The multipart body could not be read: ${(error as Error).message}`);
  }
  throw ApiError.badRequest(
    'Send the document in the multipart field "file" (a title field, if any, before it)',
  );
}
