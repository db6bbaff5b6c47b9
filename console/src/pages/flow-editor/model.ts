// The flow editor's model of call-flow steps (CONTRACT section 13, docs/voice.md "Steps"), and the way to and
// from the API's JSON. The editor keeps the API's shape with two differences, both undone by `toApi`:
//   - every step and every gather branch carries `$key`, a stable React key, so a list can be reordered while
//     its inputs keep their focus and text;
//   - a gather's `branches` is a list of `{answer, steps}` rather than an object, so an answer can be retyped
//     without its row jumping (an object orders "1", "2" … before other keys, whatever order they were typed).
// Paths are the server's (`steps.2.branches.1.0.text`): a refusal's `data.path` names the field to mark.

export const STEP_TYPES = [
  'say',
  'play',
  'gather',
  'dial',
  'queue',
  'voicemail',
  'agent',
  'record',
  'transfer',
  'stream',
  'hours',
  'pause',
  'redirect',
  'hangup',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const STEP_LABELS: Record<StepType, string> = {
  say: 'Say',
  play: 'Play audio',
  gather: 'Menu (gather keys or speech)',
  dial: 'Dial',
  queue: 'Queue',
  voicemail: 'Voicemail',
  agent: 'AI agent',
  record: 'Record',
  transfer: 'Transfer',
  stream: 'Media stream',
  hours: 'Business hours',
  pause: 'Pause',
  redirect: 'Go to another flow',
  hangup: 'Hang up',
};

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export const TARGET_TYPES = ['extension', 'ring_group', 'number', 'sip'] as const;
export type TargetType = (typeof TARGET_TYPES)[number];

/** A step while it is edited: its type, its fields as the API names them, and its React key. */
export interface Step {
  type: StepType;
  $key: string;
  [field: string]: unknown;
}
export interface Branch {
  $key: string;
  answer: string;
  steps: Step[];
}
export interface Target {
  type: TargetType;
  target: string;
}
export interface OpenRange {
  days: string[];
  from: string;
  to: string;
}

/** Stands for "this flow" in a redirect of a flow not saved yet, whose id the server has not given. */
export const SELF_FLOW = '@self';

let counter = 0;
export function newKey(): string {
  counter += 1;
  return `k${counter}`;
}

/** The nested step lists of each type (gather's branches aside, which are lists inside rows). */
export const NESTED_LISTS: Partial<Record<StepType, string[]>> = {
  gather: ['otherwise'],
  dial: ['onNoAnswer', 'onBusy'],
  hours: ['whenOpen', 'whenClosed'],
};

/** A new step of `type` with the fields a person must see at once. */
export function newStep(type: StepType): Step {
  const $key = newKey();
  switch (type) {
    case 'say':
      return { type, $key, text: '' };
    case 'play':
      return { type, $key, audioUrl: '' };
    case 'gather':
      return {
        type,
        $key,
        input: ['dtmf'],
        numDigits: 1,
        prompt: { type: 'say', $key: newKey(), text: '' },
        branches: [] as Branch[],
        otherwise: [],
      };
    case 'dial':
      return { type, $key, targets: [{ type: 'extension', target: '' }] };
    case 'queue':
      return { type, $key, queueId: '' };
    case 'voicemail':
      return { type, $key, extensionId: '' };
    case 'agent':
      return { type, $key, agentId: '' };
    case 'transfer':
      return { type, $key, target: { type: 'extension', target: '' } };
    case 'stream':
      return { type, $key, url: '' };
    case 'hours':
      return {
        type,
        $key,
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        open: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '17:00' }],
        holidays: [],
        whenOpen: [],
        whenClosed: [],
      };
    case 'pause':
      return { type, $key, seconds: 1 };
    case 'redirect':
      return { type, $key, flowId: '' };
    default:
      return { type, $key };
  }
}

type Json = Record<string, unknown>;

function listFromApi(value: unknown): Step[] {
  return Array.isArray(value) ? value.map((item) => stepFromApi(item as Json)) : [];
}

/** A step as the API gave it, made editable. */
export function stepFromApi(raw: Json): Step {
  const step: Step = { ...raw, type: raw.type as StepType, $key: newKey() };
  for (const field of NESTED_LISTS[step.type] ?? []) {
    if (raw[field] !== undefined) step[field] = listFromApi(raw[field]);
  }
  if (step.type === 'gather') {
    if (raw.prompt && typeof raw.prompt === 'object') step.prompt = stepFromApi(raw.prompt as Json);
    step.branches = Object.entries((raw.branches as Record<string, unknown>) ?? {}).map(
      ([answer, steps]) => ({
        $key: newKey(),
        answer,
        steps: listFromApi(steps),
      }),
    );
  }
  return step;
}

export function fromApi(steps: unknown[]): Step[] {
  return listFromApi(steps);
}

/** A step as the API takes it: no React keys, branches as an object, empty optional lists left out. */
export function stepToApi(step: Step, selfId?: string): Json {
  const { $key: _key, ...fields } = step;
  const out: Json = { ...fields };
  for (const field of NESTED_LISTS[step.type] ?? []) {
    const list = step[field] as Step[] | undefined;
    const required = step.type === 'hours';
    if (list === undefined || (list.length === 0 && !required)) delete out[field];
    else out[field] = toApi(list, selfId);
  }
  if (step.type === 'gather') {
    if (step.prompt) out.prompt = stepToApi(step.prompt as Step, selfId);
    const branches = (step.branches as Branch[] | undefined) ?? [];
    if (branches.length === 0) delete out.branches;
    else out.branches = Object.fromEntries(branches.map((row) => [row.answer, toApi(row.steps, selfId)]));
  }
  if (step.type === 'hours' && Array.isArray(step.holidays) && step.holidays.length === 0)
    delete out.holidays;
  if (step.type === 'redirect' && step.flowId === SELF_FLOW && selfId) out.flowId = selfId;
  return out;
}

export function toApi(steps: Step[], selfId?: string): Json[] {
  return steps.map((step) => stepToApi(step, selfId));
}

/** Whether some redirect, however deep, names this flow before it has an id. */
export function redirectsToSelf(steps: Step[]): boolean {
  return steps.some((step) => {
    if (step.type === 'redirect' && step.flowId === SELF_FLOW) return true;
    const nested = (NESTED_LISTS[step.type] ?? []).map((field) => (step[field] as Step[] | undefined) ?? []);
    if (step.type === 'gather') nested.push(...((step.branches as Branch[]) ?? []).map((row) => row.steps));
    return nested.some(redirectsToSelf);
  });
}

/** The steps with each redirect to this unsaved flow made a hangup for the moment (indices stay the same). */
export function withoutSelf(steps: Step[]): Step[] {
  return steps.map((step) => {
    if (step.type === 'redirect' && step.flowId === SELF_FLOW) return { type: 'hangup', $key: step.$key };
    const copy: Step = { ...step };
    for (const field of NESTED_LISTS[step.type] ?? []) {
      if (Array.isArray(step[field])) copy[field] = withoutSelf(step[field] as Step[]);
    }
    if (step.type === 'gather') {
      copy.branches = ((step.branches as Branch[]) ?? []).map((row) => ({
        ...row,
        steps: withoutSelf(row.steps),
      }));
    }
    return copy;
  });
}

/**
 * One spelling of a path, whichever the server used: `steps[2].branches.1[0].text` and
 * `steps.2.branches.1.0.text` are the same field, and so are `branches["yes please"]` and `branches.yes please`.
 */
export function normalPath(path: string): string {
  return path
    .replace(/\[("(?:[^"\\]|\\.)*")\]/g, (_match, quoted: string) => {
      try {
        return `.${JSON.parse(quoted) as string}`;
      } catch {
        return `.${quoted}`;
      }
    })
    .replace(/\[(\d+)\]/g, '.$1');
}
