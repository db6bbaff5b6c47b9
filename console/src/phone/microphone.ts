// The microphone: asked for before a call is placed or answered, and a refusal told in words the user can act
// on (which browser setting, or which device), rather than a call that silently fails.

/** Asks for the microphone (the browser prompts the first time) and lets it go at once. */
export async function requireMicrophone(): Promise<void> {
  if (!navigator.mediaDevices?.getUserMedia) {
    throw Object.assign(new Error('This browser cannot use a microphone here'), {
      name: 'NotSupportedError',
    });
  }
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
  for (const track of stream.getTracks()) track.stop();
}

/** What to tell the user about a microphone failure; undefined when the error was something else. */
export function microphoneProblem(error: unknown): string | undefined {
  switch ((error as { name?: string } | null)?.name) {
    case 'NotAllowedError':
    case 'PermissionDeniedError':
    case 'SecurityError':
      return 'Microphone access is blocked. Allow the microphone for this site (the icon at the left of the address bar), then try again.';
    case 'NotFoundError':
    case 'DevicesNotFoundError':
      return 'No microphone was found. Connect one (or a headset), then try again.';
    case 'NotReadableError':
    case 'TrackStartError':
      return 'The microphone is in use by another application or cannot be opened. Close the other application, then try again.';
    case 'NotSupportedError':
      return 'This browser cannot use a microphone on this page (it needs HTTPS and a recent browser).';
    default:
      return undefined;
  }
}

/** What the browser says of the microphone for this site; `unknown` when it cannot say. */
export async function microphonePermission(): Promise<PermissionState | 'unknown'> {
  try {
    const status = await navigator.permissions?.query({ name: 'microphone' as PermissionName });
    return status?.state ?? 'unknown';
  } catch {
    return 'unknown'; // Browsers that cannot say: we learn at the first call.
  }
}
