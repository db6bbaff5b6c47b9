// What of a call flow the runner (voice/flow-runner.ts) can carry out today. A flow is checked against it when
// it is saved, so that a step the runner cannot run is refused at once with what is missing, rather than
// failing its callers later. Keep it in step with flow-runner.ts: a step allowed here must run there.
import type { FlowStep } from './steps.ts';

/**
 * What of a step this runner cannot carry out yet, in words for a 400 when the flow is saved (so a flow is
 * refused at once rather than failing its callers later), or undefined when it can run the step as written.
 */
export function unavailableFeature(step: FlowStep): string | undefined {
  switch (step.type) {
    case 'say':
    case 'pause':
    case 'hours':
    case 'voicemail':
    case 'agent':
    case 'queue':
    case 'hangup':
    case 'stream':
      return undefined;
    case 'gather':
      if (step.input.includes('speech')) return 'gather input "speech" is not available yet (only "dtmf")';
      if (step.prompt && step.prompt.type !== 'say')
        return 'a gather prompt other than say is not available yet';
      return undefined;
    case 'dial': {
      const other = step.targets.find((target) => target.type === 'sip');
      if (other) return `dial targets of type "${other.type}" are not available yet`;
      const together = (step.strategy ?? 'simultaneous') === 'simultaneous' && step.targets.length > 1;
      if (together && step.targets.some((target) => target.type !== 'extension'))
        return 'ringing phone numbers or ring groups at once with other targets is not available yet (use strategy "sequential", or one ring group)';
      if (step.callerId) return 'dial callerId is not available yet';
      return undefined;
    }
    case 'transfer':
      if (step.target.type !== 'extension' && step.target.type !== 'number')
        return `transfer targets of type "${step.target.type}" are not available yet (extension and number are)`;
      return undefined;
    case 'redirect':
      return undefined;
    default:
      return `${step.type} steps are not available yet`;
  }
}
