// The voice module: the phone system of CONTRACT section 9. Extensions (with SIP credentials), calls on a
// PBX (the simulated one: simulated-pbx.ts), each region's capacity, voicemails, recordings and their
// transcriptions (docs/voice.md).
import { defineModule } from '../../platform/module.ts';
import { identityModule } from '../identity/index.ts';
import { numbersModule } from '../numbers/index.ts';
import { organizationsModule } from '../organizations/index.ts';
import { WebhookTransport, webhooksModule } from '../webhooks/index.ts';
import { decodeWav, telephoneAudio } from './audio.ts';
import { AudioFetcher } from './audio-fetch.ts';
import { callRoutes, pbxTestControls, regionOperatorRoutes } from './call-routes.ts';
import { CallService } from './calls.ts';
import { VOICE_EVENTS } from './events.ts';
import { ExtensionService } from './extensions.ts';
import { flowAppRoutes } from './flow-app-routes.ts';
import { FlowAppSecrets } from './flow-app-secrets.ts';
import { FLOW_APP_ANSWER_BYTES, FLOW_APP_TIMEOUT_MS, FlowApps, webhookRouteCheck } from './flow-webhook.ts';
import { CallFlowService, callFlowRoutes } from './flows/index.ts';
import { CallMedia, TRANSCRIBE_QUEUE } from './media.ts';
import { mediaRoutes } from './media-routes.ts';
import { voiceMetrics } from './metrics.ts';
import { PhoneCredentialService, sipWebSocketUrl } from './phone-credentials.ts';
import { phoneRoutes } from './phone-routes.ts';
import { QueueRuntime, QueueService, queueRoutes } from './queues/index.ts';
import { RingGroupService, ringGroupRoutes } from './ring-groups/index.ts';
import { extensionRoutes } from './routes.ts';
import type { VoiceServices } from './services.ts';
import { SimulatedPbx } from './simulated-pbx.ts';
import { DigestAuth } from './sip/digest.ts';
import { SipListener } from './sip/listener.ts';
import { Registrar } from './sip/registrar.ts';
import { SipPbx } from './sip/sip-pbx.ts';
import { acceptSipWebSockets } from './sip/websocket-endpoint.ts';
import { type Transcriber, transcriberFrom } from './transcribers.ts';

export type { CallRow } from './call-store.ts';
export type { AgentEnd, AgentRunner, CallService } from './calls.ts';
export type { SpeechDomain, WeightedText } from './domain-models.ts';
export type { ExtensionService } from './extensions.ts';
export type { CallMedia } from './media.ts';
export type { AgentLine, AnsweredBy, Heard } from './pbx.ts';
export { spokenSentences } from './pronunciations.ts';
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
    // A stream step's WebSocket: the webhooks module's SSRF rules (wss to public addresses) in production.
    const streams = { guarded: config.appEnv === 'production' };
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
    // A play step's audioId and a queue's holdAudioId name a recording of the organization.
    const recordingExists = async (organizationId: string, id: string) =>
      (await media.store.findRecording(db, organizationId, id)) !== undefined;
    const flows = new CallFlowService({
      db,
      clock,
      pagination,
      extensions,
      numbers,
      recordingExists,
      sipDomain: config.sipDomain,
      streams,
    });
    numbers.useRouteTargets(['flow'], (organizationId, target) => flows.exists(organizationId, target));
    const simulatedPbx = new SimulatedPbx(clock, config.appEnv === 'test' ? 'manual' : 'auto');
    let sipListener: SipListener | undefined;
    let sipPbx: SipPbx | undefined;
    const metrics = voiceMetrics(platform.metrics, {
      db,
      calls: () => calls.store,
      registrar: () => registrar,
    });
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
      streams,
      sipDomain: config.sipDomain,
      countEnded: metrics.callEnded,
    });
    const { sessions } = use(identityModule);
    const phoneCredentials = new PhoneCredentialService({
      db,
      clock,
      box: platform.secretBox('sip-phone-credential'),
      sessionLiveUntil: (sessionId) => sessions.liveUntil(sessionId),
      sipDomain: config.sipDomain,
      wsUrl: () => sipWebSocketUrl(config.publicUrl),
    });
    const registrar = new Registrar({
      db,
      clock,
      digest: new DigestAuth(config.jwtSecret, config.sipDomain),
      extensions,
      phoneCredentials,
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
      metrics.sipMessage,
    );
    const ringGroups = new RingGroupService({ db, clock, pagination });
    // With a SIP listener, members' phones ring over SIP: one with no registered phone is offline.
    const queues = new QueueService({
      db,
      clock,
      pagination,
      presence: () => (sipListener?.listening ? 'sip' : 'simulated'),
      recordingExists,
    });
    const queueRuntime = new QueueRuntime({ db, clock, events, log });
    // A queue's hold audio is a recording of the organization, as a play step's audioId is.
    queueRuntime.useAudio(async (organizationId, id) => {
      const wav = await media.store.audio(db, 'recordings', organizationId, id);
      return wav ? telephoneAudio(decodeWav(wav)) : undefined;
    });
    calls.useFlows(flows, ringGroups);
    calls.useQueues(queueRuntime);
    flows.useRingGroups((organizationId, id) => ringGroups.exists(organizationId, id));
    flows.useQueues((organizationId, id) => queues.exists(organizationId, id));
    // The customer's apps serve steps over signed HTTP (flow-webhook.ts), by the webhooks module's URL rules.
    const { webhooks } = use(webhooksModule);
    const checkUrl = (url: string) => webhooks.checkUrl(url);
    const flowAppSecrets = new FlowAppSecrets({ db, clock, box: platform.secretBox('flow-app-secret') });
    calls.useFlowApps(
      new FlowApps({
        clock,
        log,
        transport: new WebhookTransport({
          guarded: config.appEnv === 'production',
          timeoutMs: config.flowAppTimeoutMs ?? FLOW_APP_TIMEOUT_MS,
          // One byte past the limit, so that a longer answer shows as one.
          excerptBytes: FLOW_APP_ANSWER_BYTES + 1,
        }),
        secrets: flowAppSecrets,
        checkUrl,
        checkSteps: (organizationId, steps) => flows.checked(organizationId, steps),
      }),
    );
    flows.useUrlCheck(checkUrl);
    numbers.useWebhookRoutes(
      webhookRouteCheck({ checkUrl, flowExists: (organizationId, id) => flows.exists(organizationId, id) }),
    );
    return {
      extensions,
      calls,
      media,
      flows,
      ringGroups,
      queues,
      queueRuntime,
      flowAppSecrets,
      simulatedPbx,
      registrar,
      sipListener,
      phoneCredentials,
    };
  },
  routes: {
    // SIP over WebSocket (RFC 7118) at /sip: an upgrade, not a route of the API document.
    public: [
      (services: VoiceServices, platform) => (app) =>
        acceptSipWebSockets(app, services.sipListener, { trustProxy: Boolean(platform.config.trustProxy) }),
    ],
    developer: [
      extensionRoutes,
      callRoutes,
      mediaRoutes,
      flowAppRoutes,
      callFlowRoutes,
      ringGroupRoutes,
      queueRoutes,
    ],
    portal: [
      extensionRoutes,
      callRoutes,
      mediaRoutes,
      flowAppRoutes,
      callFlowRoutes,
      ringGroupRoutes,
      queueRoutes,
      phoneRoutes,
    ],
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
  retention: ({ calls, registrar, phoneCredentials }) => [
    { name: 'voice.lost-calls', run: (now) => calls.endLost(now) },
    { name: 'voice.sip-registrations', run: (now) => registrar.removeExpired(now) },
    { name: 'voice.phone-credentials', run: (now) => phoneCredentials.removeExpired(now) },
  ],
  sealed: [
    {
      table: 'extensions',
      key: 'id',
      columns: ['sip_password_sealed'],
      purpose: 'sip-password',
      associatedData: 'id',
    },
    // The console phone's short-lived SIP passwords, bound to their credential's id (phone-credentials.ts).
    {
      table: 'phone_credentials',
      key: 'id',
      columns: ['password_sealed'],
      purpose: 'sip-phone-credential',
      associatedData: 'id',
    },
    // The secrets an organization's requests to its apps are signed with (flow-app-secrets.ts).
    {
      table: 'flow_app_secrets',
      key: 'organization_id',
      columns: ['secret_sealed', 'previous_secret_sealed'],
      purpose: 'flow-app-secret',
      associatedData: 'organization_id',
    },
  ],
});
