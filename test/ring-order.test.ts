// The ring order of a ring group (CONTRACT section 13), strategy by strategy, as the pure function the ring
// groups' service uses (src/modules/voice/ring-groups/ring-order.ts): who rings in each attempt given who
// answered last and when each member's last call ended. The service reading those facts from the database is
// tested in ring-groups.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type RingMembers, ringOrder } from '../src/modules/voice/ring-groups/index.ts';

describe('ring order', () => {
  const members = ['ext_a', 'ext_b', 'ext_c', 'ext_d'];
  const order = (fields: Partial<RingMembers>) =>
    ringOrder({
      strategy: 'sequential',
      extensionIds: members,
      lastAnsweredExtensionId: null,
      lastCallEndedAt: new Map(),
      ...fields,
    }).map((attempt) => attempt.extensionIds);

  test('simultaneous: one attempt ringing every member, in the list order', () => {
    assert.deepEqual(order({ strategy: 'simultaneous' }), [members]);
    // What is known of the members changes nothing.
    assert.deepEqual(
      order({
        strategy: 'simultaneous',
        lastAnsweredExtensionId: 'ext_b',
        lastCallEndedAt: new Map([['ext_a', new Date(5)]]),
      }),
      [members],
    );
  });

  test('sequential: one member per attempt, in the list order, whoever answered last', () => {
    const expected = [['ext_a'], ['ext_b'], ['ext_c'], ['ext_d']];
    assert.deepEqual(order({ strategy: 'sequential' }), expected);
    assert.deepEqual(order({ strategy: 'sequential', lastAnsweredExtensionId: 'ext_c' }), expected);
  });

  test('round robin: starts after the member who answered last and wraps around', () => {
    const rr = (last: string | null) => order({ strategy: 'round_robin', lastAnsweredExtensionId: last });
    assert.deepEqual(rr(null), [['ext_a'], ['ext_b'], ['ext_c'], ['ext_d']], 'nobody yet: the list order');
    assert.deepEqual(rr('ext_a'), [['ext_b'], ['ext_c'], ['ext_d'], ['ext_a']]);
    assert.deepEqual(rr('ext_b'), [['ext_c'], ['ext_d'], ['ext_a'], ['ext_b']]);
    assert.deepEqual(rr('ext_d'), [['ext_a'], ['ext_b'], ['ext_c'], ['ext_d']], 'the last member: the top');
    assert.deepEqual(rr('ext_gone'), [['ext_a'], ['ext_b'], ['ext_c'], ['ext_d']], 'no longer a member');
    // Each member rings exactly once per call.
    for (const last of [null, ...members]) assert.equal(new Set(rr(last).flat()).size, members.length);
  });

  test('longest idle: never called first, then the oldest last call; ties keep the list order', () => {
    const at = (minute: number) => new Date(Date.UTC(2026, 10, 26, 9, minute));
    const li = (ended: [string, Date][]) =>
      order({ strategy: 'longest_idle', lastCallEndedAt: new Map(ended) });
    assert.deepEqual(li([]), [['ext_a'], ['ext_b'], ['ext_c'], ['ext_d']], 'nobody called: the list order');
    assert.deepEqual(
      li([
        ['ext_a', at(30)],
        ['ext_b', at(10)],
        ['ext_c', at(20)],
        ['ext_d', at(5)],
      ]),
      [['ext_d'], ['ext_b'], ['ext_c'], ['ext_a']],
    );
    assert.deepEqual(
      li([
        ['ext_a', at(30)],
        ['ext_c', at(20)],
      ]),
      [['ext_b'], ['ext_d'], ['ext_c'], ['ext_a']],
      'members who never had a call come first, in the list order',
    );
    assert.deepEqual(
      li([
        ['ext_a', at(20)],
        ['ext_b', at(10)],
        ['ext_c', at(20)],
        ['ext_d', at(10)],
      ]),
      [['ext_b'], ['ext_d'], ['ext_a'], ['ext_c']],
      'equal end times keep the list order',
    );
    // The answer of who answered last has no say in it.
    assert.deepEqual(
      order({
        strategy: 'longest_idle',
        lastAnsweredExtensionId: 'ext_a',
        lastCallEndedAt: new Map([['ext_b', at(1)]]),
      }),
      [['ext_a'], ['ext_c'], ['ext_d'], ['ext_b']],
    );
  });

  test('a group without members rings nobody, whatever its strategy; one member rings alone', () => {
    for (const strategy of ['simultaneous', 'sequential', 'round_robin', 'longest_idle'] as const) {
      assert.deepEqual(order({ strategy, extensionIds: [] }), [], strategy);
      assert.deepEqual(
        order({ strategy, extensionIds: ['ext_a'], lastAnsweredExtensionId: 'ext_a' }),
        [['ext_a']],
        strategy,
      );
    }
  });

  test('the order is a new list: the group given is not changed', () => {
    const extensionIds = ['ext_b', 'ext_a'];
    const attempts = ringOrder({
      strategy: 'simultaneous',
      extensionIds,
      lastAnsweredExtensionId: null,
      lastCallEndedAt: new Map(),
    });
    attempts[0]!.extensionIds.push('ext_x');
    assert.deepEqual(extensionIds, ['ext_b', 'ext_a']);
  });
});
