// What of a call flow the runner (voice/flow-runner.ts) can carry out today. A flow is checked against it when
// it is saved, so that a step the runner cannot run is refused at once with what is missing, rather than
// failing its callers later. Keep it in step with flow-runner.ts: a step allowed here must run there.
import type { FlowStep } from './steps.ts';

/**
 * What of a step this runner cannot carry out yet, in words for a 400 when the flow is saved (so a flow is
 * refused at once rather than failing its callers later), or undefined when it can run the step as written.
 */
export function unavailableFeature(step: FlowStep): string | undefined {
  // Every step type runs; a transfer rings an extension or a phone number (call-transfer.ts), not yet a SIP URI
  // or a ring group.
  if (step.type === 'transfer' && step.target.type !== 'extension' && step.target.type !== 'number')
    return `transfer targets of type "${step.target.type}" are not available yet (extension and number are)`;
  return undefined;
}
