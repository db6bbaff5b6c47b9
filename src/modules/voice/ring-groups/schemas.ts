// Request and response shapes of ring groups (CONTRACT section 13); TypeScript types are Static<> of these.
// The member list's rules are shared with queues (../queues/schemas.ts), which ring their members the same way.
import { type Static, Type } from 'typebox';
import { RING_STRATEGIES, type RingStrategy } from './ring-order.ts';

/** A group rings at most this many phones: more is a call centre, which is what queues are for. */
export const MAX_MEMBERS = 50;
export const MIN_RING_SECONDS = 5;
export const MAX_RING_SECONDS = 300;
export const DEFAULT_RING_SECONDS = 20;

export const ExtensionIds = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: MAX_MEMBERS,
  uniqueItems: true,
  description: `1 to ${MAX_MEMBERS} of the organization's extension ids (\`ext_…\`), each once, in ring order`,
});

const STRATEGIES_MEANING =
  'simultaneous: all ring at once; sequential: one at a time in list order; round_robin: one at a time, ' +
  'starting after the member who answered last; longest_idle: one at a time, the one whose last call ended ' +
  'longest ago first';

/** The strategy field; `defaultStrategy` is what a create without one gets. */
export const strategyField = (defaultStrategy?: RingStrategy) =>
  Type.Enum([...RING_STRATEGIES], {
    description: defaultStrategy ? `${STRATEGIES_MEANING} (default ${defaultStrategy})` : STRATEGIES_MEANING,
  });

export const RingGroupCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    extensionIds: ExtensionIds,
    strategy: Type.Optional(strategyField('simultaneous')),
    ringSeconds: Type.Optional(
      Type.Integer({
        minimum: MIN_RING_SECONDS,
        maximum: MAX_RING_SECONDS,
        description: `How long each attempt rings, ${MIN_RING_SECONDS} to ${MAX_RING_SECONDS} seconds (default ${DEFAULT_RING_SECONDS}): all members together for simultaneous, each member for the others`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type RingGroupCreateInput = Static<typeof RingGroupCreate>;

export const RingGroupPatch = Type.Partial(RingGroupCreate, {
  additionalProperties: false,
  minProperties: 1,
});
export type RingGroupPatchInput = Static<typeof RingGroupPatch>;

export const RingGroupSchema = Type.Object({
  id: Type.String({ description: 'Ring group id (`rg_…`)' }),
  name: Type.String(),
  extensionIds: Type.Array(Type.String(), {
    description: 'Its members in ring order; a deleted extension leaves every group it was in',
  }),
  strategy: strategyField(),
  ringSeconds: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicRingGroup = Static<typeof RingGroupSchema>;
