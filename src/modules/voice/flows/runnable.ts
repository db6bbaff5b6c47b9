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
    case 'play':
    case 'pause':
    case 'hours':
    case 'voicemail':
    case 'agent':
    case 'record':
    case 'dial':
    case 'hangup':
      return undefined;
    case 'gather':
      if (step.actionUrl) return 'gather actionUrl is not available yet';
      return undefined;
    case 'redirect':
      return step.url ? 'redirect to a url is not available yet (flowId is)' : undefined;
    default:
      return `${step.type} steps are not available yet`;
  }
}
