// Route schemas compiled on a route's first use instead of at start. Compiling every route's validators
// (ajv) and response serializers (fast-json-stringify) at start was about a third of the start-up's CPU
// (docs/performance.md), for some hundreds of routes of which an instance may never see most. A route pays
// its compilation (a few milliseconds) once, on its first request; fuzz and conformance tests reach every
// route, so a schema that does not compile still fails a test rather than waiting for production.

import fastJsonStringify from 'fast-json-stringify';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

/** What Fastify calls to validate a request part; `errors` is read after a false answer. */
export type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };

/** A validator that compiles itself, through `compile`, when it first validates. */
export function validatorCompiledOnFirstUse(compile: () => Validate): Validate {
  let compiled: Validate | undefined;
  const validate: Validate = (data) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  return validate;
}

/** A response serializer, as Fastify's own compiler builds it, built when it first serializes. */
export function serializerCompiledOnFirstUse({ schema }: { schema: unknown }): (data: unknown) => string {
  let compiled: ((data: unknown) => string) | undefined;
  return (data) => {
    compiled ??= fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]);
    return compiled(data);
  };
}
