// The offline brain: answers from the agent's knowledge bases with no model, so an agent works on a machine
// with no internet and no GPU. It finds the chunks that best match the caller's words (full-text search in
// the agent's language), answers with the sentences of the best chunk that match the question best, and cites
// the documents they came from. When nothing matches well enough it says it did not understand, asks again
// once, then offers a person or a message (understanding.ts); a caller who asks for a person, or says yes to
// that offer, is transferred.
import type { Database } from '../../platform/db/index.ts';
import { EVERYDAY } from './caller-speech.ts';
import type { KnowledgeStore } from './knowledge-store.ts';
import { searchConfigOf } from './language.ts';
import { counts, matches } from './question-terms.ts';
import type { AgentProfile, Responder, ResponderContext, Turn } from './responder.ts';
import type { ChatReply, SearchHit, Source } from './schemas.ts';
import { confident, messageTurn, notUnderstood } from './understanding.ts';

/** Sentences of the best chunk in an answer: enough to answer, short enough to say on a call. */
const ANSWER_SENTENCES = 2;

export const TRANSFER_OFFER = 'Would you like me to transfer you to someone who can help?';
const TRANSFERRING = 'Of course. Let me transfer you now.';
const NO_TRANSFER = "I'm sorry, I can't transfer calls, but I'm happy to help with your questions.";
const ANYTHING_ELSE = 'Is there anything else I can help you with?';

/** A caller asking for a person. */
const WANTS_PERSON =
  /\b(human|real person|a person|someone|somebody|representative|operator|receptionist|staff member|transfer me|speak to|talk to)\b/i;
/** A caller saying yes. */
const YES = /^\s*(yes|yeah|yep|yup|sure|ok|okay|please|yes please|that would be great|absolutely)\b/i;
const NO = /^\s*(no|nope|no thanks|no thank you|not now)\b/i;

export class OfflineResponder implements Responder {
  readonly name = 'offline';
  /** EVERYDAY's lexemes per text-search configuration (found once). */
  private readonly everyday = new Map<string, Promise<Set<string>>>();

  constructor(
    private readonly db: Database,
    private readonly store: KnowledgeStore,
  ) {}

  async respond(agent: AgentProfile, conversation: Turn[], context: ResponderContext): Promise<ChatReply> {
    const question = conversation.at(-1)?.content ?? '';
    const previous = conversation.at(-2);
    const offered = previous?.role === 'assistant' && previous.content.includes(TRANSFER_OFFER);

    if (offered && YES.test(question) && agent.transferTo)
      return { reply: TRANSFERRING, sources: [], action: 'transfer' };
    if (offered && NO.test(question)) return { reply: `No problem. ${ANYTHING_ELSE}`, sources: [] };
    const message = messageTurn(conversation, {
      yes: (said) => YES.test(said),
      no: (said) => NO.test(said),
      anythingElse: ANYTHING_ELSE,
    });
    if (message) return message;
    if (WANTS_PERSON.test(question)) {
      return agent.transferTo
        ? { reply: TRANSFERRING, sources: [], action: 'transfer' }
        : { reply: NO_TRANSFER, sources: [] };
    }

    const best = (await context.search(question, 3))[0];
    const config = searchConfigOf(agent.language);
    const [matched, titled] = best
      ? await Promise.all([
          this.shared(config, question, `${best.title}\n${best.text}`),
          this.shared(config, question, best.title),
        ])
      : [[], []];
    if (!confident(best, matched, await this.everydayLexemes(config), titled)) {
      return notUnderstood(agent, conversation, TRANSFER_OFFER);
    }
    const sentences = await this.bestSentences(agent, question, best);
    return { reply: sentences.join(' '), sources: [sourceOf(best)] };
  }

  /** The question's lexemes that match a lexeme of `text` (as the search matches them). */
  private async shared(config: string, question: string, text: string): Promise<string[]> {
    const [asked, found] = await Promise.all([
      this.store.lexemes(this.db, config, question),
      this.store.lexemes(this.db, config, text),
    ]);
    return asked.filter((lexeme) => counts(lexeme) && found.some((known) => matches(config, lexeme, known)));
  }

  private everydayLexemes(config: string): Promise<Set<string>> {
    let lexemes = this.everyday.get(config);
    if (!lexemes) {
      lexemes = this.store.lexemes(this.db, config, EVERYDAY.join('\n')).then((found) => new Set(found));
      this.everyday.set(config, lexemes);
      lexemes.catch(() => this.everyday.delete(config));
    }
    return lexemes;
  }

  /** The sentences of the chunk that match the question best, in the order the chunk has them. */
  private async bestSentences(agent: AgentProfile, question: string, hit: SearchHit): Promise<string[]> {
    const sentences = hit.text
      .split(/(?<=[.!?])\s+/)
      .map((sentence) => sentence.trim())
      .filter(Boolean);
    if (sentences.length <= ANSWER_SENTENCES) return sentences;
    const ranked = await this.store.rankSentences(
      this.db,
      searchConfigOf(agent.language),
      question,
      sentences,
    );
    const chosen = ranked
      .filter((sentence) => sentence.score > 0)
      .sort((a, b) => b.score - a.score || a.position - b.position)
      .slice(0, ANSWER_SENTENCES)
      .map((sentence) => sentence.position)
      .sort((a, b) => a - b);
    return chosen.length > 0
      ? chosen.map((position) => sentences[position]!)
      : sentences.slice(0, ANSWER_SENTENCES);
  }
}

function sourceOf(hit: SearchHit): Source {
  return {
    documentId: hit.documentId,
    knowledgeBaseId: hit.knowledgeBaseId,
    title: hit.title,
    score: hit.score,
  };
}
