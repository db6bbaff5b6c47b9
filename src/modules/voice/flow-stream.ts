// A call flow's `stream` step (CONTRACT section 13): the flow answers the caller, opens a WebSocket to the
// step's url (by the SSRF rules of stream-target.ts) and streams the call there in the messages of Twilio Media
// Streams (media-stream.ts) until the app closes the socket (the flow goes on with its next step) or the caller
// hangs up (`stop` is sent, the socket closed, and the call ends). A socket that cannot be opened is no stream:
// the flow goes on, as Twilio's <Connect> does when its <Stream> fails. call.stream.started and
// call.stream.stopped say what happened.
import { newId } from '../../platform/ids.ts';
import { CallStreamStarted, CallStreamStopped } from './events.ts';
import type { Ended, FlowControl, Run } from './flow-control.ts';
import type { StreamStep } from './flows/index.ts';
import { MediaStream, type MediaStreamStart, type StreamTrack } from './media-stream.ts';
import { openStreamSocket } from './stream-target.ts';

export async function stream(flow: FlowControl, run: Run, step: StreamStep): Promise<Ended> {
  const line = await flow.line(run);
  if (!line) return 'over';
  const { clock, log } = flow.deps;
  const row = run.live.row;
  const streamSid = newId('stream', clock.nowMs());
  const tracks: StreamTrack[] = step.track === 'both' ? ['inbound', 'outbound'] : ['inbound'];
  let media: MediaStream;
  try {
    // Signed as the flow's app requests are, so the app can tell the connection is ours.
    const apps = flow.deps.apps();
    if (!apps) throw new Error('the flow apps are not ready');
    const headers = await apps.streamHeaders(row.organization_id, step.url);
    const socket = await openStreamSocket(step.url, flow.deps.streams ?? { guarded: true }, headers);
    const start: MediaStreamStart = {
      streamSid,
      callSid: row.id,
      accountSid: row.organization_id,
      tracks,
      // The step names no parameters of its own; what a bot most often asks its <Parameter>s for is the call.
      customParameters: { from: row.from_number, to: row.to_number, direction: row.direction },
    };
    media = new MediaStream(socket, start, log);
  } catch (error) {
    log.info({ err: error, callId: row.id, streamSid }, 'media stream could not connect');
    await flow.recordEvent(run, CallStreamStopped, {
      callId: row.id,
      streamSid,
      url: step.url,
      reason: 'connect_failed',
      error: (error as Error).message.slice(0, 200),
      at: clock.now().toISOString(),
    });
    return 'continue';
  }
  let ended: Awaited<ReturnType<MediaStream['run']>>;
  try {
    await flow.recordEvent(run, CallStreamStarted, {
      callId: row.id,
      streamSid,
      url: step.url,
      tracks,
      at: clock.now().toISOString(),
    });
    ended = await media.run(line);
  } finally {
    // Whatever failed (the record's write, the line), the socket is not left open.
    media.stop();
  }
  await flow.recordEvent(run, CallStreamStopped, {
    callId: row.id,
    streamSid,
    url: step.url,
    reason: ended.reason,
    at: clock.now().toISOString(),
  });
  return ended.result.kind === 'hangup' ? flow.callerGone(run, ended.result) : 'continue';
}
