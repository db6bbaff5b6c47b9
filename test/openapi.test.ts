// The OpenAPI document is complete enough to generate an SDK and to try requests in /docs: every operation
// has a unique, stable operationId and a security requirement matching its interface; the security schemes
// exist; and the webhooks section and the event catalog are built from the declared events.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options'];

/** Which security schemes the operations under a path prefix must accept. */
function expectedSecurity(path: string, anonymous: boolean): string[][] {
  if (anonymous) return [];
  if (path.startsWith('/api/v2/')) return [['apiKey']];
  if (path.startsWith('/admin/v1/')) return [['adminToken']];
  return [['bearerAuth'], ['cookieAuth']];
}

describe('OpenAPI operations', () => {
  let t: TestApp;
  let document: any;
  before(async () => {
    t = await startTestApp();
    document = (await t.request('GET', '/openapi.json')).body;
  });
  after(() => t.close());

  const operations = () =>
    Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, operation]) => ({ path, method, operation })),
    );

  test('every operation has a unique operationId', () => {
    const all = operations();
    assert.ok(all.length > 70, `only ${all.length} operations`);
    const seen = new Map<string, string>();
    for (const { path, method, operation } of all) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.equal(typeof operation.operationId, 'string', `${where} has no operationId`);
      assert.match(operation.operationId, /^[a-z][A-Za-z]*(\.[a-z][A-Za-z]*)*$/, where);
      assert.equal(seen.get(operation.operationId), undefined, `${where} reuses ${operation.operationId}`);
      seen.set(operation.operationId, where);
    }
  });

  test('developer API operations are named for the SDK, without an interface prefix', () => {
    const ids = new Set(operations().map(({ operation }) => operation.operationId));
    for (const id of [
      'messages.send',
      'messages.list',
      'messages.get',
      'contacts.list',
      'contacts.create',
      'me.get',
    ]) {
      assert.ok(ids.has(id), `missing ${id}`);
    }
    assert.ok(ids.has('portal.contacts.list'), 'the portal twin is namespaced');
    assert.ok(ids.has('manage.webhooks.create'));
    assert.ok(ids.has('admin.organizations.create'));
  });

  test('every operation declares the security of its interface, and the schemes exist', () => {
    const schemes = document.components.securitySchemes;
    assert.deepEqual(schemes.apiKey, {
      type: 'apiKey',
      in: 'header',
      name: 'x-api-key',
      description: schemes.apiKey.description,
    });
    assert.equal(schemes.bearerAuth.scheme, 'bearer');
    assert.equal(schemes.cookieAuth.in, 'cookie');
    assert.equal(schemes.adminToken.scheme, 'bearer');
    const anonymous = new Set([
      'system.version',
      'system.health',
      'system.live',
      'system.ready',
      'carriers.webhook',
      'portal.auth.login',
      'portal.auth.loginVerify',
      'portal.auth.register',
      'portal.auth.logout',
      'portal.auth.passwordReset.request',
      'portal.auth.passwordReset.confirm',
    ]);
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.ok(Array.isArray(operation.security), `${where} has no security requirement`);
      const actual = operation.security.map((requirement: object) => Object.keys(requirement));
      assert.deepEqual(actual, expectedSecurity(path, anonymous.has(operation.operationId)), where);
      for (const requirement of operation.security) {
        for (const name of Object.keys(requirement))
          assert.ok(schemes[name], `${where}: unknown scheme ${name}`);
      }
    }
  });

  test('errors are documented in the shape of each interface', () => {
    const send = document.paths['/api/v2/messages/send'].post;
    assert.ok(send.responses['401'], 'the guard’s 401');
    assert.ok(send.responses['429']);
    assert.ok(send.responses['503']);
    const errorOf = (response: any) => response.content['application/json'].schema;
    assert.ok(errorOf(send.responses['400']).properties.success, 'Shape B on the developer API');
    const portalSend = document.paths['/v2/portal/messages/send'].post;
    assert.ok(errorOf(portalSend.responses['400']).properties.message, 'Shape A on the portal');
  });
});

describe('declared events', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('the catalog is the declared events, each with its payload schema', async () => {
    const user = await createUser(t, { role: 'member' });
    const token = await signIn(t, user);
    const res = await t.request('GET', '/api/webhooks/events', { token });
    assert.equal(res.status, 200, res.text);
    const catalog = res.body.data as any[];
    assert.deepEqual(
      catalog.map((entry) => entry.type).sort(),
      t.ctx.events
        .definitions()
        .map((definition) => definition.type)
        .sort(),
    );
    for (const entry of catalog) {
      assert.equal(entry.schema.type, 'object', entry.type);
      assert.deepEqual(
        Object.keys(entry.fields).sort(),
        Object.keys(entry.schema.properties).sort(),
        entry.type,
      );
      for (const field of entry.schema.required ?? [])
        assert.ok(field in entry.example, `${entry.type}.${field}`);
    }
    const sent = catalog.find((entry) => entry.type === 'message.sent');
    assert.equal(sent.fields.sentAt, 'When the carrier accepted it', 'the event says what its field means');
    assert.equal(sent.schema.properties.status.description, 'Message status after this event');
  });

  test('every declared event is in the OpenAPI webhooks section with its data schema', async () => {
    const document = (await t.request('GET', '/openapi.json')).body;
    for (const definition of t.ctx.events.definitions()) {
      const operation = document.webhooks[definition.type]?.post;
      assert.ok(operation, `${definition.type} missing from webhooks`);
      const body = operation.requestBody.content['application/json'].schema;
      assert.equal(body.properties.type.const, definition.type);
      assert.deepEqual(
        Object.keys(body.properties.data.properties),
        Object.keys(definition.schema.properties),
      );
    }
  });

  test('an event must be declared to be recorded', async () => {
    const { defineEvent } = await import('../src/platform/events.ts');
    const { Type } = await import('typebox');
    const undeclared = defineEvent('test.undeclared', Type.Object({}), 'never declared', { example: {} });
    await assert.rejects(
      t.ctx.db.transaction((tx) =>
        t.ctx.events.record(tx, undeclared, { organizationId: 'org_x', data: {} }),
      ),
      /not declared/,
    );
  });
});
