// Request and response shapes of call flows; TypeScript types are Static<> of these. A step is declared here
// only as an object with a `type`: its fields are checked by step-check.ts against its type's own shape
// (steps.ts), which names the path of a bad field where a union of fourteen shapes would report fourteen
// mismatches. docs/voice.md "Call flows" lists every type with its fields and limits.
import { type Static, Type } from 'typebox';
import { FLOW_STEP_TYPES, MAX_FLOW_DEPTH, MAX_FLOW_STEPS } from './steps.ts';

const StepShape = Type.Object(
  { type: Type.String({ description: `One of ${FLOW_STEP_TYPES.join(', ')}` }) },
  {
    additionalProperties: true,
    description:
      'A step: its `type` and the fields of that type (docs/voice.md "Call flows"). An invalid step is ' +
      'refused with 400 INVALID_FLOW_STEP naming the path of the bad field, e.g. `steps.2.branches.1.0.text`',
  },
);

const STEPS_LIMITS = `at most ${MAX_FLOW_STEPS} in all (nested ones included), lists nested at most ${MAX_FLOW_DEPTH} deep`;
const Steps = (description: string) =>
  Type.Array(StepShape, {
    minItems: 1,
    maxItems: MAX_FLOW_STEPS,
    description: `${description}: ${STEPS_LIMITS}`,
  });
const Name = Type.String({ minLength: 1, maxLength: 100 });

export const CallFlowCreate = Type.Object(
  { name: Name, steps: Steps('The steps a call runs, in order') },
  { additionalProperties: false },
);
export type CallFlowCreateInput = Static<typeof CallFlowCreate>;

export const CallFlowPatch = Type.Object(
  {
    name: Type.Optional(Name),
    steps: Type.Optional(Steps('New steps, which make the next version; calls under way keep theirs')),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type CallFlowPatchInput = Static<typeof CallFlowPatch>;

export const CallFlowSchema = Type.Object({
  id: Type.String({ description: 'Call flow id (`flow_…`)' }),
  name: Type.String(),
  steps: Type.Array(StepShape, { description: 'The steps of the latest version' }),
  version: Type.Integer({
    description: 'The latest version: 1 when created, one more at each change of the steps',
  }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicCallFlow = Static<typeof CallFlowSchema>;
