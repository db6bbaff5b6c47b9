// When a caller's turn has ended: the silence that ends it depends on what was heard. After a complete
// sentence a short pause is the end (the caller waits for an answer; every 100 ms more is felt); after a
// filler ("um", "uh") or digits being read out the caller is thinking or between groups of digits, and a
// longer pause is still theirs. With a partial transcript the words decide; without one (a recogniser that
// only hears whole utterances) the utterance's shape does: a short burst of speech is most often a filler, a
// "yes" or the first group of a number, so it gets the longer wait, and a longer utterance the short one.
// docs/agents.md states the rule.

/** Silence that ends a turn that sounds complete. */
export const COMPLETE_TURN_MS = 400;
/** Silence that ends a turn that may go on (a filler, digits, a short burst). */
export const UNSURE_TURN_MS = 1000;
/** Speech shorter than this, with no words to go by, may go on. */
export const SHORT_SPEECH_MS = 700;

export interface TurnSoFar {
  /** Voiced audio heard in the utterance so far. */
  speechMs: number;
  /** The words recognised so far, when the recogniser gives them while the caller speaks. */
  partial?: string;
}

const FILLER_AT_END =
  /\b(um+|uh+|er+|erm|hmm+|ah+|so|and|but|or|because|like|the|a|an|to|of|my|is|it's|i'm|let me see|well)$/;
const DIGITS_AT_END = /(\d|\b(zero|oh|one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand))$/;

/** The silence, in ms, after which the turn so far counts as ended. */
export function endOfTurnSilenceMs(turn: TurnSoFar): number {
  if (turn.partial !== undefined && turn.partial.trim() !== '') {
    const words = turn.partial
      .toLowerCase()
      .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
      .trim();
    return FILLER_AT_END.test(words) || DIGITS_AT_END.test(words) ? UNSURE_TURN_MS : COMPLETE_TURN_MS;
  }
  return turn.speechMs < SHORT_SPEECH_MS ? UNSURE_TURN_MS : COMPLETE_TURN_MS;
}
