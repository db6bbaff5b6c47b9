// Languages: an agent's and a knowledge base's `language` is a BCP 47 tag ("en", "en-US", "es"). Full-text
// search stems with the PostgreSQL configuration of its primary language (both engines ship the same
// Snowball stemmers); a language without one is searched by its words as written (`simple`).
const SEARCH_CONFIGS: Record<string, string> = {
  ar: 'arabic',
  ca: 'catalan',
  da: 'danish',
  de: 'german',
  el: 'greek',
  en: 'english',
  es: 'spanish',
  eu: 'basque',
  fi: 'finnish',
  fr: 'french',
  ga: 'irish',
  hi: 'hindi',
  hu: 'hungarian',
  hy: 'armenian',
  id: 'indonesian',
  it: 'italian',
  lt: 'lithuanian',
  nb: 'norwegian',
  ne: 'nepali',
  nl: 'dutch',
  nn: 'norwegian',
  no: 'norwegian',
  pt: 'portuguese',
  ro: 'romanian',
  ru: 'russian',
  sr: 'serbian',
  sv: 'swedish',
  ta: 'tamil',
  tr: 'turkish',
  yi: 'yiddish',
};

/** A BCP 47 tag as we accept it: a 2–3 letter language, optional script and region ("en", "pt-BR", "zh-Hant-TW"). */
export const LANGUAGE_PATTERN = '^[a-zA-Z]{2,3}(-[a-zA-Z]{4})?(-([a-zA-Z]{2}|[0-9]{3}))?$';

/** The text-search configuration for a language tag. */
export function searchConfigOf(language: string): string {
  return SEARCH_CONFIGS[language.split('-')[0]!.toLowerCase()] ?? 'simple';
}
