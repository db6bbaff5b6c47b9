// Answering machine detection on an agent's outbound calls (issue 34; `machineDetection` on the agent, off by
// default): once the callee answers, before the agent says anything, the line listens to who answered
// (AgentLine.answeredBy: a person's short greeting, or a machine's long one; voice/sip/machine-detector.ts over
// SIP). The outcome is kept on the agent call as `answeredBy`. A person, or a callee the line cannot tell, gets
// the normal conversation. A machine gets, by the agent's `action`: `hang_up`, the call ended at once;
// `leave_message`, the end of the greeting waited for (its beep, or its last words then quiet) and the message
// (`machineDetection.message`, else the agent's firstMessage) spoken, then the call ended. Both end
// `ended_by_agent`.
import type { AgentEnd, AgentLine, AnsweredBy, CallRow } from '../voice/index.ts';
import type { AgentRow } from './agent-store.ts';

/** Screens an answered outbound call; the call's end when a machine answered, else undefined (talk on). */
export async function screenForMachine(
  call: Pick<CallRow, 'direction'>,
  agent: Pick<AgentRow, 'machine_detection' | 'first_message'>,
  line: AgentLine,
  on: {
    speak: (text: string) => Promise<void>;
    answeredBy: (who: AnsweredBy) => Promise<void>;
    now: () => Date;
  },
): Promise<AgentEnd | undefined> {
  const settings = agent.machine_detection;
  if (call.direction === 'inbound' || !settings || !line.answeredBy) return undefined;
  const who = await line.answeredBy();
  await on.answeredBy(who);
  if (who !== 'machine') return undefined;
  if (settings.action === 'leave_message') {
    await line.greetingOver?.();
    await on.speak(settings.message ?? agent.first_message);
  }
  return { kind: 'ended_by_agent', at: on.now() };
}
