// A caller's question as the knowledge search reads it: its words stemmed by the base's text-search
// configuration, which of them count, which words of the knowledge each matches, and the SQL that makes them a
// query (knowledge-store.ts runs it; offline-responder.ts compares lexemes by the same rule).

/**
 * The endings that make a word's derivations which the English stemmer leaves apart from it, as stemmed:
 * "pay" → "payment", "dentist" → "dentistri" (dentistry), "clean" → "cleaner", "art" → "artist". A question's
 * word also matches the knowledge's word that is it with one of these endings: callers say one for the other.
 * Only these endings, not any longer word ("car" is not "card" or "carecredit").
 */
const DERIVATIONS: Record<string, string[]> = { english: ['ment', 'ri', 'er', 'ist'] };

/** The question's lexeme `asked` matches the knowledge's lexeme `known` (QUESTION_TERMS's rule, in code). */
export function matches(config: string, asked: string, known: string): boolean {
  if (asked === known) return true;
  return known.startsWith(asked) && (DERIVATIONS[config]?.includes(known.slice(asked.length)) ?? false);
}

/**
 * Whether a question's lexeme counts: a single letter does not. A recogniser writes "see", "you" or "why" heard
 * alone as the letters c, u, y, and "i'm" leaves an "m"; a knowledge base holding a letter ("reply C to
 * confirm") would then answer a question that asked nothing of it.
 */
export const counts = (lexeme: string) => !/^\p{L}$/u.test(lexeme);

/**
 * A question's lexemes (stemmed by the base's configuration; stop words and single letters dropped), each with
 * its variants and its tsquery term, the variants quoted as tsquery input quotes them, any matching. Given a
 * `base` (the search), the variants are the lexeme and those of its DERIVATIONS the base holds (absent words
 * would dilute ts_rank, which averages over the query's words); without (ranking a chunk's sentences), the
 * lexeme alone: the chunk was found with the derivations, and within it the sentences holding the caller's
 * own words answer best ("nervous about the dentist": the sentence about nervous patients, not the one with
 * "dentistry").
 */
export const QUESTION_TERMS = (config: string, question: string, base?: string) =>
  `SELECT w.lexeme, v.variants,
          '(' || (SELECT string_agg('''' || replace(replace(x, '\\', '\\\\'), '''', '''''') || '''', ' | ')
                  FROM unnest(v.variants) AS x
                  ${base ? `WHERE x = w.lexeme OR (SELECT true FROM knowledge_terms k WHERE k.knowledge_base_id = ${base} AND k.lexeme = x)` : ''}) || ')' AS term
   FROM unnest(tsvector_to_array(to_tsvector(${config}, ${question}))) AS w(lexeme)
   CROSS JOIN LATERAL (
     SELECT w.lexeme || ${
       base
         ? `ARRAY(
       SELECT w.lexeme || ending
       FROM jsonb_array_elements_text('${JSON.stringify(DERIVATIONS)}'::jsonb -> (${config})::text) AS e(ending)
     )`
         : `'{}'::text[]`
} AS variants
   ) v
   WHERE w.lexeme !~ '^[[:alpha:]]$'`;

/** A question as a text-search query: any of its words matching (callers rarely say every word of the answer). */
export const ANY_WORD = (config: string, question: string, base?: string) =>
  `(SELECT string_agg(qt.term, ' | ')::tsquery FROM (${QUESTION_TERMS(config, question, base)}) qt)`;
