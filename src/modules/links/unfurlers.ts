// The one list of link unfurlers and prefetchers: programs that fetch a link to show its preview (chat apps,
// social networks, iMessage) or index it (search engines), not a person clicking. Their GET is redirected like
// anyone's but not counted as a click. Matched case-insensitively anywhere in the User-Agent, so
// iMessage's preview ("… facebookexternalhit/1.1 Facebot Twitterbot/1.0") is caught by either name.
// In-app browsers (Facebook's FBAN, LinkedInApp, Snapchat, Viber) are people and are counted, so no app's
// name is listed unless its previews carry a name its browser does not. docs/campaigns.md ("Link tracking")
// points here; add a name when a preview shows up as a click.
export const LINK_UNFURLERS: readonly string[] = [
  'facebookexternalhit',
  'facebot',
  'facebookcatalog',
  'slackbot-linkexpanding',
  'slack-imgproxy',
  'slackbot',
  'twitterbot',
  'whatsapp',
  'telegrambot',
  'discordbot',
  'linkedinbot',
  'skypeuripreview',
  'microsoftpreview',
  'applebot',
  'googlebot',
  'google-inspectiontool',
  'adsbot-google',
  'google-pagerenderer',
  'bingbot',
  'bingpreview',
  'duckduckbot',
  'yandexbot',
  'baiduspider',
  'pinterestbot',
  'redditbot',
  'embedly',
  'iframely',
  'mastodon',
  'cardyb',
];

/** Whether `userAgent` names a known unfurler or prefetcher. */
export function isUnfurler(userAgent: string): boolean {
  const lower = userAgent.toLowerCase();
  return LINK_UNFURLERS.some((name) => lower.includes(name));
}
