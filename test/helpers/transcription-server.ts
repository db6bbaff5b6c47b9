// A local server speaking the OpenAI transcription API (POST {url}/audio/transcriptions, multipart `file` and
// `model`), for the tests of our adapter to it and of what is transcribed with it.
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance } from 'fastify';

/** A local server speaking the OpenAI transcription API; `answer` decides each reply. */
export async function transcriptionServer(
  answer: (request: { authorization?: string; model?: string; file: Buffer; filename?: string }) => {
    status: number;
    body: string;
    hang?: boolean;
  },
): Promise<{ url: string; server: FastifyInstance; seen: Buffer[] }> {
  const server = Fastify();
  await server.register(multipart, { limits: { fileSize: 50 * 1024 * 1024 } });
  const seen: Buffer[] = [];
  server.post('/v1/audio/transcriptions', async (request, reply) => {
    const fields: Record<string, string> = {};
    let file: Buffer = Buffer.alloc(0);
    let filename: string | undefined;
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        file = await part.toBuffer();
        filename = part.filename;
      } else fields[part.fieldname] = String(part.value);
    }
    seen.push(file);
    const result = answer({
      authorization: request.headers.authorization,
      model: fields.model,
      file,
      filename,
    });
    if (result.hang) await new Promise((resolve) => setTimeout(resolve, 2000));
    return reply.status(result.status).type('application/json').send(result.body);
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(server.server.address() as { port: number }).port}/v1`, server, seen };
}
