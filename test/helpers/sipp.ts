// SIPp (Debian's `sip-tester`) as the SIP phones of the SIP listener's tests: a free port, REGISTER scenarios,
// and running SIPp to the end of a scenario (exit 0: it went exactly as written).
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const sippInstalled = spawnSync('sipp', ['-v']).error === undefined;

/**
 * A port free on both UDP and TCP on loopback, below the kernel's ephemeral range (32768-60999 on Linux).
 * A port from the ephemeral range (what listen(0) hands out) can be taken between this check and the bind by
 * any socket the kernel numbers itself: a DNS query, an RTP relay, another test file's client. (The likely
 * cause of a CI run where a SIPp phone never answered and the call rang until the test gave up.)
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const tcpFree = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (!tcpFree) continue;
    const free = await new Promise<boolean>((resolve) => {
      const socket = createSocket('udp4');
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
    });
    // SIPp binds its media port and the next ones (RTCP, video): those must be free too.
    if (free && (await udpFree(port + 1)) && (await udpFree(port + 2)) && (await udpFree(port + 3)))
      return port;
  }
}

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

/**
 * An optional header line of a scenario, on a line of its own only when there is one: SIPp takes an empty line
 * for the end of the headers, so a blank `${auth}` line put every header after it into the body (the first
 * REGISTER and INVITE went out without Max-Forwards, which RFC 3261 section 8.1.1 makes mandatory).
 */
const optionalHeader = (header: string) => (header ? `\n      ${header}` : '');

/** A REGISTER scenario: with `authenticate`, the 401 challenge then REGISTER with credentials, expecting `final`. */
export function registerScenario(final: number, authenticate: boolean, aor = '[service]'): string {
  const register = (cseq: number, auth: string) => `
  <send retrans="500"><![CDATA[
      REGISTER sip:[field0] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch];rport
      From: <sip:${aor}@[field0]>;tag=[pid]SIPpTag[call_number]
      To: <sip:${aor}@[field0]>
      Call-ID: [call_id]
      CSeq: ${cseq} REGISTER
      Contact: <sip:[service]@[local_ip]:[local_port]>
      Expires: 120${optionalHeader(auth)}
      Max-Forwards: 70
      User-Agent: SIPp
      Content-Length: 0

    ]]></send>`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="register">
  ${register(1, '')}
  ${authenticate ? `<recv response="401" auth="true"/>${register(2, '[authentication]')}` : ''}
  <recv response="${final}"/>
</scenario>`;
}

/** Runs SIPp once against the registrar; resolves with its exit code (0: the scenario went as written). */
export async function runSipp(
  port: number,
  options: {
    username: string;
    password: string;
    final?: number;
    authenticate?: boolean;
    aor?: string;
    calls?: number;
    /** A scenario of its own instead of REGISTER. */
    scenario?: string;
    /** The local port (a phone registered from it can be called there). */
    localPort?: number;
    /** `[field1]` of the scenario. */
    callee?: string;
    /** SIPp's media port (`-mp`; each run needs its own when runs overlap). */
    mediaPort?: number;
    /** How long the whole scenario may take; 15 s unless said. */
    timeoutSeconds?: number;
  },
): Promise<number> {
  const file = join(tmpdir(), `sipp-${process.pid}-${Math.random().toString(36).slice(2)}.xml`);
  await writeFile(
    file,
    options.scenario ?? registerScenario(options.final ?? 200, options.authenticate ?? true, options.aor),
  );
  const fields = join(tmpdir(), `sipp-${process.pid}-${Math.random().toString(36).slice(2)}.csv`);
  await writeFile(fields, `SEQUENTIAL\nlocalhost;${options.callee ?? ''};\n`);
  return new Promise((resolve) => {
    execFile(
      'sipp',
      [
        `127.0.0.1:${port}`,
        '-sf',
        file,
        '-inf',
        fields,
        '-s',
        options.username,
        '-au',
        options.username,
        '-ap',
        options.password,
        '-m',
        String(options.calls ?? 1),
        '-i',
        '127.0.0.1',
        '-p',
        String(options.localPort ?? 0),
        ...(options.mediaPort ? ['-mp', String(options.mediaPort)] : []),
        '-timeout',
        `${options.timeoutSeconds ?? 15}s`,
        '-timeout_error',
        '-nostdin',
        // SIPP_TRACE=1 keeps every message and error of the run in the temporary directory, for debugging.
        ...(process.env.SIPP_TRACE ? ['-trace_msg', '-trace_err'] : []),
      ],
      { timeout: ((options.timeoutSeconds ?? 15) + 15) * 1000, cwd: tmpdir() },
      (error) => resolve(error ? ((error as { code?: number }).code ?? 1) : 0),
    );
  });
}

/**
 * SIPp answering one call as a phone on `port`: its built-in `uas` scenario (180, 200, then BYE answered), or
 * `scenario` (an XML file's text) with its media on `mediaPort`. With `ignoreUnexpected`, a message the
 * scenario does not expect at that point is ignored instead of failing the call (a phone sending its 200
 * twice cannot know whether our first ACK comes before or after its second 200).
 */
export function answeringPhone(
  port: number,
  options: {
    scenario?: string;
    mediaPort?: number;
    timeoutSeconds?: number;
    ignoreUnexpected?: boolean;
  } = {},
): { child: ChildProcess; done: Promise<number>; bound: Promise<void> } {
  let file: string | undefined;
  if (options.scenario) {
    file = join(tmpdir(), `sipp-${process.pid}-${Math.random().toString(36).slice(2)}.xml`);
    writeFileSync(file, options.scenario);
  }
  const child = spawn(
    'sipp',
    [
      ...(file ? ['-sf', file] : ['-sn', 'uas']),
      '-i',
      '127.0.0.1',
      '-p',
      String(port),
      ...(options.mediaPort ? ['-mp', String(options.mediaPort)] : []),
      '-m',
      '1',
      '-nostdin',
      '-timeout',
      `${options.timeoutSeconds ?? 30}s`,
      '-timeout_error',
      ...(options.ignoreUnexpected ? ['-default_behaviors', 'all,-abortunexp'] : []),
      ...(process.env.SIPP_TRACE ? ['-trace_msg', '-trace_err'] : []),
    ],
    {
      stdio: 'ignore',
      cwd: tmpdir(),
    },
  );
  const done = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  const bound = Promise.all([port, options.mediaPort].filter((each) => each !== undefined).map(boundByOther));
  return { child, done, bound: bound.then(() => undefined) };
}

/**
 * Resolves once something holds UDP `port` (SIPp has bound it), so a test calls a phone only when it listens:
 * a fixed pause was too short on a loaded machine, and an INVITE sent before SIPp binds is lost. Read from the
 * kernel's socket table, not by binding the port ourselves, which could take it from SIPp at the wrong moment.
 */
async function boundByOther(port: number): Promise<void> {
  const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (let attempt = 0; attempt < 400; attempt++) {
    const table = await readFile('/proc/net/udp', 'utf8').catch(() => undefined);
    if (table === undefined) return void (await sleep(300)); // Not Linux: the old pause.
    if (table.split('\n').some((line) => line.trim().split(/\s+/)[1]?.endsWith(local))) return;
    await sleep(25);
  }
  throw new Error(`nothing bound UDP port ${port} within 10 s`);
}

/** A caller that waits for our BYE and answers it 200 (a caller scenario's end with `untilBye`). */
const WAIT_FOR_BYE = `<recv request="BYE"/>
  <send><![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]></send>`;

/**
 * Extension `[service]` calls `[field1]` (an extension or a phone number): INVITE, the challenge, INVITE with
 * credentials, talk, BYE. With `hold`, mid-call it re-INVITEs with `a=sendonly` (putting the other side on
 * hold) and requires the answer to say `a=recvonly`. With `untilBye`, it talks until our BYE and answers it.
 */
export function callScenario(final: number, options: { hold?: boolean; untilBye?: boolean } = {}): string {
  const invite = (
    cseq: number,
    branch: string,
    auth: string,
    uri = 'sip:[field1]@[field0]',
    sendonly = false,
  ) => `
  <send retrans="500"><![CDATA[
      INVITE ${uri} SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=${branch};rport
      From: <sip:[service]@[field0]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[field0]>${uri === '[next_url]' ? '[peer_tag_param]' : ''}
      Call-ID: [call_id]
      CSeq: ${cseq} INVITE
      Contact: <sip:[service]@[local_ip]:[local_port]>${optionalHeader(auth)}
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 ${2353687637 + (sendonly ? 1 : 0)} IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0
      a=rtpmap:0 PCMU/8000
      ${sendonly ? 'a=sendonly' : ''}

    ]]></send>`;
  const ack = (cseq: number, branch: string, uri: string) => `
  <send><![CDATA[
      ACK ${uri} SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=${branch};rport
      From: <sip:[service]@[field0]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[field0]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: ${cseq} ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>`;
  const hold = `
  ${invite(3, '[branch]', '', '[next_url]', true)}
  <recv response="200">
    <action><ereg regexp="a=recvonly" search_in="body" check_it="true" assign_to="direction"/></action>
  </recv>
  ${ack(3, '[branch]', '[next_url]')}
  <nop><action><log message="on hold: [$direction]"/></action></nop>
  <pause milliseconds="300"/>`;
  const hangUp = options.untilBye
    ? WAIT_FOR_BYE
    : `<send retrans="500"><![CDATA[
      BYE [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch];rport
      From: <sip:[service]@[field0]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[field0]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 4 BYE
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>
  <recv response="200"/>`;
  const talk =
    final === 200
      ? `<recv response="200" rrs="true"/>
  ${ack(2, '[branch]', '[next_url]')}
  ${options.untilBye ? '' : '<pause milliseconds="1500"/>'}
  ${options.hold ? hold : ''}
  ${hangUp}`
      : `<recv response="${final}"/>
  ${ack(2, '[branch-1]', 'sip:[field1]@[field0]')}`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="call an extension">
  ${invite(1, '[branch]', '')}
  <recv response="100" optional="true"/>
  <recv response="401" auth="true"/>
  ${ack(1, '[branch-3]', 'sip:[field1]@[field0]')}
  ${invite(2, '[branch]', '[authentication]')}
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  ${talk}
</scenario>`;
}

/** The trunk's session description, version `version` of it: PCMU and telephone-event on `media`. */
function trunkSdp(media: number | string, version: number): string {
  return `v=0
      o=trunk 1 ${version} IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio ${media} RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
      a=fmtp:101 0-15`;
}

/**
 * The trunk calls `[field1]`: INVITE with a PCMU offer, answered, ACK, waits `waitMs` (the greeting), streams
 * `audioFile` (if any) for `streamMs`, BYE; with `untilBye`, it waits for our BYE instead of sending one. With
 * `final` other than 200: that refusal, ACKed.
 */
export function trunkCall(options: {
  audioFile?: string;
  /** The port the INVITE's SDP names for audio to come to (a test's own socket); SIPp's media port if unset. */
  sdpMediaPort?: number;
  waitMs?: number;
  streamMs?: number;
  final?: number;
  untilBye?: boolean;
  /** Keys sent after the ACK (and the wait) as SIP INFO `application/dtmf-relay`, each answered 200. */
  keysByInfo?: string;
  /** INFOs sent after those, each with its body and the status it must be answered with (`toTag`: our tag). */
  infos?: { contentType: string; body: string; expect: number; toTag?: string }[];
  /** Before the end, it takes a re-INVITE of ours (moved onto the relay towards a person) and answers 200. */
  reinvited?: boolean;
}): string {
  const final = options.final ?? 200;
  const media = options.sdpMediaPort ?? '[media_port]';
  const infos = [
    ...[...(options.keysByInfo ?? '')].map((key) => ({
      contentType: 'application/dtmf-relay',
      body: `Signal=${key}\n      Duration=160`,
      expect: 200,
      toTag: undefined as string | undefined,
    })),
    ...(options.infos ?? []),
  ]
    .map(
      (info, index) => `<send retrans="500"><![CDATA[
      INFO [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch];rport
      From: <sip:+14155550123@[local_ip]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[remote_ip]>${info.toTag ?? '[peer_tag_param]'}
      Call-ID: [call_id]
      CSeq: ${index + 2} INFO
      Contact: <sip:trunk@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Type: ${info.contentType}
      Content-Length: [len]

      ${info.body}

    ]]></send>
  <recv response="${info.expect}"/>`,
    )
    .join('\n  ');
  const reinvited = options.reinvited
    ? `<recv request="INVITE" crlf="true"/>
  <send><![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:trunk@[local_ip]:[local_port]>
      Content-Type: application/sdp
      Content-Length: [len]

      ${trunkSdp(media, 2)}

    ]]></send>
  <recv request="ACK" crlf="true"/>`
    : '';
  const hangUp = options.untilBye
    ? WAIT_FOR_BYE
    : `<send retrans="500"><![CDATA[
      BYE [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch];rport
      From: <sip:+14155550123@[local_ip]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[remote_ip]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 2 BYE
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>
  <recv response="200"/>`;
  const dialog =
    final === 200
      ? `<recv response="200" rrs="true"/>
  <send><![CDATA[
      ACK [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch];rport
      From: <sip:+14155550123@[local_ip]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[remote_ip]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>
  <pause milliseconds="${options.waitMs ?? 0}"/>
  ${options.audioFile ? `<nop><action><exec rtp_stream="${options.audioFile},1,0"/></action></nop>` : ''}
  <pause milliseconds="${options.streamMs ?? 0}"/>
  ${infos}
  ${reinvited}
  ${hangUp}`
      : `<recv response="${final}"/>
  <send><![CDATA[
      ACK sip:[field1]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch-1];rport
      From: <sip:+14155550123@[local_ip]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[remote_ip]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="a call from the trunk">
  <send retrans="500"><![CDATA[
      INVITE sip:[field1]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch];rport
      From: <sip:+14155550123@[local_ip]>;tag=[pid]SIPpTag[call_number]
      To: <sip:[field1]@[remote_ip]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:trunk@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      ${trunkSdp(media, 1)}

    ]]></send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  ${dialog}
</scenario>`;
}

/** A step of a SIPp phone's script: stream a raw µ-law file as RTP (payload type 0). */
export const sippStream = (file: string) => `<nop><action><exec rtp_stream="${file},1,0"/></action></nop>`;
/** A step of a SIPp phone's script: wait. */
export const sippPause = (ms: number) => `<pause milliseconds="${ms}"/>`;

/**
 * A phone answering one call: 180, then after `answerAfterMs` 200 with PCMU on SIPp's media port; then the
 * first of `steps` (a stream, a pause), then for each further step a re-INVITE taken (200 with the same SDP,
 * its ACK) and that step; then it waits for our BYE. With `ackLost`, it sends its 200 twice, as a phone
 * whose first ACK was lost retransmits it (RFC 3261 section 13.3.1.4); SIPp takes the second ACK, the same
 * as the first, for a retransmission and lets it pass (the test counts our ACKs in the log). With
 * `hangUpAfterMs`, it hangs up itself that long after the answer (a BYE of its own, answered 200).
 */
export function answeringScenario(
  options: { answerAfterMs?: number; steps?: string[]; ackLost?: boolean; hangUpAfterMs?: number } = {},
): string {
  const reply = (status: string, tag: string, sdp: boolean, retransmit = sdp) => `
  <send${retransmit ? ' retrans="500"' : ''}><![CDATA[
      SIP/2.0 ${status}
      [last_Via:]
      [last_From:]
      [last_To:]${tag}
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:[local_ip]:[local_port];transport=[transport]>
      ${
        sdp
          ? `Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=phone 1 1 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0
      a=rtpmap:0 PCMU/8000
`
          : 'Content-Length: 0\n'
      }
    ]]></send>`;
  const tag = ';tag=[pid]SIPpTag01[call_number]';
  const [first, ...reinvited] = options.steps ?? [];
  // The phone's own BYE is addressed To the From of our INVITE, our tag included (RFC 3261 section 12.2.1.1):
  // SIPp's [peer_tag_param] and [remote_ip] are empty on the answering side, and a BYE without our tag matches
  // no dialog.
  const hangUp =
    options.hangUpAfterMs === undefined
      ? `<recv request="BYE"/>
  ${reply('200 OK', '', false)}`
      : `${sippPause(options.hangUpAfterMs)}
  <send retrans="500"><![CDATA[
      BYE [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:phone@[local_ip]:[local_port]>${tag}
      To: [$pbxFrom]
      Call-ID: [call_id]
      CSeq: 1 BYE
      Max-Forwards: 70
      Content-Length: 0

    ]]></send>
  <recv response="200"/>`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="answer">
  <recv request="INVITE" crlf="true" rrs="true">${
    options.hangUpAfterMs === undefined
      ? ''
      : `
    <action>
      <ereg regexp="[^ ].*" search_in="hdr" header="From:" assign_to="pbxFrom"/>
    </action>`
  }
  </recv>

  ${reply('180 Ringing', tag, false)}
  ${options.answerAfterMs ? sippPause(options.answerAfterMs) : ''}
  ${options.ackLost ? reply('200 OK', tag, true, false) : ''}
  ${reply('200 OK', tag, true)}
  <recv request="ACK" crlf="true"/>
  ${first ?? ''}
  ${reinvited
    .map(
      (then) => `<recv request="INVITE" crlf="true"/>
  ${reply('200 OK', '', true)}
  <recv request="ACK" crlf="true"/>
  ${then}`,
    )
    .join('\n')}
  ${hangUp}
</scenario>`;
}

/** A phone that rings (180) until the INVITE is cancelled: 200 to the CANCEL, 487 to the INVITE, its ACK. */
export function ringUntilCancelled(): string {
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="ring until cancelled">
  <recv request="INVITE" crlf="true"/>
  <send><![CDATA[
      SIP/2.0 180 Ringing
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:[local_ip]:[local_port];transport=[transport]>
      Content-Length: 0

    ]]></send>
  <recv request="CANCEL"/>
  <send><![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]></send>
  <send><![CDATA[
      SIP/2.0 487 Request Terminated
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      CSeq: 1 INVITE
      Content-Length: 0

    ]]></send>
  <recv request="ACK"/>
</scenario>`;
}
