// An agent's HTTP tools: the model's arguments POSTed as JSON to the tool's URL, the JSON answer handed back
// to the model. The same client as webhooks (modules/webhooks/transport.ts): no redirects, one deadline for the
// whole exchange, and in production https only to public addresses checked after DNS (the SSRF guard), since
// a tool's URL is whatever the customer typed. At most 16 KB of the answer is read.
import type { WebhookTransport } from '../webhooks/index.ts';
import type { ToolCaller } from './brain.ts';
import type { AgentTool, ToolCall } from './schemas.ts';

export const TOOL_TIMEOUT_MS = 10_000;
export const TOOL_ANSWER_BYTES = 16 * 1024;

export class HttpToolCaller implements ToolCaller {
  constructor(private readonly transport: WebhookTransport) {}

  async call(tool: AgentTool, args: unknown): Promise<ToolCall> {
    const result = await this.transport.post(
      tool.url,
      { 'user-agent': 'commsplatform-agent-tool/1' },
      JSON.stringify(args ?? {}),
    );
    const failed = (error: string): ToolCall => ({
      name: tool.name,
      arguments: args,
      status: 'failed',
      error,
    });
    if (result.statusCode === null) return failed(result.error ?? 'no answer');
    if (result.statusCode < 200 || result.statusCode >= 300)
      return failed(`the tool answered ${result.statusCode}`);
    const body = result.responseExcerpt ?? '';
    if (body.length >= TOOL_ANSWER_BYTES)
      return failed(`the answer is longer than ${TOOL_ANSWER_BYTES} bytes`);
    let answer: unknown = body;
    try {
      answer = body === '' ? null : JSON.parse(body);
    } catch {
      // A tool may answer in plain text; the model reads it as it is.
    }
    return { name: tool.name, arguments: args, status: 'ok', result: answer };
  }
}
