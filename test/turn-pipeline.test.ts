// Speaking a streamed reply sentence by sentence (agents/turn-pipeline.ts): where sentences end, what a caller
// who cut the agent off heard, and a line that is interrupted mid-reply.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChatReply } from '../src/modules/agents/schemas.ts';
import { SentenceSplitter, speakReply, wordsHeard } from '../src/modules/agents/turn-pipeline.ts';
import type { AgentLine } from '../src/modules/voice/index.ts';

async function* pieces(parts: string[], reply: ChatReply): AsyncGenerator<string, ChatReply> {
  for (const part of parts) yield part;
  return reply;
}

describe('speaking a reply as it is written', () => {
  test('sentences end at . ! ? and a space before a capital or digit, not inside numbers or before lower case', () => {
    const splitter = new SentenceSplitter();
    assert.deepEqual(splitter.push('We open at 9.30 on Mon'), []);
    assert.deepEqual(splitter.push('days. Dr. smith is in! Is that'), [
      'We open at 9.30 on Mondays.',
      'Dr. smith is in!',
    ]);
    assert.deepEqual(splitter.push(' all? 42 is'), ['Is that all?']);
    assert.equal(splitter.flush(), '42 is');
    assert.equal(splitter.flush(), undefined);
  });

  test('what a caller heard of a cut sentence: its words in proportion to the audio sent', () => {
    assert.equal(wordsHeard('one two three four five six seven eight', 0.5), 'one two three four');
    assert.equal(wordsHeard('one two', 0), '');
    assert.equal(wordsHeard('one two', 1.5), 'one two');
  });

  test('each sentence is said in order; a caller who cuts one off stops the rest and the reply is not taken', async () => {
    const said: string[] = [];
    const line: AgentLine = {
      say: async (text, _voice, options) => {
        options?.onAudio?.();
        said.push(text);
        return text.startsWith('Second')
          ? { interrupted: true, heard: 0.5 }
          : { interrupted: false, heard: 1 };
      },
      listen: async () => ({ kind: 'hangup', at: new Date(), cause: 'normal_clearing' }),
      close: async () => undefined,
    };
    const whole = pieces(['First one. ', 'Second one has six words. ', 'Third.'], {
      reply: 'x',
      sources: [],
      action: 'end_call',
    });
    const spoken = await speakReply(line, whole, { bargeIn: true });
    assert.deepEqual(said, ['First one.', 'Second one has six words.']);
    assert.equal(spoken.text, 'First one. Second one has');
    assert.equal(spoken.interrupted, true);
    assert.equal(spoken.reply, undefined, 'its end_call is dropped: the caller speaks first');
    assert.ok(spoken.firstAudioAt! >= spoken.firstSentenceAt!);

    said.length = 0;
    const done = await speakReply(line, pieces(['All', ' said.'], { reply: 'All said.', sources: [] }), {
      bargeIn: false,
    });
    assert.deepEqual(
      [said, done.text, done.interrupted, done.reply?.reply],
      [['All said.'], 'All said.', false, 'All said.'],
    );
  });
});
