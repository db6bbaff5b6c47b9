// Checks a flow as it is typed, with the rules of docs/voice.md "Steps" that a person can be told before saving:
// what is required, numbers in their ranges, HH:MM, the shape of URLs, phone numbers and dates. What only the
// server knows (a time zone of its tz database, whether an id is still the organization's, what its runner can
// run) it says on save, and the editor shows that answer at the same field (editor.tsx).
import { type Branch, NESTED_LISTS, type OpenRange, SELF_FLOW, type Step, type Target } from './model.ts';

/** Problems by path (`steps.0.whenOpen.1.text`), the message after the field's label. */
export type Problems = Map<string, string>;

const E164 = /^\+[1-9][0-9]{6,14}$/;
const DIGITS = /^[0-9*#]{1,32}$/;
const KEY = /^[0-9*#]$/;
const CLOCK = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
const CLOCK_END = /^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$/;
const VOICE = /^[A-Za-z0-9][A-Za-z0-9_+.-]*$/;
const LANGUAGE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
const ZONE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

const isBlank = (value: unknown) => value === undefined || value === null || value === '';

/** Why `value` is not an absolute URL of one of `schemes`, or undefined when it is. */
export function urlProblem(value: string, schemes: string[]): string | undefined {
  try {
    const url = new URL(value);
    if (!schemes.includes(url.protocol)) {
      return `must be a ${schemes.map((scheme) => scheme.slice(0, -1)).join(' or ')} URL`;
    }
    if ((url.protocol.startsWith('http') || url.protocol.startsWith('ws')) && !url.hostname) {
      return 'must name a host';
    }
    return undefined;
  } catch {
    return `must be an absolute URL (${schemes[0]}//…)`;
  }
}

export function isCalendarDay(text: string): boolean {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text)) return false;
  const day = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text;
}

class Checker {
  readonly problems: Problems = new Map();

  private add(path: string, message: string): void {
    if (!this.problems.has(path)) this.problems.set(path, message);
  }

  private required(path: string, value: unknown, message = 'is required'): boolean {
    if (isBlank(value)) {
      this.add(path, message);
      return false;
    }
    return true;
  }

  private integer(path: string, value: unknown, min: number, max: number, required = false): void {
    if (isBlank(value)) {
      if (required) this.add(path, 'is required');
      return;
    }
    if (typeof value !== 'number' || !Number.isInteger(value)) this.add(path, 'must be a whole number');
    else if (value < min || value > max) this.add(path, `must be from ${min} to ${max}`);
  }

  private text(path: string, value: unknown, pattern: RegExp, message: string): void {
    if (!isBlank(value) && !pattern.test(String(value))) this.add(path, message);
  }

  private url(path: string, value: unknown, schemes: string[], required = false): void {
    if (isBlank(value)) {
      if (required) this.add(path, 'is required');
      return;
    }
    const problem = urlProblem(String(value), schemes);
    if (problem) this.add(path, problem);
  }

  target(path: string, target: Target | undefined): void {
    if (!target) return;
    const at = `${path}.target`;
    if (!this.required(at, target.target, 'is required: choose or type where to ring')) return;
    if (target.type === 'number' && !E164.test(target.target)) {
      this.add(at, 'must be a phone number in E.164 form (+14155550100)');
    }
    if (target.type === 'sip') this.url(at, target.target, ['sip:', 'sips:']);
  }

  list(steps: Step[], path: string): void {
    steps.forEach((step, index) => {
      this.step(step, `${path}.${index}`);
    });
  }

  step(step: Step, path: string): void {
    const at = (field: string) => `${path}.${field}`;
    switch (step.type) {
      case 'say':
        if (this.required(at('text'), typeof step.text === 'string' ? step.text.trim() : step.text)) {
          if (String(step.text).length > 4000) this.add(at('text'), 'must be at most 4000 characters');
        }
        this.text(at('voice'), step.voice, VOICE, 'must be a voice name such as en-us or en+f3');
        this.text(at('language'), step.language, LANGUAGE, 'must be a language tag such as en-US');
        break;
      case 'play':
        if (step.audioId !== undefined) this.required(at('audioId'), step.audioId);
        else this.url(at('audioUrl'), step.audioUrl, ['https:', 'http:'], true);
        this.integer(at('loop'), step.loop, 1, 10);
        break;
      case 'gather': {
        this.integer(at('numDigits'), step.numDigits, 1, 32);
        this.integer(at('timeoutSeconds'), step.timeoutSeconds, 1, 60);
        this.text(at('finishOnKey'), step.finishOnKey, KEY, 'must be one key: 0-9, * or #');
        this.url(at('actionUrl'), step.actionUrl, ['https:', 'http:']);
        if (step.prompt) this.step(step.prompt as Step, at('prompt'));
        const speech = (step.input as string[]).includes('speech');
        const seen = new Set<string>();
        for (const branch of (step.branches as Branch[]) ?? []) {
          const where = `${at('branches')}.${branch.answer}`;
          if (branch.answer.trim() === '') this.add(`${at('branches')}.`, 'an answer is required');
          else if (seen.has(branch.answer)) this.add(where, 'is the answer of another branch too');
          else if (!speech && !DIGITS.test(branch.answer)) {
            this.add(where, 'must be keys: 1 to 32 of 0-9, * and #');
          } else if (branch.answer.length > 100) this.add(where, 'must be at most 100 characters');
          seen.add(branch.answer);
          this.list(branch.steps, where);
        }
        break;
      }
      case 'dial': {
        const targets = (step.targets as Target[]) ?? [];
        if (targets.length === 0) this.add(at('targets'), 'needs at least one target');
        targets.forEach((target, index) => {
          this.target(`${at('targets')}.${index}`, target);
        });
        this.integer(at('timeoutSeconds'), step.timeoutSeconds, 5, 600);
        this.text(at('callerId'), step.callerId, E164, 'must be a phone number in E.164 form (+14155550100)');
        break;
      }
      case 'queue':
        this.required(at('queueId'), step.queueId, 'is required: choose a queue');
        break;
      case 'voicemail':
        this.required(at('extensionId'), step.extensionId, 'is required: choose an extension');
        break;
      case 'agent':
        this.required(at('agentId'), step.agentId, 'is required: choose an agent');
        break;
      case 'record':
        this.integer(at('maxSeconds'), step.maxSeconds, 1, 3600);
        this.text(at('finishOnKey'), step.finishOnKey, KEY, 'must be one key: 0-9, * or #');
        break;
      case 'transfer':
        this.target(at('target'), step.target as Target);
        break;
      case 'stream':
        this.url(at('url'), step.url, ['wss:', 'ws:'], true);
        break;
      case 'hours': {
        if (this.required(at('timezone'), step.timezone)) {
          this.text(at('timezone'), step.timezone, ZONE, 'must be a time zone name such as America/New_York');
        }
        const open = (step.open as OpenRange[]) ?? [];
        if (open.length === 0) this.add(at('open'), 'needs at least one range of open hours');
        open.forEach((range, index) => {
          const where = `${at('open')}.${index}`;
          if (range.days.length === 0) this.add(`${where}.days`, 'needs at least one day');
          if (this.required(`${where}.from`, range.from)) {
            this.text(`${where}.from`, range.from, CLOCK, 'must be a time HH:MM (00:00 to 23:59)');
          }
          if (this.required(`${where}.to`, range.to)) {
            this.text(`${where}.to`, range.to, CLOCK_END, 'must be a time HH:MM (00:00 to 24:00)');
            if (range.from === range.to) this.add(`${where}.to`, 'must differ from the opening time');
          }
        });
        const days = new Set<string>();
        ((step.holidays as string[]) ?? []).forEach((day, index) => {
          const where = `${at('holidays')}.${index}`;
          if (!isCalendarDay(day)) this.add(where, 'must be a calendar day YYYY-MM-DD');
          else if (days.has(day)) this.add(where, 'is listed twice');
          days.add(day);
        });
        break;
      }
      case 'pause':
        this.integer(at('seconds'), step.seconds, 1, 60, true);
        break;
      case 'redirect':
        if (step.url !== undefined) this.url(at('url'), step.url, ['https:', 'http:'], true);
        else this.required(at('flowId'), step.flowId === SELF_FLOW ? 'self' : step.flowId, 'is required');
        break;
      default:
        break;
    }
    for (const field of NESTED_LISTS[step.type] ?? []) {
      const list = step[field] as Step[] | undefined;
      if (list) this.list(list, at(field));
    }
  }
}

/** Every problem of the steps, by path; `path` is where the list sits in the request (`steps`, `onTimeout`). */
export function validateSteps(steps: Step[], path = 'steps'): Problems {
  const checker = new Checker();
  checker.list(steps, path);
  return checker.problems;
}
