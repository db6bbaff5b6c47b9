// The customer's app as the source of a call's steps (issue 33, docs/voice.md "Flows from your app"): one
// signed POST of the call to the app's URL, and the steps it answers, checked exactly as a stored flow's are.
//   URL       checked by the webhooks module's rules when the route or step is saved and again before every
//             request (production: https to a public address only), and the transport checks the address it
//             resolves to and connects to that one (the SSRF guard, platform/http/address-guard.ts).
//   signing   Standard Webhooks headers (webhooks module's signedHeaders) with the organization's flow app
//             secret (flow-app-secrets.ts); webhook-id is new for each request.
//   limits    one deadline for the whole exchange (5 s; FLOW_APP_TIMEOUT_MS), no redirect followed (a 3xx is a
//             failure), at most FLOW_APP_ANSWER_BYTES of answer read.
//   answer    a 2xx with the JSON object `{"steps": [...]}`, the steps valid as a stored flow's (step shapes,
//             what the runner can run, the ids they name in the organization, the URLs they POST to).
// Anything else is a failure with a reason, logged (the URL's origin and path only: a query may hold a token),
// and the caller of `ask` falls back (flow-webhook-steps.ts). The request never throws for the app's faults.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PhoneNumber } from '../numbers/index.ts';
import { type PostResult, signedHeaders, type WebhookTransport } from '../webhooks/index.ts';
import type { FlowAppSecrets } from './flow-app-secrets.ts';
import type { FlowStep } from './flows/index.ts';

/** The deadline of one request to an app, DNS to the last byte (CONTRACT section 13: 5 s). */
export const FLOW_APP_TIMEOUT_MS = 5000;
/** The most of an app's answer read; a longer one is refused. */
export const FLOW_APP_ANSWER_BYTES = 64 * 1024;

/** What is POSTed to the app (CONTRACT section 13); `digits` after a gather (empty when no key came). */
export interface FlowAppRequest {
  callId: string;
  from: string;
  to: string;
  direction: 'inbound' | 'outbound' | 'internal';
  /** The call's status now: `queued` or `ringing` before the flow answers, `in_progress`, or how it ended. */
  status: string;
  digits?: string;
  speech?: string;
}

export type FlowAppAnswer = { kind: 'steps'; steps: FlowStep[] } | { kind: 'failed'; reason: string };

export interface FlowAppsDeps {
  clock: Clock;
  log: FastifyBaseLogger;
  /** The webhooks module's guarded client, with this file's deadline and answer size. */
  transport: WebhookTransport;
  secrets: FlowAppSecrets;
  /** The webhooks module's URL rules (WebhookService.checkUrl): the URL as it is sent, or its 400. */
  checkUrl: (url: string) => Promise<string>;
  /** A stored flow's checks (CallFlowService.checked): the steps, or the 400 INVALID_FLOW_STEP naming the path. */
  checkSteps: (organizationId: string, steps: unknown) => Promise<FlowStep[]>;
}

/** What a media stream's upgrade to `url` is signed over (FlowApps.streamHeaders): it has no body of its own. */
export function streamSignedBody(url: string): string {
  return JSON.stringify({ url });
}

export class FlowApps {
  constructor(private readonly deps: FlowAppsDeps) {}

  /** POSTs the call to the app at `url` and answers its steps, or why there are none. */
  async ask(organizationId: string, url: string, request: FlowAppRequest): Promise<FlowAppAnswer> {
    const failed = (reason: string): FlowAppAnswer => {
      this.deps.log.warn(
        { callId: request.callId, app: shown(url), reason },
        'call flow app gave no steps; the call falls back',
      );
      return { kind: 'failed', reason };
    };
    const sent = await this.post(organizationId, url, request);
    if (sent.kind === 'refused') return failed(sent.reason);
    const { result } = sent;
    if (result.statusCode === null) return failed(result.error ?? 'no answer');
    if (result.statusCode < 200 || result.statusCode >= 300)
      return failed(`answered HTTP ${result.statusCode}`);
    const body = result.responseExcerpt ?? '';
    // The transport reads one byte past the limit, so that a longer answer shows as one.
    if (Buffer.byteLength(body) > FLOW_APP_ANSWER_BYTES) {
      return failed(`the answer is longer than ${FLOW_APP_ANSWER_BYTES} bytes`);
    }
    let answer: unknown;
    try {
      answer = JSON.parse(body);
    } catch {
      return failed('the answer is not JSON');
    }
    if (!answer || typeof answer !== 'object' || Array.isArray(answer) || !('steps' in answer)) {
      return failed('the answer is not an object with `steps`');
    }
    const steps = (answer as { steps: unknown }).steps;
    if (Array.isArray(steps) && steps.length === 0)
      return failed('steps is empty (answer a hangup step to end)');
    try {
      return { kind: 'steps', steps: await this.deps.checkSteps(organizationId, steps) };
    } catch (error) {
      if (error instanceof ApiError) return failed(`invalid steps: ${error.message}`);
      throw error;
    }
  }

  /** POSTs the call (its end) to the app at `url`; its answer is not read for steps. Failures are logged. */
  async tell(organizationId: string, url: string, request: FlowAppRequest): Promise<void> {
    try {
      const sent = await this.post(organizationId, url, request);
      const status = sent.kind === 'sent' ? sent.result.statusCode : null;
      if (status === null || status < 200 || status >= 300) {
        const reason =
          sent.kind === 'refused' ? sent.reason : (sent.result.error ?? `answered HTTP ${status}`);
        this.deps.log.warn(
          { callId: request.callId, app: shown(url), reason },
          'call flow app did not take the call status',
        );
      }
    } catch (error) {
      this.deps.log.error({ callId: request.callId, err: error }, 'call status to the app failed');
    }
  }

  /**
   * The Standard Webhooks headers of a media stream's WebSocket upgrade to `url` (flow-stream.ts), signed with
   * the flow app secret. The upgrade has no body: the signature is made over `streamSignedBody(url)`, the JSON
   * `{"url": …}` of the step's url as saved, which the app knows, so the headers are worth nothing at another
   * of its URLs (or as a signed POST of another body). `standardwebhooks` and `svix` verify it as they are. The
   * id is new for each connection, so an app may refuse a repeat. Throws when the secret cannot be opened: an
   * unsigned stream would be refused by an app that checks.
   */
  async streamHeaders(organizationId: string, url: string): Promise<Record<string, string>> {
    let secrets: string[];
    try {
      secrets = await this.deps.secrets.signing(organizationId);
    } catch {
      throw new Error('the signing secret cannot be opened; rotate it');
    }
    const now = this.deps.clock.now();
    return signedHeaders(newId('msg', now.getTime()), now, streamSignedBody(url), secrets);
  }

  private async post(
    organizationId: string,
    url: string,
    request: FlowAppRequest,
  ): Promise<{ kind: 'sent'; result: PostResult } | { kind: 'refused'; reason: string }> {
    let target: string;
    try {
      target = await this.deps.checkUrl(url);
    } catch (error) {
      if (error instanceof ApiError)
        return { kind: 'refused', reason: `the URL is refused: ${error.message}` };
      throw error;
    }
    const now = this.deps.clock.now();
    const body = JSON.stringify(request);
    let secrets: string[];
    try {
      secrets = await this.deps.secrets.signing(organizationId);
    } catch {
      // Its key is gone (an ENCRYPTION_KEY dropped): an unsigned request is worthless to the app.
      return { kind: 'refused', reason: 'the signing secret cannot be opened; rotate it' };
    }
    const headers = signedHeaders(newId('msg', now.getTime()), now, body, secrets);
    return { kind: 'sent', result: await this.deps.transport.post(target, headers, body) };
  }
}

/**
 * The check of a number's webhook route (numbers' useWebhookRoutes): the URL by the webhooks module's rules
 * (its 400, named as the route's field), the fallback flow one of the organization's.
 */
export function webhookRouteCheck(deps: {
  checkUrl: (url: string) => Promise<string>;
  flowExists: (organizationId: string, flowId: string) => Promise<boolean>;
}) {
  return async (
    organizationId: string,
    route: { target: string; fallbackFlowId?: string },
  ): Promise<NonNullable<PhoneNumber['voiceRoute']>> => {
    let target: string;
    try {
      target = await deps.checkUrl(route.target);
    } catch (error) {
      if (error instanceof ApiError) throw ApiError.badRequest(`voiceRoute.target: ${error.message}`);
      throw error;
    }
    const fallbackFlowId = route.fallbackFlowId;
    if (fallbackFlowId !== undefined && !(await deps.flowExists(organizationId, fallbackFlowId))) {
      throw ApiError.badRequest(
        `voiceRoute.fallbackFlowId: no call flow ${fallbackFlowId} in this organization`,
      );
    }
    return { type: 'webhook', target, ...(fallbackFlowId ? { fallbackFlowId } : {}) };
  };
}

/** The URL as logs show it: no query (it may carry a token) and no fragment. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
