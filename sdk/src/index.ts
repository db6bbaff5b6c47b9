// @commsplatform/sdk: the Communications Platform developer API from TypeScript. See README.md.
export {
  type ClientOptions,
  Comms,
  type Method,
  type RequestOptions,
  type Resources,
  SDK_VERSION,
  type Upload,
} from './client.ts';
export {
  type ApiErrorDetails,
  AuthenticationError,
  BadRequestError,
  CommsApiError,
  CommsConnectionError,
  CommsError,
  CommsTimeoutError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  WebhookVerificationError,
} from './errors.ts';
export type { components, operations, paths } from './generated/openapi.ts';
export { OPERATIONS, type OperationId } from './generated/operations.ts';
export { ListCall, type ListMode, type Page, type Pagination } from './pagination.ts';
export { type VerifyOptions, type WebhookEvent, type WebhookHeaders, webhooks } from './webhooks.ts';
