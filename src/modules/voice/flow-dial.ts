// A call flow's `dial` step (CONTRACT section 13): rings its targets (extensions, ring groups, phone numbers,
// phones of the organization by SIP URI), at once or one after the other; the first to answer talks with the
// caller until one hangs up. A phone number is shown the step's `callerId` (one of the organization's
// numbers, checked when the flow was saved) instead of the caller's number.

import { extensionParty, extensionsParty } from './extension-store.ts';
import type { Ended, FlowControl, Run } from './flow-control.ts';
import { type FlowStep, sipExtension } from './flows/index.ts';
import type { Party, RingResult } from './pbx.ts';

/** Seconds a dialled phone number rings when the step does not say. */
const DIAL_TIMEOUT_SECONDS = 30;

type DialStep = Extract<FlowStep, { type: 'dial' }>;

/** A dial target as the PBX rings it, and how long it rings when the step does not say. */
interface Dialled {
  party: Party;
  ringSeconds: number;
  /** The ring group this attempt is a turn of (its round robin moves on when a member answers). */
  ringGroupId?: string;
}

/**
 * Rings the targets, all at once (the default, as a phone system's "ring all") or one after the other, each
 * for the step's timeout; the first to answer talks with the caller until one hangs up. Unanswered, the
 * step's onBusy or onNoAnswer steps run, then the flow goes on after it.
 */
export async function dial(flow: FlowControl, run: Run, step: DialStep): Promise<Ended> {
  const attempts: Dialled[] = [];
  for (const target of step.targets) attempts.push(...(await attemptsOf(flow, run, target, step)));
  if (attempts.length === 0) return flow.finishWith(run, 'failed', 'no_route');
  await flow.release(run);
  let result: RingResult | undefined;
  let answering: Dialled | undefined;
  if ((step.strategy ?? 'simultaneous') === 'simultaneous' && step.targets.length > 1) {
    // Several targets at once: one ring of every phone they name (a ring group's members all at once, whatever
    // its own strategy; an extension named twice rings once), numbers through the trunk beside them.
    const seconds = step.timeoutSeconds ?? Math.max(...attempts.map((each) => each.ringSeconds));
    result = await run.live.ring(together(attempts.map((each) => each.party)), seconds);
  } else {
    for (const attempt of attempts) {
      answering = attempt;
      result = await run.live.ring(attempt.party, step.timeoutSeconds ?? attempt.ringSeconds);
      if (result.outcome === 'answered' || result.outcome === 'canceled') break;
    }
  }
  if (!result) return flow.finishWith(run, 'failed', 'no_route');
  if (result.outcome === 'canceled') return flow.callerGone(run, { at: result.at, cause: result.cause });
  if (result.outcome === 'answered') {
    if (result.answeredBy && !run.live.row.extension_id)
      await run.live.note({ extension_id: result.answeredBy });
    if (answering?.ringGroupId && result.answeredBy) {
      await flow.deps.ringGroups()?.answeredBy(answering.ringGroupId, result.answeredBy);
    }
    await run.live.answered(result.at);
    const record = Boolean(step.record) || run.live.row.record;
    const talk = await run.live.engine.converse(run.live.leg, { record });
    await run.live.finish(
      { status: 'completed', at: talk.at, cause: talk.cause },
      { recording: talk.recording },
    );
    return 'over';
  }
  run.lastRing = result;
  const next = result.outcome === 'busy' ? (step.onBusy ?? step.onNoAnswer) : step.onNoAnswer;
  return next ? flow.steps(run, next) : 'continue';
}

/**
 * What a dial target rings, attempt by attempt: an extension or a number once; a ring group as its strategy
 * says (all members at once, or one after another: ring-groups/ring-order.ts). A target that is gone (an
 * extension or group deleted since the flow was saved) rings nothing.
 */
async function attemptsOf(
  flow: FlowControl,
  run: Run,
  target: DialStep['targets'][number],
  step: DialStep,
): Promise<Dialled[]> {
  const { db, extensions, ringGroups } = flow.deps;
  const organizationId = run.live.row.organization_id;
  if (target.type === 'number') {
    const callerId = step.callerId ? { callerId: step.callerId } : {};
    return [
      { party: { kind: 'phone', number: target.target, ...callerId }, ringSeconds: DIAL_TIMEOUT_SECONDS },
    ];
  }
  if (target.type === 'extension' || target.type === 'sip') {
    // A SIP URI names an extension by its number (its host was checked to be ours when the flow was saved).
    const number = target.type === 'sip' ? sipExtension(target.target) : undefined;
    const extension =
      target.type === 'sip'
        ? number === undefined
          ? undefined
          : await extensions.store.findByNumber(db, organizationId, number)
        : await extensions.store.find(db, organizationId, target.target);
    if (!extension) return [];
    // The call is the first extension it reaches for, as a call routed to an extension is.
    if (!run.live.row.extension_id) await run.live.note({ extension_id: extension.id });
    return [{ party: extensionParty(extension), ringSeconds: extension.ring_seconds }];
  }
  if (target.type === 'ring_group') {
    const plan = await ringGroups()?.attempts(organizationId, target.target);
    if (!plan) return [];
    const attempts: Dialled[] = [];
    for (const { extensionIds } of plan.attempts) {
      const members = await extensions.store.findMany(db, organizationId, extensionIds);
      if (members.length === 0) continue;
      attempts.push({
        party: extensionsParty(members),
        ringSeconds: plan.ringSeconds,
        ringGroupId: target.target,
      });
    }
    return attempts;
  }
  return [];
}

/** Parties as one ring of all of them: their extensions once each, and their phone numbers. */
function together(parties: Party[]): Extract<Party, { kind: 'extensions' }> {
  const members = new Map<string, { extensionId: string; extension: string }>();
  const phones: { number: string; callerId?: string }[] = [];
  for (const party of parties) {
    if (party.kind === 'phone')
      phones.push({ number: party.number, ...(party.callerId ? { callerId: party.callerId } : {}) });
    else
      for (const member of party.kind === 'extension' ? [party] : party.members) {
        members.set(member.extensionId, { extensionId: member.extensionId, extension: member.extension });
      }
  }
  return { kind: 'extensions', members: [...members.values()], ...(phones.length > 0 ? { phones } : {}) };
}
