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
