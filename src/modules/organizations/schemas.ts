// Request and response shapes of organizations, shared by the operator API and the portal.
import { Type } from 'typebox';
import { PLANS, REGIONS, SUBSCRIPTION_STATES } from './service.ts';

export const OrganizationFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  plan: Type.Enum(PLANS),
  subscriptionState: Type.Enum(SUBSCRIPTION_STATES),
  cardVerified: Type.Boolean(),
  region: Type.Enum(REGIONS),
  monthlyAllowanceSegments: Type.Integer({ minimum: 0 }),
  dailyLimitSegments: Type.Integer({ minimum: 0 }),
  trialMessageLimit: Type.Integer({ minimum: 0 }),
  createdAt: Type.String({ format: 'date-time' }),
};

export const OrganizationSchema = Type.Object({
  id: Type.String(),
  ...OrganizationFields,
  updatedAt: Type.String({ format: 'date-time' }),
});
