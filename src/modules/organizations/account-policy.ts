// What an organization's account state allows (CONTRACT section 7; docs/account-states.md): one table of
// standing (its subscription state, or suspended, which overrides it) × product action, read by every product.
// Limits that count (trial lifetime and burst, daily, monthly) stay with the product that counts them; this
// table decides only what the state itself allows. docs/account-states.md shows the same table, and a test
// holds the two together and walks every cell through the HTTP API.
import { ApiError } from '../../platform/errors.ts';
import type { Product, SubscriptionState } from './schemas.ts';

export type AccountStanding = SubscriptionState | 'suspended';
export const ACCOUNT_STANDINGS: readonly AccountStanding[] = [
  'trial',
  'paid',
  'past_due',
  'scheduled_to_cancel',
  'suspended',
];

export const ACCOUNT_ACTIONS = [
  /** Any developer-API or portal request (sign-in, `me`, logout and switching organization excepted). */
  'use_account',
  /** A message (or a campaign's) within the month's included segments. */
  'send_within_allowance',
  /** A message (or a campaign's) that takes the month beyond its included segments. */
  'send_beyond_allowance',
  'buy_first_number',
  'buy_another_number',
  /** An outbound call to a phone number: POST /calls, an AI agent's call, a desk phone dialling out. */
  'place_outbound_call',
  /** A call between two extensions of the organization. */
  'place_internal_call',
  /** A call arriving at one of its numbers. */
  'receive_call',
] as const;
export type AccountAction = (typeof ACCOUNT_ACTIONS)[number];

/**
 * `allow`; `card`: allowed with a verified card, else 403 CARD_NOT_VERIFIED; or a refusal with its status and
 * code. Suspension answers 403 ACCOUNT_SUSPENDED everywhere (an inbound call: refused, recorded `failed`).
 */
export type AccountVerdict = 'allow' | 'card' | { status: 402 | 403; code: string };

const SUSPENDED = { status: 403, code: 'ACCOUNT_SUSPENDED' } as const;
const BILLING_REQUIRED = { status: 402, code: 'BILLING_REQUIRED' } as const;
const RESTRICTED = { status: 402, code: 'CAPABILITY_RESTRICTED_BY_STATE' } as const;

export const ACCOUNT_POLICY: Record<AccountAction, Record<AccountStanding, AccountVerdict>> = {
  use_account: {
    trial: 'allow',
    paid: 'allow',
    past_due: 'allow',
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
  send_within_allowance: {
    trial: 'allow',
    paid: 'allow',
    past_due: 'allow',
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
  send_beyond_allowance: {
    trial: 'card',
    paid: 'card',
    past_due: RESTRICTED,
    scheduled_to_cancel: RESTRICTED,
    suspended: SUSPENDED,
  },
  buy_first_number: {
    trial: 'allow',
    paid: 'allow',
    past_due: BILLING_REQUIRED,
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
  buy_another_number: {
    trial: BILLING_REQUIRED,
    paid: 'allow',
    past_due: BILLING_REQUIRED,
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
  place_outbound_call: {
    trial: 'allow',
    paid: 'allow',
    past_due: BILLING_REQUIRED,
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
  place_internal_call: {
    trial: 'allow',
    paid: 'allow',
    past_due: 'allow',
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
  receive_call: {
    trial: 'allow',
    paid: 'allow',
    past_due: 'allow',
    scheduled_to_cancel: 'allow',
    suspended: SUSPENDED,
  },
};

export interface AccountState {
  subscriptionState: SubscriptionState;
  suspended: boolean;
  cardVerified: boolean;
}

export function standingOf(org: Pick<AccountState, 'subscriptionState' | 'suspended'>): AccountStanding {
  return org.suspended ? 'suspended' : org.subscriptionState;
}

/**
 * Why `org` may not do `action`, or undefined. `what` names the action in the message ("This send", "The
 * campaign"); `allowance` is the month's included segments, for the messages of the beyond-allowance refusals.
 */
export function accountPolicyRefusal(
  org: AccountState,
  action: AccountAction,
  context: { what?: string; allowance?: number } = {},
): ApiError | undefined {
  const verdict = ACCOUNT_POLICY[action][standingOf(org)];
  if (verdict === 'allow' || (verdict === 'card' && org.cardVerified)) return undefined;
  const code = verdict === 'card' ? 'CARD_NOT_VERIFIED' : verdict.code;
  const status = verdict === 'card' ? 403 : verdict.status;
  return new ApiError(status, refusalMessage(action, code, org, context), { code });
}

function refusalMessage(
  action: AccountAction,
  code: string,
  org: AccountState,
  context: { what?: string; allowance?: number },
): string {
  const beyond = `${context.what ?? 'This'} goes beyond the included ${context.allowance ?? 0} segments`;
  switch (code) {
    case 'ACCOUNT_SUSPENDED':
      return 'This account is suspended; contact support to restore it';
    case 'CARD_NOT_VERIFIED':
      return `${beyond}; add a valid payment method`;
    case 'CAPABILITY_RESTRICTED_BY_STATE':
      return `${beyond}, which a subscription that is ${
        org.subscriptionState === 'past_due' ? 'past due' : 'scheduled to cancel'
      } cannot do`;
    default:
      if (action === 'buy_another_number' && org.subscriptionState === 'trial') {
        return 'A trial has one phone number; subscribe to buy more';
      }
      if (action === 'place_outbound_call') {
        return 'Placing a call needs a subscription in good standing; pay the open invoice first';
      }
      return 'Buying a number needs a subscription in good standing; pay the open invoice first';
  }
}

/**
 * Why an organization may not use a route, or undefined: 403 ACCOUNT_SUSPENDED while it is suspended (unless the
 * route is one a suspended account may use), then 402 SUBSCRIPTION_REQUIRED (with `data.product`) for a route of
 * a product it lacks. Both guards ask this, each with the organization as its authentication read it.
 */
export function accountRefusal(
  org: { suspended: boolean; products: readonly string[] },
  route: { product?: Product; allowSuspended?: boolean },
): ApiError | undefined {
  // use_account refuses only for suspension: whatever the subscription state, the answer is the same.
  if (org.suspended && !route.allowSuspended) {
    return accountPolicyRefusal(
      { subscriptionState: 'paid', cardVerified: true, suspended: true },
      'use_account',
    );
  }
  if (route.product && !org.products.includes(route.product)) {
    return new ApiError(
      402,
      `Your organization does not subscribe to the ${route.product} product; subscribe to use this endpoint`,
      { code: 'SUBSCRIPTION_REQUIRED', data: { product: route.product } },
    );
  }
  return undefined;
}
