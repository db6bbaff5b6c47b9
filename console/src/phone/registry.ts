// The running phone, if any, for the shell to stop at sign-out or an organization switch. Kept apart from the
// engine so the shell does not load SIP.js (the phone is a chunk of its own).

let stopCurrent: (() => Promise<void>) | undefined;

export function setRunningPhone(stop: (() => Promise<void>) | undefined): void {
  stopCurrent = stop;
}

/** Hangs up, unregisters and disconnects the phone; resolves at once when there is none. */
export async function stopPhone(): Promise<void> {
  await stopCurrent?.().catch(() => undefined);
}
