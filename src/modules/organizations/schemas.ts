// Request and response shapes of organizations, shared by the operator API and the portal; TypeScript types
// are Static<> of these.
import { type Static, Type } from 'typebox';
import { REGIONS, type Region } from '../../platform/http/caller.ts';
import { KNOWN_VERSIONS } from '../../platform/version.ts';

export const PLANS = ['starter', 'pro', 'ultra', 'enterprise'] as const;
export const SUBSCRIPTION_STATES = ['trial', 'paid', 'past_due', 'scheduled_to_cancel'] as const;
/** The products an organization may subscribe to (CONTRACT section 7). */
export const PRODUCTS = ['messaging', 'voice', 'agents'] as const;
export { REGIONS, type Region };
export type Plan = (typeof PLANS)[number];
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];
export type Product = (typeof PRODUCTS)[number];

export const OrganizationFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  plan: Type.Enum(PLANS),
  subscriptionState: Type.Enum(SUBSCRIPTION_STATES),
  cardVerified: Type.Boolean(),
  region: Type.Enum(REGIONS),
  monthlyAllowanceSegments: Type.Integer({ minimum: 0 }),
  dailyLimitSegments: Type.Integer({ minimum: 0 }),
  trialMessageLimit: Type.Integer({ minimum: 0 }),
  products: Type.Array(Type.Enum(PRODUCTS), { uniqueItems: true, maxItems: PRODUCTS.length }),
  suspended: Type.Boolean(),
  apiVersion: Type.Enum([...KNOWN_VERSIONS], {
    description: 'The API version its requests get without an API-Version header; pinned at creation',
  }),
  partner: Type.Boolean({ description: 'A partner: creates client organizations (docs/partners.md)' }),
  partnerId: Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], {
    description: 'For a client organization: the partner that created it',
  }),
  createdAt: Type.String({ format: 'date-time' }),
};

export const OrganizationSchema = Type.Object({
  id: Type.String(),
  ...OrganizationFields,
  updatedAt: Type.String({ format: 'date-time' }),
});
export type PublicOrganization = Static<typeof OrganizationSchema>;

export const OrganizationCreate = Type.Object(
  {
    name: OrganizationFields.name,
    plan: Type.Optional(OrganizationFields.plan),
    subscriptionState: Type.Optional(OrganizationFields.subscriptionState),
    cardVerified: Type.Optional(OrganizationFields.cardVerified),
    region: Type.Optional(OrganizationFields.region),
    monthlyAllowanceSegments: Type.Optional(OrganizationFields.monthlyAllowanceSegments),
    dailyLimitSegments: Type.Optional(OrganizationFields.dailyLimitSegments),
    trialMessageLimit: Type.Optional(OrganizationFields.trialMessageLimit),
    products: Type.Optional(OrganizationFields.products),
    suspended: Type.Optional(OrganizationFields.suspended),
    apiVersion: Type.Optional(OrganizationFields.apiVersion),
    partner: Type.Optional(OrganizationFields.partner),
    partnerId: Type.Optional(OrganizationFields.partnerId),
    createdAt: Type.Optional(OrganizationFields.createdAt),
  },
  { additionalProperties: false },
);
export const OrganizationPatch = Type.Partial(OrganizationCreate, {
  additionalProperties: false,
  minProperties: 1,
});
/** An organization's fields as written: every field optional, so one type serves create and update. */
export type OrganizationInput = Static<typeof OrganizationPatch>;
