// Merge variables (CONTRACT section 6, spec UNSUPPORTED_MERGE_VARS): parsing with whitespace and fallbacks,
// the list a 422 names, rendering from a contact, and what malformed braces do.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  findUnsupported,
  type MergeContact,
  parseMergeTags,
  render,
  SUPPORTED_MERGE_VARIABLES,
} from '../src/modules/messaging/merge-variables.ts';

const ada: MergeContact = {
  firstName: 'Ada',
  lastName: 'Lovelace',
  company: 'Analytical Engines Ltd',
  email: 'ada@example.com',
  phone: '+14155550100',
};

describe('parseMergeTags', () => {
  test('names, fallbacks and offsets', () => {
    const text = 'Hi {{first_name}}, from {{ company | us }}.';
    assert.deepEqual(parseMergeTags(text), [
      { raw: '{{first_name}}', name: 'first_name', start: 3, end: 17 },
      { raw: '{{ company | us }}', name: 'company', fallback: 'us', start: 24, end: 42 },
    ]);
    for (const tag of parseMergeTags(text)) assert.equal(text.slice(tag.start, tag.end), tag.raw);
  });

  test('whitespace of any kind inside the braces is tolerated', () => {
    const tags = parseMergeTags(
      '{{  first_name  }} {{\tlast_name\n}} {{first_name|there}} {{ first_name|  dear friend  }}',
    );
    assert.deepEqual(
      tags.map((tag) => [tag.name, tag.fallback]),
      [
        ['first_name', undefined],
        ['last_name', undefined],
        ['first_name', 'there'],
        ['first_name', 'dear friend'],
      ],
    );
  });

  test('everything after the first pipe is the fallback, pipes included; an empty fallback is empty', () => {
    assert.equal(parseMergeTags('{{first_name|a|b}}')[0].fallback, 'a|b');
    assert.equal(parseMergeTags('{{first_name|}}')[0].fallback, '');
  });

  test('malformed braces are literal text', () => {
    for (const text of [
      '{{first_name', // never closed
      'first_name}}',
      '{first_name}',
      '{ {first_name} }',
      '{{first_name}', // closed by one brace only
      '{{}}', // no name
      '{{   }}',
      '{{|there}}',
      '{{first{name}}', // a brace inside
    ]) {
      assert.deepEqual(parseMergeTags(text), [], text);
    }
  });

  test('extra braces around a tag stay as written around the variable', () => {
    assert.deepEqual(
      parseMergeTags('{{{first_name}}}').map((tag) => tag.raw),
      ['{{first_name}}'],
    );
    assert.equal(render('{{{first_name}}}', ada), '{Ada}');
    assert.equal(render('{{first_name}}}', ada), 'Ada}');
  });
});

describe('findUnsupported', () => {
  test('every supported name passes, with or without fallback', () => {
    const text = SUPPORTED_MERGE_VARIABLES.map((name) => `{{${name}}} {{ ${name} | x }}`).join(' ');
    assert.deepEqual(findUnsupported(text), []);
    assert.deepEqual(SUPPORTED_MERGE_VARIABLES, [
      'first_name',
      'last_name',
      'full_name',
      'company',
      'email',
      'phone',
    ]);
  });

  test('unsupported names are listed once each, in order of first use', () => {
    assert.deepEqual(findUnsupported('{{nickname}} {{first_name}} {{ city }} {{nickname|pal}} {{city}}'), [
      'nickname',
      'city',
    ]);
  });

  test('names are exact: case, spaces and near misses are unsupported', () => {
    assert.deepEqual(findUnsupported('{{First_Name}} {{first name}} {{firstName}} {{FIRST_NAME}} {{name}}'), [
      'First_Name',
      'first name',
      'firstName',
      'FIRST_NAME',
      'name',
    ]);
  });

  test('text without tags, and malformed braces, have nothing unsupported', () => {
    assert.deepEqual(findUnsupported('Hello! Reply STOP to opt out.'), []);
    assert.deepEqual(findUnsupported('{{nickname'), []);
    assert.deepEqual(findUnsupported(''), []);
  });
});

describe('render', () => {
  test('fills every supported variable from the contact', () => {
    assert.equal(
      render('{{first_name}} {{last_name}} ({{full_name}}) at {{company}}: {{email}}, {{phone}}', ada),
      'Ada Lovelace (Ada Lovelace) at Analytical Engines Ltd: ada@example.com, +14155550100',
    );
  });

  test('full_name is first and last name trimmed, whichever exist', () => {
    assert.equal(render('{{full_name}}', { firstName: '  Ada ', lastName: ' Lovelace  ' }), 'Ada Lovelace');
    assert.equal(render('[{{full_name}}]', { firstName: 'Ada' }), '[Ada]');
    assert.equal(render('[{{full_name}}]', { lastName: 'Lovelace', firstName: '   ' }), '[Lovelace]');
    assert.equal(render('[{{full_name|customer}}]', { firstName: null, lastName: '' }), '[customer]');
  });

  test('a missing, null, empty or blank value takes the fallback, or nothing', () => {
    assert.equal(render('Hi {{first_name|there}}!', {}), 'Hi there!');
    assert.equal(render('Hi {{first_name|there}}!', { firstName: null }), 'Hi there!');
    assert.equal(render('Hi {{first_name|there}}!', { firstName: '' }), 'Hi there!');
    assert.equal(render('Hi {{first_name|there}}!', { firstName: ' \t' }), 'Hi there!');
    assert.equal(render('Hi {{first_name}}!', {}), 'Hi !');
    assert.equal(render('Hi {{ first_name | there }}!', { firstName: 'Ada' }), 'Hi Ada!');
  });

  test('no contact at all: every variable takes its fallback', () => {
    assert.equal(
      render('Hi {{first_name|there}} from {{company|our team}}{{email}}', undefined),
      'Hi there from our team',
    );
    assert.equal(render('Hi {{first_name|there}}', null), 'Hi there');
  });

  test('values are inserted literally: no $ patterns, no second pass over inserted text', () => {
    assert.equal(render('{{first_name}}', { firstName: "$& $1 $' {{last_name}}" }), "$& $1 $' {{last_name}}");
  });

  test('unsupported tags and malformed braces are left as written', () => {
    assert.equal(render('{{nickname|pal}} {{first_name', ada), '{{nickname|pal}} {{first_name');
    assert.equal(render('{{}} and {first_name}', ada), '{{}} and {first_name}');
  });

  test('text without tags is unchanged, including emoji and GSM extension characters', () => {
    const text = 'Price: 10€ [today] ~ 😀';
    assert.equal(render(text, ada), text);
  });
});
