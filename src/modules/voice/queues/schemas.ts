// Request and response shapes of call queues (CONTRACT section 13); TypeScript types are Static<> of these. The
// member list and the strategy are the ring groups' (a queue offers its waiting callers to its members the
// same ways a group rings them).
import { type Static, Type } from 'typebox';
import { ExtensionIds, strategyField } from '../ring-groups/index.ts';
import { MEMBER_STATES } from './member-states.ts';

export const MIN_WAIT_SECONDS = 10;
/** Two hours: longer than anyone should hold, short enough that a forgotten call does not sit for a day. */
export const MAX_WAIT_SECONDS = 7200;
export const DEFAULT_MAX_WAIT_SECONDS = 600;
export const MAX_WRAP_UP_SECONDS = 600;
/** Steps in onTimeout, nested ones included: the same bound as a whole call flow's. */
export const MAX_TIMEOUT_STEPS = 500;

const TimeoutSteps = Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), {
  maxItems: MAX_TIMEOUT_STEPS,
  description:
    'Call-flow steps run for a caller who waited maxWaitSeconds, then the flow goes on after its queue step ' +
    '(default none; a flow with nothing after the step hangs up); each is checked as a step of a call flow, ' +
    'and a refusal names the path of the bad field',
});

export const QueueCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    extensionIds: ExtensionIds,
    strategy: Type.Optional(strategyField('longest_idle')),
    holdAudioId: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], {
        description:
          'A recording (`rec_…`) a waiting caller hears, looped (null or absent: "Please hold." spoken once, then silence)',
      }),
    ),
    announcePosition: Type.Optional(
      Type.Boolean({ description: 'Tell a waiting caller their place in line (default false)' }),
    ),
    maxWaitSeconds: Type.Optional(
      Type.Integer({
        minimum: MIN_WAIT_SECONDS,
        maximum: MAX_WAIT_SECONDS,
        description: `How long a caller may wait, ${MIN_WAIT_SECONDS} to ${MAX_WAIT_SECONDS} seconds (default ${DEFAULT_MAX_WAIT_SECONDS}); then onTimeout runs`,
      }),
    ),
    onTimeout: Type.Optional(TimeoutSteps),
    wrapUpSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_WRAP_UP_SECONDS,
        description: `Seconds a member is left alone after a queue call, 0 to ${MAX_WRAP_UP_SECONDS} (default 0)`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type QueueCreateInput = Static<typeof QueueCreate>;

export const QueuePatch = Type.Partial(QueueCreate, { additionalProperties: false, minProperties: 1 });
export type QueuePatchInput = Static<typeof QueuePatch>;

export const QueueSchema = Type.Object({
  id: Type.String({ description: 'Queue id (`q_…`)' }),
  name: Type.String(),
  extensionIds: Type.Array(Type.String(), {
    description: 'Its members in order; a deleted extension leaves every queue it was in',
  }),
  strategy: strategyField(),
  holdAudioId: Type.Union([Type.String(), Type.Null()]),
  announcePosition: Type.Boolean(),
  maxWaitSeconds: Type.Integer(),
  onTimeout: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true })),
  wrapUpSeconds: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type PublicQueue = Static<typeof QueueSchema>;

/** GET /queues/{id}/live: who waits, in order, and what each member is doing now. */
export const QueueLiveSchema = Type.Object({
  outcomes: Type.Object(
    {
      since: Type.String({
        format: 'date-time',
        description: 'Counted from (the `since` asked, else 24 hours ago)',
      }),
      answered: Type.Integer({ description: 'Callers a member answered' }),
      abandoned: Type.Integer({ description: 'Callers who hung up while waiting' }),
      timedOut: Type.Integer({
        description: 'Callers whose longest wait passed (the queue’s onTimeout ran)',
      }),
    },
    { description: 'How the waits that ended since `since` ended: what a wallboard shows for the day' },
  ),
  waiting: Type.Array(
    Type.Object({
      callId: Type.String({ description: 'The waiting call' }),
      from: Type.String({ description: "The caller's number" }),
      since: Type.String({ format: 'date-time', description: 'When they joined the queue' }),
      position: Type.Integer({
        description: 'Their place in line, 1 first (a caller whose members ring counts)',
      }),
    }),
    { description: 'Callers in the queue, first come first served' },
  ),
  members: Type.Array(
    Type.Object({
      extensionId: Type.String(),
      state: Type.Enum([...MEMBER_STATES], {
        description:
          'available; ringing (offered a caller); on_call; wrap_up (wrapUpSeconds after a queue call); ' +
          'offline (on a server running SIP: no registered phone)',
      }),
    }),
    { description: "The queue's members, in its order" },
  ),
});
export type QueueLive = Static<typeof QueueLiveSchema>;
