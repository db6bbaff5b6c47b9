// What the SIP PBX and its parts are given (the module's wiring, voice/index.ts): a file of its own, so that
// the parts can name what they share without importing the PBX that imports them.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import type { OrganizationService } from '../../organizations/index.ts';
import type { ExtensionService } from '../extensions.ts';
import type { Registrar } from './registrar.ts';
import type { SipStack } from './stack/index.ts';

export interface SipPbxDeps {
  db: Database;
  clock: Clock;
  registrar: Registrar;
  extensions: ExtensionService;
  organizations: OrganizationService;
  domain: string;
  stack: () => SipStack | undefined;
  /** Our address as phones reach it (`host:port`), for Contact headers. */
  address: () => string;
  /** Where RTP of the calls we answer binds, and the address our SDP names (the listener's). */
  mediaHosts: () => { bind: string; advertise: string } | undefined;
  /** SIP_TRUNK_URI's host and port. */
  trunk?: { host: string; port?: number };
  /** The words in a WAV, by the server's transcriber (a call flow's speech gather); undefined without one. */
  speechToText?: (wav: Buffer) => Promise<string | undefined>;
  log: FastifyBaseLogger;
}
