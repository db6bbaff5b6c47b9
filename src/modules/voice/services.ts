// What the voice module gives its routes and the other modules (its index builds them). A file of its own so
// the routes can name it without importing the index that imports them.
import type { CallService } from './calls.ts';
import type { ExtensionService } from './extensions.ts';
import type { FlowAppSecrets } from './flow-app-secrets.ts';
import type { CallFlowService } from './flows/index.ts';
import type { CallMedia } from './media.ts';
import type { PhoneCredentialService } from './phone-credentials.ts';
import type { QueueRuntime, QueueService } from './queues/index.ts';
import type { RingGroupService } from './ring-groups/index.ts';
import type { SimulatedPbx } from './simulated-pbx.ts';
import type { SipListener } from './sip/listener.ts';
import type { Registrar } from './sip/registrar.ts';

export interface VoiceServices {
  extensions: ExtensionService;
  calls: CallService;
  media: CallMedia;
  /** Call flows and their versions; the flow runner resolves a call's steps from it. */
  flows: CallFlowService;
  /** The secret requests to the customer's apps are signed with (GET /call-flows/signing-secret). */
  flowAppSecrets: FlowAppSecrets;
  /** Ring groups: a call flow's dial step asks it who rings (attempts) and tells it who answered. */
  ringGroups: RingGroupService;
  queues: QueueService;
  /** Callers waiting in queues, and the dispatcher offering them to members (a flow's queue step). */
  queueRuntime: QueueRuntime;
  /** The PBX calls run on; its test controls drive it step by step under APP_ENV=test. */
  simulatedPbx: SimulatedPbx;
  /** The SIP listener (the registrar today); started by the server when SIP_PORT is set. */
  sipListener: SipListener;
  registrar: Registrar;
  /** The console's phone: short-lived SIP credentials of a member's own extension, tied to their session. */
  phoneCredentials: PhoneCredentialService;
}
