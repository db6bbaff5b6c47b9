// The shapes the console sends and receives, read from the types generated from the server's OpenAPI document
// (console/scripts/generate.ts): a page names a path and a method, never a field. When the server changes a
// shape, the generated file changes with it (a test fails while it is stale) and the console's type check
// points at each page that reads a field that is gone.
import type { paths } from './generated/portal.ts';

type Path = keyof paths;
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type OperationOf<P extends Path, M extends Method> = NonNullable<paths[P][M]>;
type SuccessOf<R> = R extends { 200: infer A }
  ? A
  : R extends { 201: infer A }
    ? A
    : R extends { 202: infer A }
      ? A
      : never;
type JsonOf<A> = A extends { content: { 'application/json': infer B } } ? B : never;

/** The whole JSON body of a success answer (`{success, data}`, or a list's `{data, pagination, …}`). */
export type Answer<P extends Path, M extends Method = 'get'> = JsonOf<
  SuccessOf<OperationOf<P, M>['responses']>
>;

/** The `data` of a success answer: a record, or a list's rows. */
export type Data<P extends Path, M extends Method = 'get'> =
  Answer<P, M> extends { data: infer D } ? D : never;

/** One row of a list (a path whose answer's `data` is an array). */
export type Item<P extends Path> = Data<P> extends readonly (infer Row)[] ? Row : never;

/** The JSON body a request sends. */
export type Body<P extends Path, M extends Method> =
  OperationOf<P, M> extends {
    requestBody?: { content: { 'application/json': infer B } };
  }
    ? B
    : never;

/** A request's query parameters. */
export type Query<P extends Path, M extends Method = 'get'> =
  OperationOf<P, M> extends {
    parameters: { query?: infer Q };
  }
    ? NonNullable<Q>
    : never;
