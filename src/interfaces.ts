// The interfaces of this server and their guards (CONTRACT sections 2–6). The guards come from the modules
// that own the credentials: API keys (developer API) and identity (sessions); the operator token is the
// configuration's. Routes do not choose a guard: mounting on an interface does.
import type { Config } from './config.ts';
import { bearerToken, secretsEqual } from './platform/auth/secrets.ts';
import { ApiError } from './platform/errors.ts';
import type { Guard, HttpInterface, SecurityRequirement } from './platform/http/interfaces.ts';
import type { Idempotency } from './platform/idempotency.ts';

export interface AppInterfaces {
  public: HttpInterface;
  developer: HttpInterface;
  portal: HttpInterface;
  management: HttpInterface;
  operator: HttpInterface;
}

const SESSION_SECURITY: SecurityRequirement[] = [{ bearerAuth: [] }, { cookieAuth: [] }];

/** What the interfaces need of the runtime: the configuration, the two modules' guards, idempotency. */
export interface InterfaceParts {
  config: Config;
  idempotency: Idempotency;
  developerGuard: { guard: Guard; checkRoute: HttpInterface['checkRoute'] };
  sessionGuard: { guard: Guard };
}

export function createInterfaces(runtime: InterfaceParts): AppInterfaces {
  const sessionGuard: Guard = (request, reply) => runtime.sessionGuard.guard(request, reply);
  return {
    public: {
      name: 'public',
      prefix: '',
      errorShape: 'A',
      security: [],
      operationPrefix: '',
      tagPrefix: '',
      guardStatuses: [],
    },
    developer: {
      name: 'developer',
      prefix: '/api/v2',
      errorShape: 'B',
      security: [{ apiKey: [] }],
      operationPrefix: '',
      tagPrefix: '',
      guardStatuses: [401, 403, 429],
      guard: (request, reply) => runtime.developerGuard.guard(request, reply),
      // Every write takes an Idempotency-Key, as Stripe's every POST does (docs/idempotency.md).
      idempotentWrites: runtime.idempotency,
      checkRoute: runtime.developerGuard.checkRoute,
    },
    portal: {
      name: 'portal',
      prefix: '/v2/portal',
      errorShape: 'A',
      security: SESSION_SECURITY,
      operationPrefix: 'portal.',
      tagPrefix: 'Portal: ',
      guardStatuses: [401, 403],
      guard: sessionGuard,
    },
    management: {
      name: 'management',
      prefix: '/api',
      errorShape: 'A',
      security: SESSION_SECURITY,
      operationPrefix: 'manage.',
      tagPrefix: 'Manage: ',
      guardStatuses: [401, 403],
      guard: sessionGuard,
    },
    operator: {
      name: 'operator',
      prefix: '/admin/v1',
      errorShape: 'A',
      security: [{ adminToken: [] }],
      operationPrefix: 'admin.',
      tagPrefix: 'Operator: ',
      guardStatuses: [401],
      guard: operatorGuard(runtime.config.adminToken),
    },
  };
}

/** The operator API's guard: `Authorization: Bearer $ADMIN_TOKEN`, compared in constant time. */
function operatorGuard(adminToken: string | undefined): Guard {
  return async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) throw ApiError.unauthorized('Operator token required', 'AUTH_REQUIRED');
    if (!adminToken || !secretsEqual(token, adminToken)) {
      throw ApiError.unauthorized('Invalid operator token', 'TOKEN_INVALID');
    }
    return null;
  };
}
