// Call flows (CONTRACT section 13): the public face of src/modules/voice/flows/. The step shapes and types
// (steps.ts) are what the flow runner runs; the service stores flows and their versions and resolves the
// steps a call runs (`resolve`); the voice module builds it and mounts the routes.
export { callFlowRoutes } from './routes.ts';
export type { PublicCallFlow } from './schemas.ts';
export { CallFlowService, type ResolvedFlow } from './service.ts';
export { sipExtension } from './sip-target.ts';
export { checkFlowSteps, type FlowReference, type FlowStepProblem } from './step-check.ts';
export {
  type AgentStep,
  DIAL_TARGET_TYPES,
  type DialStep,
  type DialTarget,
  FLOW_STEP_TYPES,
  type FlowStep,
  type FlowStepType,
  GATHER_PROMPT_TYPES,
  type GatherPromptStep,
  type GatherStep,
  type HangupStep,
  type HoursStep,
  MAX_FLOW_DEPTH,
  MAX_FLOW_STEPS,
  MAX_GATHER_BRANCHES,
  MAX_SAY_TEXT,
  MAX_URL_LENGTH,
  type OpenHours,
  type PauseStep,
  type PlayStep,
  type QueueStep,
  type RecordStep,
  type RedirectStep,
  type SayStep,
  type StreamStep,
  type TransferStep,
  type VoicemailStep,
  WEEKDAYS,
  type Weekday,
} from './steps.ts';
