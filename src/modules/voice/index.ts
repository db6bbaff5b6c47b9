// The voice module: the phone system of CONTRACT section 9. Extensions (with SIP credentials), calls on a
// PBX (the simulated one: simulated-pbx.ts), each region's capacity, voicemails, recordings and their
// transcriptions (docs/voice.md).
import { defineModule } from '../../platform/module.ts';
import { identityModule } from '../identity/index.ts';
import { numbersModule } from '../numbers/index.ts';
import { organizationsModule } from '../organizations/index.ts';
import { AudioFetcher } from './audio-fetch.ts';
import { callRoutes, pbxTestControls, regionOperatorRoutes } from './call-routes.ts';
import { CallService } from './calls.ts';
import { VOICE_EVENTS } from './events.ts';
import { ExtensionService } from './extensions.ts';
import { CallFlowService, callFlowRoutes } from './flows/index.ts';
import { CallMedia, TRANSCRIBE_QUEUE } from './media.ts';
import { mediaRoutes } from './media-routes.ts';
import { QueueService, queueRoutes } from './queues/index.ts';
import { RingGroupService, ringGroupRoutes } from './ring-groups/index.ts';
import { extensionRoutes } from './routes.ts';
import type { VoiceServices } from './services.ts';
import { SimulatedPbx } from './simulated-pbx.ts';
import { DigestAuth } from './sip/digest.ts';
import { SipListener } from './sip/listener.ts';
import { Registrar } from './sip/registrar.ts';
import { SipPbx } from './sip/sip-pbx.ts';
import { type Transcriber, transcriberFrom } from './transcribers.ts';

export type { CallRow } from './call-store.ts';
export type { AgentEnd, AgentRunner, CallService } from './calls.ts';
export type { ExtensionService } from './extensions.ts';
export type { CallMedia } from './media.ts';
export type { AgentLine } from './pbx.ts';
export type { VoiceServices } from './services.ts';

export const voiceModule = defineModule({
  name: 'voice',
  create: ({ platform, use }): VoiceServices => {
    const { db, clock, pagination, events, jobs, config, log } = platform;
    const { numbers } = use(numbersModule);
    const extensions = new ExtensionService({
      db,
      clock,
      pagination,
      box: platform.secretBox('sip-password'),
      users: use(identityModule).users,
      numbers,
      sipDomain: config.sipDomain,
    });
    // A number's voice route may name an extension (or its voicemail box); agents: the agents module.
    numbers.useRouteTargets(['extension', 'voicemail'], (organizationId, target) =>
      extensions.exists(organizationId, target),
    );
    let transcriber: Promise<Transcriber | undefined> | undefined;
    const media = new CallMedia({
      db,
      clock,
      pagination,
      events,
      jobs,
      transcriber: () => {
        transcriber ??= transcriberFrom(config);
        return transcriber;
      },
    });
    const flows = new CallFlowService({
      db,
      clock,
      pagination,
      extensions,
      numbers,
      recordingExists: async (organizationId, id) =>
        (await media.store.findRecording(db, organizationId, id)) !== undefined,
      sipDomain: config.sipDomain,
    });
    numbers.useRouteTargets(['flow'], (organizationId, target) => flows.exists(organizationId, target));
    const simulatedPbx = new SimulatedPbx(clock, config.appEnv === 'test' ? 'manual' : 'auto');
    let sipListener: SipListener | undefined;
    let sipPbx: SipPbx | undefined;
    const calls = new CallService({
      db,
      clock,
      pagination,
      events,
      pbx: simulatedPbx,
      // With a SIP listener, POST /calls rings real phones and goes out through the trunk.
      placing: () => (sipListener?.listening && sipPbx ? sipPbx : simulatedPbx),
      extensions,
      numbers,
      organizations: use(organizationsModule).organizations,
      media,
      // Outside production a flow may play audio from this machine or the private network (tests, a lab).
      audio: new AudioFetcher({ guarded: config.appEnv === 'production' }),
      log,
    });
    const registrar = new Registrar({
      db,
      clock,
      digest: new DigestAuth(config.jwtSecret, config.sipDomain),
      extensions,
      rateLimiter: platform.rateLimiter,
    });
    sipPbx = new SipPbx({
      db,
      clock,
      registrar,
      extensions,
      organizations: use(organizationsModule).organizations,
      domain: config.sipDomain,
      stack: () => sipListener?.sipStack,
      address: () => sipListener?.contactAddress ?? config.sipDomain,
      mediaHosts: () => sipListener?.mediaHosts,
      trunk: config.sipTrunk,
      speechToText: (wav) => media.speechToText(wav),
      log,
    });
    sipPbx.useCalls(calls);
    sipListener = new SipListener(
      registrar,
      sipPbx,
      config.sipDomain,
      log,
      config.sipMediaAddress,
      config.appEnv === 'test',
    );
    const ringGroups = new RingGroupService({ db, clock, pagination });
    const queues = new QueueService({ db, clock, pagination });
    calls.useFlows(flows, ringGroups);
    flows.useRingGroups((organizationId, id) => ringGroups.exists(organizationId, id));
    return { extensions, calls, media, flows, ringGroups, queues, simulatedPbx, registrar, sipListener };
  },
  routes: {
    developer: [extensionRoutes, callRoutes, mediaRoutes, callFlowRoutes, ringGroupRoutes, queueRoutes],
    portal: [extensionRoutes, callRoutes, mediaRoutes, callFlowRoutes, ringGroupRoutes, queueRoutes],
    operator: [regionOperatorRoutes],
  },
  testControls: [pbxTestControls],
  events: VOICE_EVENTS,
  jobs: ({ media }) => ({
    [TRANSCRIBE_QUEUE]: {
      handler: (payload: { transcriptionId: string }, job) => media.transcribe(payload, job),
      options: { maxAttempts: 5, retryDelaysSeconds: [10, 60, 300, 900], leaseSeconds: 180 },
    },
  }),
  // Hourly: calls whose PBX died are ended even in a region nobody calls in; expired SIP bindings go.
  retention: ({ calls, registrar }) => [
    { name: 'voice.lost-calls', run: (now) => calls.endLost(now) },
    { name: 'voice.sip-registrations', run: (now) => registrar.removeExpired(now) },
  ],
  sealed: [
    {
      table: 'extensions',
      key: 'id',
      columns: ['sip_password_sealed'],
      purpose: 'sip-password',
      associatedData: 'id',
    },
  ],
});
