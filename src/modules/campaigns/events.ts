// The events of campaigns (CONTRACT section 8). Each carries the campaign's state and its delivery counts at
// the moment of the change; `campaign.completed` keeps the shape it was announced with while it was coming.
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';

const text = (description: string) => Type.String({ description });
const nullableText = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const integer = (description: string) => Type.Integer({ description });

const CampaignChange = Type.Object({
  id: text('Campaign id (cmp_…)'),
  name: text('Campaign name'),
  status: text('The state it moved to'),
  pausedReason: nullableText('For campaign.paused: the limit code that paused it, or null when a person did'),
  recipientCount: integer('Recipients snapshotted at launch'),
  attempted: integer('Messages attempted so far'),
  delivered: integer('Messages delivered so far'),
  failed: integer('Messages failed or undelivered so far'),
  at: text('When it happened'),
});

const example = (status: string, extra: Record<string, unknown> = {}) => ({
  id: 'cmp_0mf3k2a9x4q8w7e6r5t4y3u2',
  name: 'June promo',
  status,
  pausedReason: null,
  recipientCount: 1000,
  attempted: 0,
  delivered: 0,
  failed: 0,
  at: '2026-06-10T12:00:00.000Z',
  ...extra,
});

export const CampaignStarted = defineEvent(
  'campaign.started',
  CampaignChange,
  'A campaign began sending (at launch, or at its scheduled time).',
  { example: example('sending') },
);

export const CampaignPaused = defineEvent(
  'campaign.paused',
  CampaignChange,
  'A campaign paused: a person paused it, or a plan limit did (pausedReason).',
  { example: example('paused', { pausedReason: 'TRIAL_LIMIT_REACHED', attempted: 50, delivered: 48 }) },
);

export const CampaignCancelled = defineEvent(
  'campaign.cancelled',
  CampaignChange,
  'A campaign was cancelled; its messages still queued were cancelled with it.',
  { example: example('cancelled', { attempted: 120, delivered: 117, failed: 1 }) },
);

export const CampaignCompleted = defineEvent(
  'campaign.completed',
  Type.Object({
    ...CampaignChange.properties,
    completedAt: text('When the last message left the queue'),
  }),
  'A campaign finished sending: every recipient got its message (or was skipped) and none is still queued.',
  {
    example: {
      ...example('completed', { attempted: 1000, delivered: 982, failed: 18 }),
      completedAt: '2026-06-10T14:00:00.000Z',
    },
  },
);

export const CAMPAIGN_EVENTS = [CampaignStarted, CampaignPaused, CampaignCancelled, CampaignCompleted];
