// Knowledge bases (CONTRACT section 10) over a real socket: CRUD with counts; documents from JSON and from
// uploaded text, Markdown, CSV, HTML and PDF files, each file's text extracted (an HTML page's scripts, styles
// and navigation left out); chunking with overlap; search ranked with scores, re-indexed when a document or the
// base's language changes; every refusal (empty, unreadable, unsupported, too large) with nothing written;
// other organizations, scopes and the agents product.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chunkText } from '../src/modules/agents/documents.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { makePdf } from './helpers/pdf.ts';
import { uploadFile } from './helpers/upload.ts';

describe('knowledge bases', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const org = (fields: Record<string, unknown> = {}, scopes?: string[]) =>
    sender(t, fields, { number: null, scopes });
  const base = async (who: Sender, body: Record<string, unknown> = { name: 'FAQ' }) => {
    const res = await api(who, 'POST', '/knowledge-bases', body);
    assert.equal(res.status, 201, res.text);
    return res.body.data as Record<string, any>;
  };
  const upload = (who: Sender, baseId: string, file: Uint8Array, name: string, type?: string) =>
    uploadFile(`${t.url}/api/v2/knowledge-bases/${baseId}/documents`, who.key, file, { name, type });
  const search = async (who: Sender, baseId: string, query: string, limit?: number) => {
    const res = await api(who, 'POST', `/knowledge-bases/${baseId}/search`, { query, limit });
    assert.equal(res.status, 200, res.text);
    return res.body.data as { documentId: string; title: string; text: string; score: number }[];
  };

  test('create, read, list, change, delete; counts follow the documents', async () => {
    const acme = await org();
    const kb = await base(acme, { name: 'Front desk', description: 'What callers ask' });
    assert.match(kb.id, /^kb_/);
    assert.equal(kb.language, 'en');
    assert.equal(kb.documentCount, 0);
    assert.equal(kb.chunkCount, 0);
    const content = 'Parking is in the garage on 4th Street. We validate tickets for two hours.';
    const doc = await api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, { title: 'Parking', content });
    assert.equal(doc.status, 201, doc.text);
    assert.match(doc.body.data.id, /^doc_/);
    assert.equal(doc.body.data.source, 'text');
    assert.equal(doc.body.data.chunkCount, 1);
    assert.equal(doc.body.data.characters, content.length);
    const read = (await api(acme, 'GET', `/knowledge-bases/${kb.id}`)).body.data;
    assert.equal(read.documentCount, 1);
    assert.equal(read.chunkCount, 1);
    const list = await api(acme, 'GET', '/knowledge-bases');
    assert.equal(list.body.pagination.total, 1);
    const renamed = await api(acme, 'PATCH', `/knowledge-bases/${kb.id}`, { name: 'Reception' });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.data.name, 'Reception');
    assert.equal(renamed.body.data.description, 'What callers ask');

    const docs = await api(acme, 'GET', `/knowledge-bases/${kb.id}/documents`);
    assert.equal(docs.body.data.length, 1);
    assert.equal(docs.body.data[0].content, undefined, 'lists leave the text out');
    const one = await api(acme, 'GET', `/knowledge-bases/${kb.id}/documents/${doc.body.data.id}`);
    assert.match(one.body.data.content, /garage on 4th Street/);

    assert.equal((await api(acme, 'DELETE', `/knowledge-bases/${kb.id}`)).status, 200);
    assert.equal((await api(acme, 'GET', `/knowledge-bases/${kb.id}`)).status, 404);
    assert.equal(
      await countRows(t, 'SELECT 1 FROM knowledge_chunks WHERE knowledge_base_id = $1', [kb.id]),
      0,
    );
  });

  test('search ranks with scores; a changed document is re-indexed, a deleted one gone', async () => {
    const acme = await org();
    const kb = await base(acme);
    const add = async (title: string, content: string) =>
      (await api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, { title, content })).body.data;
    const hours = await add(
      'Opening hours',
      'We are open Monday to Friday from 8am to 6pm, and Saturday mornings.',
    );
    const billing = await add('Billing', 'We accept all major credit cards. Payment is due when you visit.');
    const found = await search(acme, kb.id, 'When are you open on Saturday?');
    assert.equal(found[0]!.documentId, hours.id);
    assert.equal(found[0]!.title, 'Opening hours');
    assert.ok(found[0]!.score > 0);
    assert.ok(
      found.every((hit) => hit.documentId !== billing.id),
      'no word in common, not found',
    );
    // Stemming: "cards" and "paying" find "card" and "Payment"? "paying" stems to "pay", Payment to "payment".
    assert.equal((await search(acme, kb.id, 'Can I pay with a credit card?'))[0]!.documentId, billing.id);
    assert.deepEqual(await search(acme, kb.id, 'the and of'), [], 'stop words alone match nothing');

    const changed = await api(acme, 'PATCH', `/knowledge-bases/${kb.id}/documents/${billing.id}`, {
      content: 'Insurance: we take Delta Dental and Cigna.',
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.data.title, 'Billing');
    assert.deepEqual(await search(acme, kb.id, 'credit card'), [], 'the old text is gone from the index');
    assert.equal((await search(acme, kb.id, 'Do you take Cigna?'))[0]!.documentId, billing.id);

    assert.equal((await api(acme, 'DELETE', `/knowledge-bases/${kb.id}/documents/${hours.id}`)).status, 200);
    assert.deepEqual(await search(acme, kb.id, 'open Saturday'), []);
    assert.equal((await api(acme, 'DELETE', `/knowledge-bases/${kb.id}/documents/${hours.id}`)).status, 404);
    assert.equal((await search(acme, kb.id, 'Cigna', 1)).length, 1);
  });

  test("the base's language stems its words; changing it re-indexes every chunk", async () => {
    const acme = await org();
    const kb = await base(acme, { name: 'Preguntas', language: 'es' });
    await api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, {
      title: 'Horario',
      content: 'Cerramos los domingos.',
    });
    // Spanish stems "cerrado" and "cerramos" alike; English does not.
    assert.equal((await search(acme, kb.id, '¿Está cerrado el domingo?')).length, 1);
    const english = await api(acme, 'PATCH', `/knowledge-bases/${kb.id}`, { language: 'en-US' });
    assert.equal(english.body.data.language, 'en-US');
    assert.deepEqual(await search(acme, kb.id, '¿Está cerrado?'), []);
    assert.equal((await search(acme, kb.id, 'cerramos')).length, 1);
    const bad = await api(acme, 'PATCH', `/knowledge-bases/${kb.id}`, { language: 'english please' });
    assert.equal(bad.status, 400);
  });

  test("a large base: a question's common words do not outrank its rare ones; word counts follow every change", async () => {
    const acme = await org();
    const kb = await base(acme, { name: 'Large' });
    /** knowledge_terms as the triggers keep it, and as the chunks say it should be. */
    const counts = async () => {
      const kept = await t.ctx.db.query<{ lexeme: string; chunks: number }>(
        'SELECT lexeme, chunks FROM knowledge_terms WHERE knowledge_base_id = $1 ORDER BY lexeme',
        [kb.id],
      );
      const truth = await t.ctx.db.query<{ lexeme: string; chunks: number }>(
        `SELECT l.lexeme, count(*)::int AS chunks
         FROM knowledge_chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.search)) AS l(lexeme)
         WHERE c.knowledge_base_id = $1 GROUP BY 1 ORDER BY 1`,
        [kb.id],
      );
      assert.deepEqual(kept, truth);
      return new Map(kept.map((row) => [row.lexeme, row.chunks]));
    };
    // Every sentence of a long care guide says "tooth" (several hundred chunks hold it); one page is about
    // zirconia.
    const sentences = Array.from(
      { length: 3000 },
      (_, i) =>
        `Tooth care tip ${i}: brush each tooth gently, floss between every tooth, and rinse the tooth well.`,
    );
    const guide = await api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, {
      title: 'Care guide',
      content: sentences.join(' '),
    });
    assert.equal(guide.status, 201, guide.text);
    const crowns = await api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, {
      title: 'Crowns',
      content: 'Our crowns are milled from zirconia in a single visit.',
    });
    assert.equal(crowns.status, 201, crowns.text);
    const words = await counts();
    assert.ok(words.get('tooth')! > 200, `tooth is in ${words.get('tooth')} chunks`);
    assert.equal(words.get('zirconia'), 1);

    // Ranked over every chunk holding either word, a chunk saying "tooth" four times would win; the rare word
    // decides instead, and the common one still counts.
    const [best] = await search(acme, kb.id, 'Is my tooth zirconia?', 1);
    assert.equal(best!.documentId, crowns.body.data.id);
    // Asked for more than the rare word's chunks hold: they come first, then the best of the rest.
    const five = await search(acme, kb.id, 'Is my tooth zirconia?', 5);
    assert.equal(five.length, 5);
    assert.equal(five[0]!.documentId, crowns.body.data.id);
    // Only common words: every match, as ever.
    assert.equal((await search(acme, kb.id, 'tooth floss', 3)).length, 3);

    // The counts follow a changed document, a deleted one and a new language.
    const changed = await api(acme, 'PATCH', `/knowledge-bases/${kb.id}/documents/${crowns.body.data.id}`, {
      content: 'Our crowns are porcelain.',
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal((await counts()).get('zirconia'), undefined);
    assert.equal(
      (await api(acme, 'DELETE', `/knowledge-bases/${kb.id}/documents/${guide.body.data.id}`)).status,
      200,
    );
    assert.equal((await counts()).get('tooth'), undefined);
    await api(acme, 'PATCH', `/knowledge-bases/${kb.id}`, { language: 'es' });
    await counts();
    assert.equal((await api(acme, 'DELETE', `/knowledge-bases/${kb.id}`)).status, 200);
    assert.equal((await counts()).size, 0);
  });

  test('files: text, Markdown, CSV rows, HTML without its scripts, PDF pages; titled by name or field', async () => {
    const acme = await org();
    const kb = await base(acme);
    const text = await upload(
      acme,
      kb.id,
      Buffer.from('Our fax number is 555-0199.\n'),
      'contact.txt',
      'text/plain',
    );
    assert.equal(text.status, 201, JSON.stringify(text.body));
    assert.equal(text.body.data.source, 'text');
    assert.equal(text.body.data.title, 'contact');
    assert.equal(text.body.data.filename, 'contact.txt');

    const markdown = await upload(acme, kb.id, Buffer.from('# Pets\n\nService dogs are welcome.'), 'pets.md');
    assert.equal(markdown.body.data.source, 'markdown');

    const csv = Buffer.from('service,price\nCleaning,$120\nWhitening,$450\n');
    const prices = await upload(acme, kb.id, csv, 'prices.csv', 'text/csv');
    assert.equal(prices.status, 201);
    assert.equal(prices.body.data.source, 'csv');
    const priceDoc = await api(acme, 'GET', `/knowledge-bases/${kb.id}/documents/${prices.body.data.id}`);
    assert.equal(
      priceDoc.body.data.content,
      'service: Cleaning; price: $120.\n\nservice: Whitening; price: $450.',
    );
    assert.match((await search(acme, kb.id, 'How much is whitening?'))[0]!.text, /Whitening; price: \$450/);

    const html = Buffer.from(
      '<html><head><title>Services</title><style>.secretstyle { color: red }</style></head><body>' +
        '<nav><a href="/">Homenavigation</a></nav><h1>Implants</h1><p>We place <b>dental implants</b>.</p>' +
        '<script>var trackingpixel = 1;</script></body></html>',
    );
    const page = await upload(acme, kb.id, html, 'services.html', 'text/html');
    assert.equal(page.status, 201, JSON.stringify(page.body));
    const pageText = (await api(acme, 'GET', `/knowledge-bases/${kb.id}/documents/${page.body.data.id}`)).body
      .data.content;
    assert.match(pageText, /We place dental implants\./);
    for (const hidden of ['secretstyle', 'trackingpixel', 'Homenavigation']) {
      assert.ok(!pageText.includes(hidden), `${hidden} is not text of the page`);
      assert.deepEqual(await search(acme, kb.id, hidden), []);
    }

    const pdf = makePdf([
      ['Emergency line: call 555-0111 after hours.'],
      ['Knocked-out tooth: keep it in milk.'],
    ]);
    const form = new FormData();
    form.append('title', 'Emergencies');
    form.append('file', new Blob([pdf as BlobPart], { type: 'application/octet-stream' }), 'scan.bin');
    const response = await fetch(`${t.url}/api/v2/knowledge-bases/${kb.id}/documents`, {
      method: 'POST',
      body: form,
      headers: { 'x-api-key': acme.key },
    });
    const uploadedPdf = (await response.json()) as any;
    assert.equal(response.status, 201, JSON.stringify(uploadedPdf));
    assert.equal(uploadedPdf.data.source, 'pdf', 'known by its content, whatever its name');
    assert.equal(uploadedPdf.data.title, 'Emergencies');
    const milk = await search(acme, kb.id, 'What do I do with a knocked out tooth?');
    assert.equal(milk[0]!.documentId, uploadedPdf.data.id);
    assert.match(milk[0]!.text, /keep it in milk/);
  });

  test('refusals: empty, unreadable, unsupported, too large, malformed; nothing is written', async () => {
    const acme = await org();
    const kb = await base(acme);
    const docs = () =>
      countRows(t, 'SELECT 1 FROM knowledge_documents WHERE knowledge_base_id = $1', [kb.id]);
    const cases: [string, Promise<{ status: number; body: any }>, number, string | undefined][] = [
      [
        'blank text',
        api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, { title: 'x', content: ' \n ' }),
        400,
        'DOCUMENT_EMPTY',
      ],
      [
        'no title',
        api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, { content: 'x' }),
        400,
        undefined,
      ],
      [
        'unknown field',
        api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, { title: 'x', content: 'y', z: 1 }),
        400,
        undefined,
      ],
      [
        'too much text',
        api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, {
          title: 'x',
          content: 'word '.repeat(100_001),
        }),
        413,
        'DOCUMENT_TOO_LARGE',
      ],
      [
        'a Word file',
        upload(
          acme,
          kb.id,
          Buffer.from('PK\u0003\u0004 docx'),
          'letter.docx',
          'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        ),
        415,
        'UNSUPPORTED_DOCUMENT_TYPE',
      ],
      [
        'not UTF-8',
        upload(acme, kb.id, Buffer.from([0x66, 0xff, 0xfe, 0x00]), 'notes.txt'),
        400,
        'DOCUMENT_UNREADABLE',
      ],
      [
        'a broken PDF',
        upload(acme, kb.id, Buffer.from('%PDF-1.4\nthis is not a pdf'), 'broken.pdf'),
        400,
        'DOCUMENT_UNREADABLE',
      ],
      [
        'named .pdf, not one',
        upload(acme, kb.id, Buffer.from('hello'), 'fake.pdf'),
        415,
        'UNSUPPORTED_DOCUMENT_TYPE',
      ],
      ['an empty CSV', upload(acme, kb.id, Buffer.from(''), 'empty.csv'), 400, 'DOCUMENT_EMPTY'],
      ['over 10 MB', upload(acme, kb.id, new Uint8Array(10 * 1024 * 1024 + 1), 'big.txt'), 413, undefined],
    ];
    for (const [what, pending, status, code] of cases) {
      const res = await pending;
      assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.success, false, what);
      assert.equal(res.body.code, code, what);
    }
    assert.equal(await docs(), 0);
    const kbRead = (await api(acme, 'GET', `/knowledge-bases/${kb.id}`)).body.data;
    assert.equal(kbRead.chunkCount, 0);
    assert.equal((await api(acme, 'POST', '/knowledge-bases', { name: '' })).status, 400);
    assert.equal((await api(acme, 'POST', `/knowledge-bases/${kb.id}/search`, { query: '' })).status, 400);
    assert.equal(
      (await api(acme, 'POST', `/knowledge-bases/${kb.id}/search`, { query: 'x', limit: 51 })).status,
      400,
    );
  });

  test('chunks: about a thousand characters, cut at sentences, each starting with the end of the last', () => {
    const sentences = Array.from(
      { length: 60 },
      (_, i) => `Sentence number ${i} says something useful here.`,
    );
    const chunks = chunkText(sentences.join(' '));
    assert.ok(chunks.length >= 3, `${chunks.length} chunks`);
    for (const chunk of chunks) {
      assert.ok(chunk.length <= 1000, `${chunk.length} characters`);
      assert.match(chunk, /^Sentence number \d+ .*\.$/, 'whole sentences');
    }
    for (let i = 1; i < chunks.length; i++) {
      const previousLast = chunks[i - 1]!.split(/(?<=\.) /).at(-1)!;
      assert.ok(chunks[i]!.startsWith(previousLast) || chunks[i]!.includes(previousLast), 'overlap');
    }
    const all = new Set(chunks.flatMap((chunk) => chunk.split(/(?<=\.) /)));
    assert.equal(all.size, 60, 'every sentence is in some chunk');
    assert.deepEqual(chunkText('  \n\n '), []);
    const long = chunkText(`${'x'.repeat(30)} `.repeat(100));
    assert.ok(long.every((chunk) => chunk.length <= 1000));
  });

  test('other organizations 404; scopes; the agents product; portal members read, owners change', async () => {
    const acme = await org();
    const kb = await base(acme);
    const doc = (await api(acme, 'POST', `/knowledge-bases/${kb.id}/documents`, { title: 'a', content: 'b' }))
      .body.data;
    const globex = await org();
    for (const [method, path, body] of [
      ['GET', `/knowledge-bases/${kb.id}`, undefined],
      ['PATCH', `/knowledge-bases/${kb.id}`, { name: 'Mine' }],
      ['DELETE', `/knowledge-bases/${kb.id}`, undefined],
      ['GET', `/knowledge-bases/${kb.id}/documents`, undefined],
      ['POST', `/knowledge-bases/${kb.id}/documents`, { title: 'x', content: 'y' }],
      ['GET', `/knowledge-bases/${kb.id}/documents/${doc.id}`, undefined],
      ['PATCH', `/knowledge-bases/${kb.id}/documents/${doc.id}`, { title: 'x' }],
      ['DELETE', `/knowledge-bases/${kb.id}/documents/${doc.id}`, undefined],
      ['POST', `/knowledge-bases/${kb.id}/search`, { query: 'b' }],
    ] as const) {
      const res = await api(globex, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
    }
    assert.equal((await api(acme, 'GET', `/knowledge-bases/${kb.id}`)).body.data.documentCount, 1);

    const reader = await org({}, ['agents:read']);
    const refused = await api(reader, 'POST', '/knowledge-bases', { name: 'x' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    assert.equal((await api(reader, 'GET', '/knowledge-bases')).status, 200);

    const noAgents = await org({ products: ['messaging', 'voice'] });
    const gated = await api(noAgents, 'GET', '/knowledge-bases');
    assert.equal(gated.status, 402);
    assert.deepEqual(gated.body.data, { product: 'agents' });
  });
});

describe('search and answers on a real corpus (a dental office FAQ, test/fixtures/dental-knowledge.json)', () => {
  let t: TestApp;
  let office: Sender;
  let baseId: string;
  let agentId: string;
  const corpus = JSON.parse(
    readFileSync(new URL('./fixtures/dental-knowledge.json', import.meta.url), 'utf8'),
  ) as {
    documents: { title: string; content: string }[];
    questions: { question: string; document: string; answer: string }[];
  };
  before(async () => {
    t = await startTestApp();
    office = await sender(t, {}, { number: null });
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
    baseId = (await api('POST', '/knowledge-bases', { name: 'Bright Smile Dental' })).body.data.id;
    for (const document of corpus.documents) {
      assert.equal((await api('POST', `/knowledge-bases/${baseId}/documents`, document)).status, 201);
    }
    agentId = (await api('POST', '/agents', { name: 'Front desk', knowledgeBaseIds: [baseId] })).body.data.id;
  });
  after(() => t.close());

  test('each of the 20 questions finds its document first', async () => {
    const wrong: string[] = [];
    for (const { question, document } of corpus.questions) {
      const res = await t.request('POST', `/api/v2/knowledge-bases/${baseId}/search`, {
        apiKey: office.key,
        body: { query: question },
      });
      const first = res.body.data[0]?.title;
      if (first !== document) wrong.push(`${question} → ${first ?? 'nothing'} (want ${document})`);
    }
    assert.deepEqual(wrong, []);
  });

  test("the offline agent's answer to each question holds the answer, citing its document", async () => {
    const wrong: string[] = [];
    for (const { question, document, answer } of corpus.questions) {
      const res = await t.request('POST', `/api/v2/agents/${agentId}/chat`, {
        apiKey: office.key,
        body: { messages: [{ role: 'user', content: question }] },
      });
      const { reply, sources } = res.body.data;
      if (!reply.toLowerCase().includes(answer.toLowerCase()) || sources[0]?.title !== document) {
        wrong.push(`${question} → "${reply}" from ${sources[0]?.title}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
