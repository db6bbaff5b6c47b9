// What an agent's callers are likely to say, as text for the recogniser's language model (the voice module
// builds and caches the model: voice/domain-models.ts). Three parts, mixed by weight:
//   - the agent's documents, their titles and sentences: the words and phrases of its knowledge;
//   - questions about that knowledge: caller-speech.ts's question frames filled with the documents' own
//     words and two-word phrases ("how much does {} cost" + "teeth whitening");
//   - everyday call speech (caller-speech.ts), so what is not about the knowledge is still heard as itself.
// docs/voice.md ("Hearing on the telephone") gives the weights' rationale and the measurements.
import { createHash } from 'node:crypto';
import type { Database } from '../../platform/db/index.ts';
import { type SpeechDomain, spokenSentences, type WeightedText } from '../voice/index.ts';
import { EVERYDAY, QUESTION_FRAMES } from './caller-speech.ts';
import type { AgentProfile } from './responder.ts';

/** Bumped when the text made here changes, so models built from the old text are not reused. */
const VERSION = 1;
/** Of the model's text, by weight: the documents, the questions about them, everyday speech. */
const SHARE = { documents: 0.4, questions: 0.4, everyday: 0.2 };
/** The most slot fillers kept (the most frequent first): enough for a large base, a bounded model. */
const MAX_FILLERS = 300;

/** Words that never fill a question's slot alone (they carry no subject). */
const FUNCTION_WORDS = new Set(
  `a an the and or but if of to in on at by for with from about as into over after before above below up down
   out off than then so too very can could will would shall should may might must do does did done is are was
   were be been being am have has had having i me my we us our you your he him his she her it its they them
   their this that these those there here what which who whom whose when where why how all any both each few
   more most other some such no nor not only own same just also our ours yours s t don now please per via`.split(
    /\s+/,
  ),
);

export interface AgentDocument {
  title: string;
  content: string;
}

/** The text of an agent's language model: its documents, questions about them, everyday speech. */
export function agentSpeechText(documents: AgentDocument[]): WeightedText[] {
  const sentences: string[] = [];
  for (const document of documents) {
    sentences.push(document.title);
    sentences.push(...document.content.split(/(?<=[.!?])\s+|\n+/).filter((line) => line.trim() !== ''));
  }
  const fillers = slotFillers(sentences);
  const questions = fillers.flatMap((filler) => QUESTION_FRAMES.map((frame) => frame.replace('{}', filler)));
  // The documents' sentence count sets the scale; each part's weight is its share spread over its sentences.
  const total = Math.max(sentences.length, 1) / SHARE.documents;
  const weightOf = (share: number, count: number) => (count === 0 ? 0 : (share * total) / count);
  return [
    ...sentences.map((text) => ({ text, weight: weightOf(SHARE.documents, sentences.length) })),
    ...questions.map((text) => ({ text, weight: weightOf(SHARE.questions, questions.length) })),
    ...EVERYDAY.map((text) => ({ text, weight: weightOf(SHARE.everyday, EVERYDAY.length) })),
  ];
}

/**
 * What fills a question's slot: the documents' content words and the pairs of content words that follow each
 * other ("teeth whitening", "root canal"), the most frequent first.
 */
export function slotFillers(sentences: string[]): string[] {
  const counts = new Map<string, number>();
  const add = (phrase: string) => counts.set(phrase, (counts.get(phrase) ?? 0) + 1);
  for (const sentence of sentences) {
    for (const words of spokenSentences(sentence)) {
      for (let i = 0; i < words.length; i++) {
        const word = words[i]!.word;
        if (FUNCTION_WORDS.has(word) || word.length < 2) continue;
        add(word);
        // The plain form a caller may use for the documents' derived one ("parking" → park, "cards" → card);
        // a form the dictionary lacks is dropped when the model is built.
        if (word.length > 5 && word.endsWith('ing')) add(word.slice(0, -3));
        if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) add(word.slice(0, -1));
        const next = words[i + 1]?.word;
        if (next && !FUNCTION_WORDS.has(next) && next.length >= 2) add(`${word} ${next}`);
      }
    }
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_FILLERS)
    .map(([phrase]) => phrase);
}

/**
 * The agent's speech domain for the recogniser, rebuilt when its knowledge changes: the key is a hash of its
 * documents' ids and last changes (and the bases' languages), read with one small query; the documents' text
 * is read only when the recogniser has no model for that key yet.
 */
export class AgentSpeech {
  constructor(private readonly db: Database) {}

  async domainFor(
    agent: Pick<AgentProfile, 'organizationId' | 'knowledgeBaseIds' | 'language'>,
  ): Promise<SpeechDomain> {
    const baseIds = agent.knowledgeBaseIds;
    const stamps = await this.db.query<{ id: string; updated_at: Date; language: string }>(
      `SELECT d.id, d.updated_at, kb.language FROM knowledge_documents d
       JOIN knowledge_bases kb ON kb.id = d.knowledge_base_id
       WHERE d.organization_id = $1 AND d.knowledge_base_id = ANY($2::text[])
       ORDER BY d.id`,
      [agent.organizationId, baseIds],
    );
    const hash = createHash('sha256').update(`agent-speech v${VERSION}\n`);
    for (const row of stamps) hash.update(`${row.id} ${row.updated_at.toISOString()} ${row.language}\n`);
    return {
      key: hash.digest('hex').slice(0, 32),
      language: agent.language,
      text: async () => {
        const documents = await this.db.query<AgentDocument>(
          `SELECT title, content FROM knowledge_documents
           WHERE organization_id = $1 AND knowledge_base_id = ANY($2::text[]) ORDER BY id`,
          [agent.organizationId, baseIds],
        );
        return agentSpeechText(documents);
      },
    };
  }
}
