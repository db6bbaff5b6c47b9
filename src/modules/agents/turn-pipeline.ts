// Speaking a reply as the brain writes it: its words are cut into sentences as they come, and each sentence
// is spoken as soon as it is complete, the first while the rest is still being generated (a model's reply
// takes longer to write than its first sentence takes to say). Sentences are said one after another, in
// order. With barge-in, a caller who talks over the agent cuts the sentence being said, and nothing after it
// is said: what the caller heard is the sentences before it and the words of the cut one in proportion to the
// audio sent (espeak-ng speaks at an even pace, so the fraction of the audio is near the fraction of words).
// Once cut, the rest of the reply is not read (a model's stream is let go); the caller's words are the next turn.
import type { AgentLine } from '../voice/index.ts';
import type { ChatReply } from './schemas.ts';

/** How long each stage of an agent's turn took (transcript turns: ISSUE 34; docs/agents.md). */
export interface TurnLatency {
  /** Silence waited after the caller's last voiced audio before their turn counted as ended. */
  endOfTurnMs: number;
  /** Recognising what they said (0 when the line heard words, not audio). */
  recognitionMs: number;
  /** From asking the brain to its reply's first sentence. */
  brainMs: number;
  /** From that sentence to its first audio going to the caller (synthesis). */
  firstAudioMs: number;
  /** From the end of the caller's speech to the agent's first audio. */
  totalMs: number;
}

export interface SpokenReply {
  /** What the caller heard. */
  text: string;
  interrupted: boolean;
  /** The brain's whole reply; undefined when it failed or the caller cut it off. */
  reply?: ChatReply;
  /** The brain failed (after `text`, which may be empty, was said). */
  error?: unknown;
  /** performance.now() when the first sentence was complete, and when its first audio went out. */
  firstSentenceAt?: number;
  firstAudioAt?: number;
}

/** Cuts text arriving in pieces into sentences: a `.`, `!` or `?` followed by a space ends one. */
export class SentenceSplitter {
  private text = '';

  /** The sentences `piece` completes. */
  push(piece: string): string[] {
    this.text += piece;
    const done: string[] = [];
    // A full stop inside a number ("9.30") or before a lower-case word ("Dr. smith") is not an end.
    const end = /[.!?]+["')\]]?\s+(?=[^a-z])/g;
    let from = 0;
    for (let match = end.exec(this.text); match; match = end.exec(this.text)) {
      const sentence = this.text.slice(from, match.index + match[0].length).trim();
      if (sentence) done.push(sentence);
      from = match.index + match[0].length;
    }
    this.text = this.text.slice(from);
    return done;
  }

  /** What is left at the end of the reply. */
  flush(): string | undefined {
    const rest = this.text.trim();
    this.text = '';
    return rest || undefined;
  }
}

/** The first `fraction` of `text`'s words (what was said of it before a cut). */
export function wordsHeard(text: string, fraction: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.slice(0, Math.round(words.length * Math.min(1, Math.max(0, fraction)))).join(' ');
}

/** Speaks `pieces` (a brain's streamed reply) sentence by sentence on `line`. */
export async function speakReply(
  line: AgentLine,
  pieces: AsyncGenerator<string, ChatReply>,
  options: { voice?: string; bargeIn: boolean },
): Promise<SpokenReply> {
  const result: SpokenReply = { text: '', interrupted: false };
  const heard: string[] = [];
  let speaking: Promise<void> = Promise.resolve();
  const say = (sentence: string) => {
    result.firstSentenceAt ??= performance.now();
    speaking = speaking.then(async () => {
      if (result.interrupted) return;
      const said = await line.say(sentence, options.voice, {
        bargeIn: options.bargeIn,
        onAudio: () => {
          result.firstAudioAt ??= performance.now();
        },
      });
      if (said?.interrupted) {
        result.interrupted = true;
        const part = wordsHeard(sentence, said.heard);
        if (part) heard.push(part);
      } else heard.push(sentence);
    });
  };
  const splitter = new SentenceSplitter();
  let spokenAny = false;
  try {
    for (;;) {
      const next = await pieces.next();
      if (next.done) {
        result.reply = next.value;
        break;
      }
      for (const sentence of splitter.push(next.value)) {
        spokenAny = true;
        say(sentence);
      }
      if (result.interrupted) {
        await pieces.return(undefined as never).catch(() => undefined);
        break;
      }
    }
    const rest = splitter.flush();
    if (rest && !result.interrupted) {
      spokenAny = true;
      say(rest);
    }
    // Words the brain adds without streaming them (a model that only called end_call: its default line).
    if (!spokenAny && result.reply?.reply) say(result.reply.reply);
  } catch (error) {
    result.error = error;
  }
  await speaking;
  if (result.interrupted) delete result.reply;
  result.text = heard.join(' ');
  return result;
}
