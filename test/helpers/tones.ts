// Hearing a tone in audio: how the SIP tests tell one side's 440 Hz from the other's 1000 Hz in a recording.

/** The strength of `frequency` in `samples` (Goertzel), relative to the signal's energy. */
export function strength(samples: Int16Array, frequency: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / 8000);
  let previous = 0;
  let before = 0;
  let energy = 0;
  for (const sample of samples) {
    const current = sample + coefficient * previous - before;
    before = previous;
    previous = current;
    energy += sample * sample;
  }
  const power = previous * previous + before * before - coefficient * previous * before;
  return energy === 0 ? 0 : power / (energy * samples.length);
}
