// The console's flow editor model without a browser (console/src/pages/flow-editor/model.ts and validate.ts):
// a flow from the API comes back as it was, "this flow" before a flow has an id, the spellings of a refusal's
// path, and the checks made as a person types. The browser test is test/console-flows.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  fromApi,
  normalPath,
  redirectsToSelf,
  SELF_FLOW,
  toApi,
  withoutSelf,
} from '../console/src/pages/flow-editor/model.ts';
import { validateSteps } from '../console/src/pages/flow-editor/validate.ts';

describe('the flow editor model, without a browser', () => {
  const api = [
    {
      type: 'hours',
      timezone: 'Europe/Paris',
      open: [{ days: ['mon'], from: '09:00', to: '17:00' }],
      whenOpen: [
        {
          type: 'gather',
          input: ['dtmf'],
          prompt: { type: 'say', text: 'Press 1' },
          branches: { '2': [{ type: 'hangup' }], '1': [{ type: 'say', text: 'One' }] },
          otherwise: [{ type: 'redirect', flowId: 'flow_abc' }],
        },
      ],
      whenClosed: [],
    },
  ];

  test('a flow from the API comes back from the editor as it was, branches in their order', () => {
    const steps = fromApi(api);
    assert.deepEqual(toApi(steps), api);
    const gather = (steps[0]!.whenOpen as ReturnType<typeof fromApi>)[0]!;
    assert.deepEqual(
      (gather.branches as { answer: string }[]).map((branch) => branch.answer),
      ['1', '2'],
      'a list the person can reorder and retype',
    );
  });

  test('"this flow" before the flow has an id: a hangup for the creation, the id afterwards', () => {
    const steps = fromApi([{ type: 'say', text: 'Hi' }]);
    steps.push({ type: 'redirect', $key: 'x', flowId: SELF_FLOW });
    assert.equal(redirectsToSelf(steps), true);
    assert.deepEqual(toApi(withoutSelf(steps)), [{ type: 'say', text: 'Hi' }, { type: 'hangup' }]);
    assert.deepEqual(toApi(steps, 'flow_new')[1], { type: 'redirect', flowId: 'flow_new' });
  });

  test("the server's path spellings name one field", () => {
    assert.equal(normalPath('steps[2].branches.1[0].text'), 'steps.2.branches.1.0.text');
    assert.equal(normalPath('steps.2.branches.1.0.text'), 'steps.2.branches.1.0.text');
    assert.equal(normalPath('steps.0.branches["yes please"].0.text'), 'steps.0.branches.yes please.0.text');
  });

  test('checks as typed: required fields, ranges, HH:MM, URLs, phone numbers, days', () => {
    const problems = validateSteps(
      fromApi([
        { type: 'say', text: '' },
        { type: 'pause', seconds: 61 },
        {
          type: 'hours',
          timezone: 'Europe/Paris',
          open: [{ days: [], from: '9:00', to: '24:00' }],
          holidays: ['2026-02-30'],
          whenOpen: [],
          whenClosed: [],
        },
        { type: 'stream', url: 'https://not-a-socket.example' },
        { type: 'dial', targets: [{ type: 'number', target: '555' }], timeoutSeconds: 2 },
        { type: 'gather', input: ['dtmf'], branches: { yes: [] } },
      ]),
    );
    assert.deepEqual(Object.fromEntries(problems), {
      'steps.0.text': 'is required',
      'steps.1.seconds': 'must be from 1 to 60',
      'steps.2.open.0.days': 'needs at least one day',
      'steps.2.open.0.from': 'must be a time HH:MM (00:00 to 23:59)',
      'steps.2.holidays.0': 'must be a calendar day YYYY-MM-DD',
      'steps.3.url': 'must be a wss or ws URL',
      'steps.4.targets.0.target': 'must be a phone number in E.164 form (+14155550100)',
      'steps.4.timeoutSeconds': 'must be from 5 to 600',
      'steps.5.branches.yes': 'must be keys: 1 to 32 of 0-9, * and #',
    });
  });
});
