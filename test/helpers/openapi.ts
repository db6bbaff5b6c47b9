// Reading /openapi.json in tests: the operations it lists and the JSON Schema shapes they use. The harnesses
// generated from the document (fuzz, the cross-organization matrix, the document's own checks) share this.

export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
export type Method = (typeof METHODS)[number];

/** The parts of a JSON Schema the harnesses read. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  minimum?: number;
  maximum?: number;
  minItems?: number;
  minLength?: number;
  maxLength?: number;
  minProperties?: number;
  format?: string;
}

export interface Operation {
  method: Method;
  path: string;
  id: string;
  operation: any;
  parameters: { name: string; in: string; schema: Schema }[];
  body?: Schema;
}

/** Every operation of the document's paths. */
export function operationsOf(document: { paths: Record<string, Record<string, any>> }): Operation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      method,
      path,
      id: item[method].operationId,
      operation: item[method],
      parameters: item[method].parameters ?? [],
      body: item[method].requestBody?.content?.['application/json']?.schema,
    })),
  );
}

/** True for an operation that answers a stream of server-sent events, whose body never ends by itself. */
export function isEventStream(operation: Operation['operation']): boolean {
  return Boolean(operation.responses?.['200']?.content?.['text/event-stream']);
}

/**
 * The status and headers of an answer without waiting for a body that may never end (an event stream):
 * its body is read only when it is not a 200 of `text/event-stream`.
 */
export async function fetchHead(url: string, init: RequestInit): Promise<{ res: Response; text: string }> {
  const abort = new AbortController();
  const res = await fetch(url, { ...init, signal: abort.signal });
  if (res.status === 200 && res.headers.get('content-type')?.startsWith('text/event-stream')) {
    abort.abort();
    return { res, text: '' };
  }
  return { res, text: await res.text() };
}

/** The smallest body that passes `schema`, so that a refusal can only be the organization's. */
export function validExample(schema: Schema | undefined): unknown {
  if (!schema) return undefined;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return validExample(schema.anyOf[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      if (schema.format === 'email') return 'someone@example.com';
      if (schema.format === 'date-time') return '2026-06-10T12:00:00.000Z';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => validExample(schema.items));
    case 'object': {
      const properties = schema.properties ?? {};
      const names = [...(schema.required ?? [])];
      if (names.length < (schema.minProperties ?? 0)) {
        // A field whose any value is valid, so the request is refused for its id, never for its body.
        const optional = Object.keys(properties).filter((name) => !names.includes(name));
        const plain = optional.find((name) => ['description', 'name', 'firstName', 'enabled'].includes(name));
        names.push(plain ?? optional[0]!);
      }
      return Object.fromEntries(names.map((name) => [name, validExample(properties[name])]));
    }
    default:
      return null;
  }
}
