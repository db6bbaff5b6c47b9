// The links module's event: a person followed a tracked link (a HEAD or a known unfurler is not one).
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';

export const LinkClicked = defineEvent(
  'link.clicked',
  Type.Object({
    campaignId: Type.Union([Type.String(), Type.Null()], {
      description: "The campaign whose message held the link (cmp_…); null for a single message's link",
    }),
    messageId: Type.String({ description: 'The message that held the link (msg_…)' }),
    recipientPhone: Type.String({
      description: 'Who the message was sent to, E.164: the person who clicked',
    }),
    url: Type.String({ description: 'The original URL the click was redirected to' }),
    at: Type.String({ description: 'When the click was made' }),
    userAgent: Type.Union([Type.String(), Type.Null()], { description: "The clicking browser's User-Agent" }),
  }),
  'A recipient followed a tracked link (PUBLIC_URL/l/{code}) and was redirected to its URL. HEAD requests and ' +
    'known link unfurlers are redirected without this event.',
  {
    example: {
      campaignId: 'cmp_0mhx2k3p4q5r6s7t8v9w0x1y2z',
      messageId: 'msg_0mhx2k3p4a5b6c7d8e9f0g1h2j',
      recipientPhone: '+12025550123',
      url: 'https://shop.example.com/spring?utm_source=sms',
      at: '2026-11-27T15:04:05.000Z',
      userAgent:
        'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
    },
  },
);
