// The ring of an incoming call: the North American ring (440 Hz and 480 Hz together, two seconds on, four off),
// made with Web Audio so no sound file is fetched. A browser that has not seen a gesture on the page may keep
// the audio suspended; the notification still shows.

/** Starts ringing; returns the function that stops it. */
export function startRinging(): () => void {
  const AudioContextClass = window.AudioContext;
  if (!AudioContextClass) return () => {};
  const context = new AudioContextClass();
  const gain = context.createGain();
  gain.gain.value = 0;
  gain.connect(context.destination);
  for (const frequency of [440, 480]) {
    const oscillator = context.createOscillator();
    oscillator.frequency.value = frequency;
    oscillator.connect(gain);
    oscillator.start();
  }
  const ring = () => {
    const now = context.currentTime;
    gain.gain.setValueAtTime(0.08, now);
    gain.gain.setValueAtTime(0, now + 2);
  };
  ring();
  const timer = setInterval(ring, 6000);
  void context.resume().catch(() => undefined);
  return () => {
    clearInterval(timer);
    void context.close().catch(() => undefined);
  };
}
