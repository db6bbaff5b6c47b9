// Checks a flow's steps before it is stored: each step against its type's shape (steps.ts), the rules a shape
// cannot say (one of two fields, a URL's scheme, a real time zone and date), how deep lists nest and how many
// steps there are in all. A refusal names the path of the first bad field, in the dotted form the API's other
// validation messages use (`steps.2.branches.1.0.text`), so a client can point at it. It also lists the ids
// the steps name, which the service then looks up in the organization.
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { canonicalTimeZone } from '../../../platform/time-zones.ts';
import { sipExtension } from './sip-target.ts';
import {
  type DialTarget,
  FLOW_STEP_SCHEMAS,
  FLOW_STEP_TYPES,
  type FlowStep,
  type FlowStepType,
  GATHER_PROMPT_TYPES,
  MAX_FLOW_DEPTH,
  MAX_FLOW_STEPS,
} from './steps.ts';

export interface FlowStepProblem {
  /** Where, e.g. `steps.2.branches.1.0.text`. */
  path: string;
  /** What is wrong, after the path: `must not have more than 4000 characters`. */
  message: string;
}

/**
 * An id a step names, or the URL of an app a step POSTs to (`url`: a gather's actionUrl, a redirect's url);
 * whether it exists in the organization, or the URL may be reached, is the service's question.
 */
export interface FlowReference {
  path: string;
  /** `audio`: a recording; `number`: one of the organization's phone numbers; `sip`: a URI (sip-target.ts). */
  kind: 'extension' | 'agent' | 'flow' | 'queue' | 'ring_group' | 'audio' | 'url' | 'number' | 'sip';
  id: string;
}

const checkers = new Map(
  Object.entries(FLOW_STEP_SCHEMAS).map(([type, schema]: [string, TSchema]) => [type, Compile(schema)]),
);

const E164 = /^\+[1-9][0-9]{6,14}$/;
const DIGIT_ANSWER = /^[0-9*#]{1,32}$/;
const MAX_PHRASE = 100;
/** A path segment written bare when it is a plain word or number, quoted (JSON) otherwise. */
const BARE_KEY = /^[A-Za-z0-9_*#]+$/;

class StepProblem extends Error {
  constructor(readonly problem: FlowStepProblem) {
    super(`${problem.path} ${problem.message}`);
  }
}

function refuse(path: string, message: string): never {
  throw new StepProblem({ path, message });
}

function keyPath(path: string, key: string): string {
  return BARE_KEY.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function checkUrl(path: string, value: string | undefined, schemes: string[]): void {
  if (value === undefined) return;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    refuse(path, 'must be an absolute URL');
  }
  if (!schemes.includes(url.protocol)) {
    refuse(path, `must be a ${schemes.map((scheme) => scheme.slice(0, -1)).join(' or ')} URL`);
  }
}

/** A real calendar day: `2026-02-30` has the shape but is no day. */
function isDate(text: string): boolean {
  const day = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text;
}

/** A stream step's url: where it may go is checked by the service (in production, on what the name resolves to). */
export interface FlowStreamUrl {
  path: string;
  url: string;
}

/** Walks one flow's steps, counting them and collecting the ids they name and the stream urls. */
class Walk {
  count = 0;
  readonly references: FlowReference[] = [];
  readonly streamUrls: FlowStreamUrl[] = [];

  list(value: unknown, path: string, depth: number): void {
    if (!Array.isArray(value)) refuse(path, 'must be a list of steps');
    if (depth > MAX_FLOW_DEPTH) refuse(path, `nests steps deeper than ${MAX_FLOW_DEPTH} levels`);
    for (const [index, item] of value.entries()) this.step(item, `${path}.${index}`, depth);
  }

  step(value: unknown, path: string, depth: number, only: readonly FlowStepType[] = FLOW_STEP_TYPES): void {
    this.count += 1;
    if (this.count > MAX_FLOW_STEPS)
      refuse(path, `is one step too many: a flow holds at most ${MAX_FLOW_STEPS}`);
    if (!value || typeof value !== 'object' || Array.isArray(value)) refuse(path, 'must be a step object');
    const type = (value as { type?: unknown }).type;
    if (typeof type !== 'string' || !(only as readonly string[]).includes(type)) {
      refuse(`${path}.type`, `must be one of ${only.join(', ')}`);
    }
    this.shape(value, path, type);
    this.rules(value as FlowStep, path, depth);
  }

  private shape(value: object, path: string, type: string): void {
    const errors = checkers.get(type)!.Errors(value);
    // An unknown field first: it is most often a misspelt one, which also makes the real one look missing.
    // `schema is false` repeats what additionalProperties says better.
    const first =
      errors.find((error) => error.keyword === 'additionalProperties') ??
      errors.find((error) => error.keyword !== 'boolean');
    if (!first) return;
    // The JSON pointer's segments, unescaped (RFC 6901), each written as the other paths are.
    const at = first.instancePath
      .split('/')
      .slice(1)
      .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce(keyPath, path);
    const params = first.params as { additionalProperties?: string[]; requiredProperties?: string[] };
    if (first.keyword === 'additionalProperties' && params.additionalProperties?.[0]) {
      const where = first.instancePath === '' ? `the ${type} step` : 'this object';
      refuse(keyPath(at, params.additionalProperties[0]), `is not a field of ${where}`);
    }
    if (first.keyword === 'required' && params.requiredProperties?.[0]) {
      refuse(keyPath(at, params.requiredProperties[0]), 'is required');
    }
    refuse(at, first.message);
  }

  private rules(step: FlowStep, path: string, depth: number): void {
    switch (step.type) {
      case 'play':
        if ((step.audioUrl === undefined) === (step.audioId === undefined)) {
          refuse(path, 'must have exactly one of audioUrl and audioId');
        }
        checkUrl(`${path}.audioUrl`, step.audioUrl, ['https:', 'http:']);
        if (step.audioId) this.references.push({ path: `${path}.audioId`, kind: 'audio', id: step.audioId });
        return;
      case 'gather': {
        if (step.prompt !== undefined) this.step(step.prompt, `${path}.prompt`, depth, GATHER_PROMPT_TYPES);
        const speech = step.input.includes('speech');
        for (const [answer, steps] of Object.entries(step.branches ?? {})) {
          const at = keyPath(`${path}.branches`, answer);
          if (!DIGIT_ANSWER.test(answer)) {
            if (!speech) refuse(at, 'is not an answer of keys (1 to 32 of 0-9, * and #)');
            if (answer.trim().length === 0 || answer.length > MAX_PHRASE) {
              refuse(at, `must be a phrase of 1 to ${MAX_PHRASE} characters`);
            }
          }
          this.list(steps, at, depth + 1);
        }
        if (step.otherwise !== undefined) this.list(step.otherwise, `${path}.otherwise`, depth + 1);
        checkUrl(`${path}.actionUrl`, step.actionUrl, ['https:', 'http:']);
        if (step.actionUrl)
          this.references.push({ path: `${path}.actionUrl`, kind: 'url', id: step.actionUrl });
        return;
      }
      case 'dial':
        for (const [index, target] of step.targets.entries()) this.target(target, `${path}.targets.${index}`);
        if (step.callerId !== undefined) {
          if (!E164.test(step.callerId))
            refuse(`${path}.callerId`, 'must be a phone number in E.164 form (+14155550100)');
          this.references.push({ path: `${path}.callerId`, kind: 'number', id: step.callerId });
        }
        if (step.onNoAnswer !== undefined) this.list(step.onNoAnswer, `${path}.onNoAnswer`, depth + 1);
        if (step.onBusy !== undefined) this.list(step.onBusy, `${path}.onBusy`, depth + 1);
        return;
      case 'transfer':
        this.target(step.target, `${path}.target`);
        return;
      case 'queue':
        this.references.push({ path: `${path}.queueId`, kind: 'queue', id: step.queueId });
        return;
      case 'voicemail':
        this.references.push({ path: `${path}.extensionId`, kind: 'extension', id: step.extensionId });
        return;
      case 'agent':
        this.references.push({ path: `${path}.agentId`, kind: 'agent', id: step.agentId });
        return;
      case 'stream': {
        checkUrl(`${path}.url`, step.url, ['wss:', 'ws:']);
        const url = new URL(step.url);
        if (url.username || url.password) refuse(`${path}.url`, 'must not contain a user name or password');
        this.streamUrls.push({ path: `${path}.url`, url: step.url });
        return;
      }
      case 'hours':
        if (canonicalTimeZone(step.timezone) === undefined) {
          refuse(`${path}.timezone`, 'is not an IANA time zone name (such as America/New_York)');
        }
        for (const [index, window] of step.open.entries()) {
          if (window.from === window.to) refuse(`${path}.open.${index}.to`, 'must differ from `from`');
        }
        for (const [index, day] of (step.holidays ?? []).entries()) {
          if (!isDate(day)) refuse(`${path}.holidays.${index}`, 'is not a calendar day (YYYY-MM-DD)');
        }
        this.list(step.whenOpen, `${path}.whenOpen`, depth + 1);
        this.list(step.whenClosed, `${path}.whenClosed`, depth + 1);
        return;
      case 'redirect':
        if ((step.flowId === undefined) === (step.url === undefined)) {
          refuse(path, 'must have exactly one of flowId and url');
        }
        checkUrl(`${path}.url`, step.url, ['https:', 'http:']);
        if (step.url) this.references.push({ path: `${path}.url`, kind: 'url', id: step.url });
        if (step.flowId) this.references.push({ path: `${path}.flowId`, kind: 'flow', id: step.flowId });
        return;
      default:
        return;
    }
  }

  private target(target: DialTarget, path: string): void {
    const at = `${path}.target`;
    switch (target.type) {
      case 'number':
        if (!E164.test(target.target)) refuse(at, 'must be a phone number in E.164 form (+14155550100)');
        return;
      case 'sip':
        checkUrl(at, target.target, ['sip:', 'sips:']);
        if (sipExtension(target.target) === undefined) {
          refuse(at, "must be sip:<extension>@<this platform's SIP domain>: a phone registered here");
        }
        this.references.push({ path: at, kind: 'sip', id: target.target });
        return;
      case 'extension':
      case 'ring_group': {
        if (!/^[a-z]+_[a-z0-9]+$/.test(target.target) || target.target.length > 100) {
          refuse(at, `must be ${target.type === 'extension' ? 'an extension' : 'a ring group'} id`);
        }
        this.references.push({ path: at, kind: target.type, id: target.target });
        return;
      }
    }
  }
}

/**
 * The steps, typed, and the ids they name; or the first problem found, with its path. `path` is where the
 * list sits in the request (`steps`).
 */
export function checkFlowSteps(
  steps: unknown,
  path = 'steps',
):
  | { steps: FlowStep[]; references: FlowReference[]; streamUrls: FlowStreamUrl[] }
  | { problem: FlowStepProblem } {
  const walk = new Walk();
  try {
    walk.list(steps, path, 1);
  } catch (error) {
    if (error instanceof StepProblem) return { problem: error.problem };
    throw error;
  }
  return { steps: steps as FlowStep[], references: walk.references, streamUrls: walk.streamUrls };
}
