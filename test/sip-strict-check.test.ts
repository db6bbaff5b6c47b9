// The strict checker itself (src/modules/voice/sip/strict-check.ts): each rule a strict phone enforces flags
// the message that breaks it, and well-formed requests and responses pass. Every SIP test file relies on it
// (test/helpers/app.ts fails a file on any breach), so a rule that silently stopped flagging would hide bugs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StrictSipCheck } from '../src/modules/voice/sip/strict-check.ts';

const invite = (overrides: Record<string, unknown> = {}) => ({
  method: 'INVITE',
  uri: 'sip:102@127.0.0.1:5062',
  headers: {
    to: { uri: 'sip:102@example.com', params: {} },
    from: { uri: 'sip:101@example.com', params: { tag: 'ours' } },
    'call-id': 'call-1',
    cseq: { method: 'INVITE', seq: 1 },
    via: [{ params: { branch: 'z9hG4bKinvite' } }],
    'max-forwards': 70,
    ...overrides,
  },
});

const inDialog = (method: string, seq: number, overrides: Record<string, unknown> = {}) => ({
  method,
  uri: 'sip:phone@127.0.0.1:5062',
  headers: {
    to: { uri: 'sip:102@example.com', params: { tag: 'theirs' } },
    from: { uri: 'sip:101@example.com', params: { tag: 'ours' } },
    'call-id': 'call-1',
    cseq: { method, seq },
    via: [{ params: { branch: `z9hG4bK${method}${seq}` } }],
    'max-forwards': 70,
    ...overrides,
  },
});

describe('the strict SIP checker', () => {
  test('a well-formed INVITE, its ACK, CANCEL and a BYE pass', () => {
    const check = new StrictSipCheck();
    check.onSent(invite());
    check.onSent(inDialog('ACK', 1));
    check.onSent({
      ...invite(),
      method: 'CANCEL',
      headers: { ...invite().headers, cseq: { method: 'CANCEL', seq: 1 } },
    });
    check.onSent(inDialog('BYE', 2));
    assert.deepEqual(check.violations, []);
  });

  test('a request without Max-Forwards, a From tag or a magic-cookie branch is flagged', () => {
    const check = new StrictSipCheck();
    check.onSent(invite());
    check.onSent(inDialog('BYE', 2, { 'max-forwards': undefined }));
    check.onSent(inDialog('BYE', 3, { from: { uri: 'sip:101@example.com', params: {} } }));
    check.onSent(inDialog('BYE', 4, { via: [{ params: { branch: '1234' } }] }));
    assert.equal(check.violations.length, 3, check.violations.join('\n'));
    assert.match(check.violations[0]!, /Max-Forwards/);
    assert.match(check.violations[1]!, /From without a tag/);
    assert.match(check.violations[2]!, /lacks z9hG4bK/);
  });

  test('CSeq rules: the method must match, an ACK and a CANCEL take their INVITE’s number, numbers only go up', () => {
    const check = new StrictSipCheck();
    check.onSent(invite());
    check.onSent(inDialog('BYE', 2, { cseq: { method: 'INVITE', seq: 2 } }));
    check.onSent(inDialog('ACK', 7));
    check.onSent({
      ...invite(),
      method: 'CANCEL',
      headers: {
        ...invite().headers,
        cseq: { method: 'CANCEL', seq: 1 },
        via: [{ params: { branch: 'z9hG4bKother' } }],
      },
    });
    check.onSent(inDialog('BYE', 5));
    check.onSent(inDialog('BYE', 4));
    assert.equal(check.violations.length, 4, check.violations.join('\n'));
    assert.match(check.violations[0]!, /CSeq method INVITE is not the request's BYE/);
    assert.match(check.violations[1]!, /ACK matches no INVITE/);
    assert.match(check.violations[2]!, /CANCEL matches no INVITE/);
    assert.match(check.violations[3]!, /CSeq 4 after 5/);
  });

  test('responses: To tagged past 100 Trying, Via, From, Call-ID and CSeq copied from the request', () => {
    const check = new StrictSipCheck();
    const request = {
      method: 'INVITE',
      uri: 'sip:102@example.com',
      headers: {
        to: { uri: 'sip:102@example.com', params: {} },
        from: { uri: 'sip:101@example.com', params: { tag: 'caller' } },
        'call-id': 'call-2',
        cseq: { method: 'INVITE', seq: 1 },
        via: [{ host: '127.0.0.1', params: { branch: 'z9hG4bKcaller', rport: null } }],
        'max-forwards': 70,
      },
    };
    check.onReceived(request);
    const response = (status: number, headers: Record<string, unknown> = {}) => ({
      status,
      reason: 'x',
      headers: { ...request.headers, 'max-forwards': undefined, ...headers },
    });
    const via = [
      { host: '127.0.0.1', params: { branch: 'z9hG4bKcaller', rport: 5060, received: '127.0.0.1' } },
    ];
    check.onSent(response(100, { via }));
    check.onSent(response(200, { via, to: { uri: 'sip:102@example.com', params: { tag: 'pbx' } } }));
    assert.deepEqual(check.violations, [], 'received and rport on the top Via are no change');
    check.onSent(response(404, { via }));
    check.onSent(
      response(486, {
        via,
        to: { uri: 'sip:102@example.com', params: { tag: 'pbx' } },
        from: { uri: 'sip:101@example.com', params: { tag: 'someone-else' } },
      }),
    );
    assert.equal(check.violations.length, 2, check.violations.join('\n'));
    assert.match(check.violations[0]!, /To without a tag/);
    assert.match(check.violations[1]!, /From not copied/);
  });

  test('Retry-After (RFC 3261 section 20.33): delta-seconds with an optional comment and parameters', () => {
    const check = new StrictSipCheck();
    const refusal = (retryAfter: string) => ({
      status: 503,
      reason: 'Service Unavailable',
      headers: {
        to: { uri: 'sip:102@example.com', params: { tag: 'pbx' } },
        from: { uri: 'sip:101@example.com', params: { tag: 'caller' } },
        'call-id': 'call-3',
        cseq: { method: 'INVITE', seq: 1 },
        via: [{ host: '127.0.0.1', params: { branch: 'z9hG4bKcaller3' } }],
        'retry-after': retryAfter,
      },
    });
    for (const good of ['1', '5', '18000;duration=3600', "120 (I'm in a meeting)", '5;reason=overload'])
      check.onSent(refusal(good));
    assert.deepEqual(check.violations, []);
    for (const bad of ['soon', '-1', '1.5', '5 seconds', 'Fri, 27 Nov 2026 08:00:00 GMT', '5;duration=x'])
      check.onSent(refusal(bad));
    assert.equal(check.violations.length, 6, check.violations.join('\n'));
    for (const violation of check.violations) assert.match(violation, /Retry-After .* not delta-seconds/);
  });
  test('NOTIFY of a REFER (RFC 3515, RFC 6665): Event, Subscription-State, Contact, a sipfrag status line, terminated exactly when final', () => {
    const check = new StrictSipCheck();
    const contact = [{ uri: 'sip:pbx@127.0.0.1:5060', params: {} }];
    const notify = (seq: number, fields: Record<string, unknown>, content = 'SIP/2.0 100 Trying\r\n') => ({
      ...inDialog('NOTIFY', seq, {
        event: 'refer;id=3',
        'subscription-state': 'active;expires=60',
        'content-type': 'message/sipfrag;version=2.0',
        contact,
        ...fields,
      }),
      content,
    });
    check.onSent(notify(1, {}));
    check.onSent(notify(2, { 'subscription-state': 'terminated;reason=noresource' }, 'SIP/2.0 200 OK\r\n'));
    assert.deepEqual(check.violations, []);
    check.onSent(notify(3, { event: undefined }));
    check.onSent(notify(4, { 'subscription-state': 'waiting' }));
    check.onSent(notify(5, { contact: undefined }));
    check.onSent(notify(6, { 'content-type': 'text/plain' }));
    check.onSent(notify(7, {}, 'Trying'));
    check.onSent(notify(8, {}, 'SIP/2.0 486 Busy Here\r\n'));
    check.onSent(notify(9, { 'subscription-state': 'terminated' }));
    check.onSent(notify(10, { event: 'refer;id=abc' }));
    assert.equal(check.violations.length, 8, check.violations.join('\n'));
    assert.match(check.violations[0]!, /without Event/);
    assert.match(check.violations[1]!, /Subscription-State "waiting"/);
    assert.match(check.violations[2]!, /without one Contact/);
    assert.match(check.violations[3]!, /not message\/sipfrag/);
    assert.match(check.violations[4]!, /does not start with a SIP status line/);
    assert.match(check.violations[5]!, /status 486 and Subscription-State active/);
    assert.match(check.violations[6]!, /status 100 and Subscription-State terminated/);
    assert.match(check.violations[7]!, /id=abc is not a CSeq number/);
  });

  test('over a WebSocket (RFC 7118): our Via names WS, our Contact transport=ws; a REGISTER 200 is the browser’s', () => {
    const ws = { protocol: 'WS', address: '127.0.0.1', port: 40000 };
    const check = new StrictSipCheck();
    const contact = (uri: string) => [{ uri, params: {} }];
    check.onSent(
      invite({
        via: [{ protocol: 'WS', params: { branch: 'z9hG4bKws1' } }],
        contact: contact('sip:pbx@127.0.0.1:5060;transport=ws'),
      }),
      ws,
    );
    assert.deepEqual(check.violations, []);
    const wrong = new StrictSipCheck();
    wrong.onSent(
      invite({
        'call-id': 'call-2',
        via: [{ protocol: 'UDP', params: { branch: 'z9hG4bKws2' } }],
        contact: contact('sip:pbx@127.0.0.1:5060'),
      }),
      ws,
    );
    assert.equal(wrong.violations.length, 2, wrong.violations.join('\n'));
    assert.match(wrong.violations[0]!, /Via transport UDP over WS/);
    assert.match(wrong.violations[1]!, /without transport=ws/);
    const registered = new StrictSipCheck();
    registered.onSent(
      {
        status: 200,
        reason: 'OK',
        headers: {
          to: { uri: 'sip:101@example.com', params: { tag: 'ours' } },
          from: { uri: 'sip:101@example.com', params: { tag: 'theirs' } },
          'call-id': 'register-1',
          cseq: { method: 'REGISTER', seq: 2 },
          via: [{ protocol: 'WS', params: { branch: 'z9hG4bKreg' } }],
          contact: contact('sip:abc@xyz.invalid;transport=ws'),
        },
      } as never,
      ws,
    );
    assert.deepEqual(registered.violations, []);
  });
});
