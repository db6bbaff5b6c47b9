// A call flow's `transfer` step (CONTRACT section 13; docs/voice.md "Transfers"): the caller is transferred,
// blind, to the step's target, which has the shape of POST /calls/{id}/transfer's: an extension, a ring group
// (its members ring at once), a phone number or an extension's sip: URI (checked when the flow is saved: the
// target's shape by flows/step-check.ts, what it names by the flow's references; call-transfer.ts says what
// each rings). The flow lets its own media go and the target rings for the caller; answered,
// the record says transferredTo and call.transferred is sent (by `flow`), and the caller talks with the target
// until one hangs up, which ends the flow. Unanswered (busy, no answer, or the target gone since the flow was
// saved), the flow goes on with its next step, as a dial without onNoAnswer does: a flow decides what follows.
import type { Ended, FlowControl, Run } from './flow-control.ts';
import type { FlowStep } from './flows/index.ts';

type TransferStep = Extract<FlowStep, { type: 'transfer' }>;

export async function transfer(flow: FlowControl, run: Run, step: TransferStep): Promise<Ended> {
  const { target } = step;
  const transferTarget = { type: target.type, target: target.target };
  const ring = await flow.deps.transfers.ringOf(run.live.row.organization_id, transferTarget);
  if (!ring) {
    flow.deps.log.warn({ callId: run.live.id, target: target.type }, 'transfer target gone');
    return 'continue';
  }
  await flow.release(run);
  const result = await run.live.ring(ring.party, ring.ringSeconds);
  if (result.outcome === 'canceled') return flow.callerGone(run, { at: result.at, cause: result.cause });
  if (result.outcome !== 'answered') {
    run.lastRing = result;
    return 'continue';
  }
  await run.live.answered(result.at);
  await run.live.transferred(transferTarget, result.at, { mode: 'blind', by: 'flow' });
  if (target.type === 'ring_group' && result.answeredBy) {
    await flow.deps.ringGroups()?.answeredBy(target.target, result.answeredBy);
  }
  const talk = await run.live.engine.converse(run.live.leg, { record: run.live.row.record });
  await run.live.finish(
    { status: 'completed', at: talk.at, cause: talk.cause },
    { recording: talk.recording },
  );
  return 'over';
}
