// Knowing when the offline agent does not know what was asked (docs/agents.md "When the agent did not
// understand"). A transcript whose best match in the knowledge is weak is not answered from it: the agent says
// it did not understand and asks again, once; a second miss in a row offers a person (when the agent can
// transfer) or to take a message. A caller who takes the message offer is asked for it, and what they say next
// is the message (kept in the call's transcript, which the business reads).
import type { AgentProfile, Turn } from './responder.ts';
import type { ChatReply, SearchHit } from './schemas.ts';

/**
 * How many different words of the question the best chunk must share for the agent to answer on that alone.
 * Not a ts_rank score: one shared word scores anywhere from 0.04 to 0.12 on the dental fixture (by where it is
 * and the chunk's other words), as much as two do, so the score cannot tell one word from several.
 */
export const MIN_SHARED_WORDS = 2;

export const NOT_UNDERSTOOD = "I'm sorry, I didn't understand. Could you say that again?";
const STILL_NOT_UNDERSTOOD = "I'm sorry, I still didn't understand.";
export const MESSAGE_OFFER = 'Would you like to leave a message?';
const MESSAGE_PROMPT = "Please go ahead with your message, and I'll pass it on.";
const MESSAGE_TAKEN = "Thank you, I'll pass your message on. Is there anything else I can help you with?";

/**
 * Whether the best hit is good enough to answer from (`matched`: the lexemes the question and the hit share):
 * it shares several of the question's words, or one of the knowledge's own words that everyday speech does
 * not use (`everyday`: caller-speech.ts's EVERYDAY, stemmed), or one word of its document's title (`titled`:
 * the question's lexemes the title holds). A lone everyday word ("right", "dollar", "know") is what a
 * misheard or off-topic sentence shares with a document by chance; a lone "toothache" or "Medicaid" is what
 * the caller asked about, and so is an everyday word that names what a document is about ("cancel" for
 * "Appointments and cancellations", "open" for "Opening hours").
 */
export function confident(
  hit: SearchHit | undefined,
  matched: string[],
  everyday: Set<string>,
  titled: string[] = [],
): hit is SearchHit {
  if (hit === undefined) return false;
  return (
    new Set(matched).size >= MIN_SHARED_WORDS ||
    matched.some((lexeme) => !everyday.has(lexeme)) ||
    titled.length > 0
  );
}

/**
 * The reply to a question the agent did not understand: ask again the first time; after a second miss in a
 * row, offer `transferOffer` when the agent can transfer, else to take a message.
 */
export function notUnderstood(agent: AgentProfile, conversation: Turn[], transferOffer: string): ChatReply {
  const previous = conversation.at(-2);
  const askedAgain = previous?.role === 'assistant' && previous.content === NOT_UNDERSTOOD;
  if (!askedAgain) return { reply: NOT_UNDERSTOOD, sources: [] };
  return {
    reply: `${STILL_NOT_UNDERSTOOD} ${agent.transferTo ? transferOffer : MESSAGE_OFFER}`,
    sources: [],
  };
}

/**
 * The message-taking turns, when the conversation is in one: after the offer, yes asks for the message and no
 * goes back to questions; after the prompt, whatever is said is the message. Undefined otherwise.
 */
export function messageTurn(
  conversation: Turn[],
  answers: { yes: (said: string) => boolean; no: (said: string) => boolean; anythingElse: string },
): ChatReply | undefined {
  const said = conversation.at(-1)?.content ?? '';
  const previous = conversation.at(-2);
  if (previous?.role !== 'assistant') return undefined;
  if (previous.content === MESSAGE_PROMPT) return { reply: MESSAGE_TAKEN, sources: [] };
  if (!previous.content.endsWith(MESSAGE_OFFER)) return undefined;
  if (answers.yes(said)) return { reply: MESSAGE_PROMPT, sources: [] };
  if (answers.no(said)) return { reply: `No problem. ${answers.anythingElse}`, sources: [] };
  return undefined;
}
