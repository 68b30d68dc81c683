import { test } from 'node:test';
import assert from 'node:assert/strict';

import { EcaClient, RewriteContent } from '../src/client';
import {
  InlineRequests,
  KERNEL_SUMMARY_EXPRESSION,
  WarningThrottle,
  atLineEnd,
  composeContext,
  describeVariables,
  indentUnderOpener,
  insertTextFor,
  offsetAt,
  parseKernelSummary,
  positionAt,
  wantsBlankLineSuggestion
} from '../src/inlineCore';
import { ChatStore } from '../src/model';
import type { CompletionInlineParams, CompletionInlineResult } from '../src/protocol';
import { REQUEST_CANCELLED, RpcError } from '../src/transport';
import { FakeSocket, ManualClock, tick } from './fakes';

// -- positions -----------------------------------------------------------------------------------------------------

test('positions are 1-based lines and characters, characters counted in code points', () => {
  const text = 'import math\nx = "é😀"\ny';
  assert.deepEqual(positionAt(text, 0), { line: 1, character: 1 });
  assert.deepEqual(positionAt(text, 11), { line: 1, character: 12 });
  assert.deepEqual(positionAt(text, 12), { line: 2, character: 1 });
  const afterEmoji = text.indexOf('"', 17); // the closing quote, after é and a surrogate pair
  assert.deepEqual(positionAt(text, afterEmoji), { line: 2, character: 8 });
  assert.deepEqual(positionAt(text, text.length), { line: 3, character: 2 });
  for (let offset = 0; offset <= text.length; offset++) {
    if (offset === 19) {
      continue; // inside the surrogate pair: not a cursor position
    }
    assert.equal(offsetAt(text, positionAt(text, offset)), offset, `offset ${offset}`);
  }
  assert.equal(offsetAt(text, { line: 9, character: 1 }), text.length, 'clamped past the end');
  assert.equal(offsetAt(text, { line: 1, character: 99 }), 11, 'clamped to the line');
});

test('the ghost text is the suggestion minus what the range already holds around the cursor', () => {
  const text = 'df.he\nprint(df)';
  const cursor = 5;
  const at = (line: number, character: number) => ({ line, character });
  const item = (t: string, start = at(1, 6), end = at(1, 6)) => ({ text: t, range: { start, end }, docVersion: 1 });
  assert.equal(insertTextFor(text, cursor, item('ad()')), 'ad()', 'an insertion at the cursor');
  assert.equal(insertTextFor(text, cursor, item('df.head()', at(1, 1))), 'ad()', 'the line prefix is cut off');
  assert.equal(insertTextFor(text, cursor, item('pd.head()', at(1, 1))), null, 'a prefix that does not match');
  const inCall = 'f(x)';
  assert.equal(
    insertTextFor(inCall, 3, { text: ', y)', range: { start: at(1, 4), end: at(1, 5) }, docVersion: 1 }),
    ', y',
    'the replaced suffix is what the suggestion ends with'
  );
  assert.equal(insertTextFor(text, cursor, item('')), null, 'nothing to show');
});

// -- when to ask --------------------------------------------------------------------------------------------------

test('the new line after Enter under code asks for a suggestion; an empty cell or a second blank line does not', () => {
  const at = (text: string) => wantsBlankLineSuggestion(text.replace('|', ''), text.indexOf('|'));
  assert.equal(at('def fahrenheit_to_celsius(f):\n    |'), true, 'indented under a def');
  for (const opener of ['for x in xs:', 'if ok:', 'with open(p) as f:', 'class Shape:']) {
    assert.equal(at(`${opener}\n    |`), true, opener);
  }
  assert.equal(at('x = 1\n|'), true, 'at the top level after a statement');
  assert.equal(at('x = 1\n|\ny = 2'), true, 'a line opened between two others');
  assert.equal(at('|'), false, 'an empty cell');
  assert.equal(at('x = 1\n\n|'), false, 'two Enters: the block is over');
  assert.equal(at('def f():\n    |return 1'), false, 'code right of the cursor');
  assert.equal(at('def f():\n    ret|'), false, 'typed on the line: JupyterLab asks by itself');
});

test('a suggestion under a block opener the editor did not indent is indented into the block', () => {
  const fit = (text: string, insert: string) => indentUnderOpener(text.replace('|', ''), text.indexOf('|'), insert);
  assert.equal(fit('def f(x):\n|', 'return x * 2'), '    return x * 2', 'column 0 under a def');
  assert.equal(fit('def f(x):\n|', 'if x:\n    return 1\nreturn 2'), '    if x:\n        return 1\n    return 2');
  assert.equal(fit('def f(x):\n  |', 'return x'), '  return x', 'partly indented: two more spaces');
  assert.equal(fit('def f(x):\n    |', 'return x'), 'return x', 'indented already');
  assert.equal(fit('def f(x):\n|', '    return x'), '    return x', 'the model indented it');
  assert.equal(fit('class A:\n    def f(self):  # doc\n|', 'pass'), '        pass', 'nested, with a comment');
  assert.equal(fit('x = 1\n|', 'y = 2'), 'y = 2', 'no opener above');
  assert.equal(fit('if x:\n    y = 1|', ' + 2'), ' + 2', 'not an empty line');
});

test('the end of a line leaves only closers right of the cursor', () => {
  const at = (text: string) => atLineEnd(text.replace('|', ''), text.indexOf('|'));
  assert.equal(at('total = su|'), true);
  assert.equal(at('print(|)'), true, 'JupyterLab closed the bracket');
  assert.equal(at('d = {"a": [|]}\nnext_line()'), true, 'the next line does not count');
  assert.equal(at('x = |foo(1)'), false, 'code right of the cursor');
});

// -- context -------------------------------------------------------------------------------------------------------

test('the kernel summary is read back from its text/plain repr', () => {
  const variables = [
    { n: 'df', t: 'DataFrame', c: [['a', 'int64'], ['b', 'object']], nc: 2, s: [100, 2] },
    { n: 'pd', t: 'module', m: 'pandas' },
    { n: 'n', t: 'int', v: '10' }
  ];
  const encoded = Buffer.from(JSON.stringify(variables)).toString('base64');
  const decode = (data: string) => Buffer.from(data, 'base64').toString('utf8');
  assert.deepEqual(parseKernelSummary(`'${encoded}'`, decode), variables);
  assert.deepEqual(parseKernelSummary("'not base64!'", decode), []);
  assert.deepEqual(parseKernelSummary("'e30='", decode), [], 'JSON that is not a list');
  assert.match(KERNEL_SUMMARY_EXPRESSION, /^\(lambda g: \(exec\(".*", g\), g\['run'\]\(globals\(\)\)\)\[1\]\)\(\{\}\)$/s);
  assert.ok(!KERNEL_SUMMARY_EXPRESSION.includes('\n'), 'one line: a JSON string literal keeps the newlines escaped');
});

test('variables are described as comments, newest kept when the budget runs out', () => {
  const text = describeVariables([
    { n: 'old', t: 'str', l: 12 },
    { n: 'df', t: 'DataFrame', c: [['price', 'float64'], ['city', 'object']], nc: 5, s: [10, 5] },
    { n: 'pd', t: 'module', m: 'pandas' }
  ]);
  assert.equal(
    text,
    '# old: str len 12\n' +
      '# df: DataFrame shape (10, 5); columns: price float64, city object, … (5 in all)\n' +
      '# pd: module pandas'
  );
  assert.equal(describeVariables([{ n: 'old', t: 'str' }, { n: 'new', t: 'int', v: '3' }], 20), '# new: int = 3');
});

test('the context: variables, then the preceding cells nearest last, within the budget', () => {
  const context = composeContext({
    notebook: 'analysis.ipynb',
    variables: [{ n: 'df', t: 'DataFrame', c: [['a', 'int64']], nc: 1, s: [3, 1] }],
    cells: [
      { index: 1, source: 'import pandas as pd\n' },
      { index: 2, source: '   \n' },
      { index: 3, source: "df = pd.read_csv('x.csv')" }
    ]
  })!;
  assert.equal(
    context,
    '# Live variables in the kernel:\n# df: DataFrame shape (3, 1); columns: a int64\n\n' +
      '# Earlier cells of analysis.ipynb:\n\n# In[1]:\nimport pandas as pd\n\n# In[3]:\ndf = pd.read_csv(\'x.csv\')'
  );
  const many = Array.from({ length: 50 }, (_, i) => ({ index: i + 1, source: `x${i} = ${'1'.repeat(200)}` }));
  const bounded = composeContext({ cells: many }, 1000)!;
  assert.ok(bounded.length <= 1000, `${bounded.length} chars`);
  assert.ok(bounded.includes('# In[50]:'), 'the nearest cell is kept');
  assert.ok(!bounded.includes('# In[1]:'), 'the farthest is dropped');
  assert.equal(composeContext({}), undefined);
});

// -- requests ------------------------------------------------------------------------------------------------------

/** A completeInline that answers when told, and records aborts. */
class ScriptedCompleter {
  calls: { params: CompletionInlineParams; signal?: AbortSignal; resolve: (r: CompletionInlineResult) => void }[] = [];
  aborted = 0;

  completeInline(params: CompletionInlineParams, signal?: AbortSignal): Promise<CompletionInlineResult> {
    return new Promise((resolve, reject) => {
      signal?.addEventListener('abort', () => {
        this.aborted++;
        reject(new RpcError(REQUEST_CANCELLED, 'cancelled'));
      });
      this.calls.push({ params, signal, resolve });
    });
  }

  answer(index: number, text: string, docVersion?: number): void {
    const call = this.calls[index];
    const position = call.params.position;
    call.resolve({ items: [{ text, range: { start: position, end: position }, docVersion: docVersion ?? call.params.docVersion }] });
  }
}

function documentWatch() {
  const listeners = new Set<(text: string) => void>();
  return {
    watch: (onChange: (text: string) => void) => {
      listeners.add(onChange);
      return () => listeners.delete(onChange);
    },
    type: (text: string) => [...listeners].forEach(l => l(text)),
    get watchers() {
      return listeners.size;
    }
  };
}

test('a suggestion comes back as the text to insert, with the request numbered and positioned', async () => {
  const server = new ScriptedCompleter();
  const requests = new InlineRequests(server);
  const doc = {};
  const pending = requests.request({ document: doc, text: 'df.', cursor: 3, path: 'a.ipynb#cell-2', context: '# ctx' });
  await tick();
  assert.deepEqual(server.calls[0].params, {
    docText: 'df.',
    docVersion: 1,
    position: { line: 1, character: 4 },
    path: 'a.ipynb#cell-2',
    context: '# ctx'
  });
  server.answer(0, 'head()');
  assert.deepEqual(await pending, { kind: 'suggestion', insertText: 'head()' });
  assert.deepEqual(requests.stats, { requests: 1, cancelled: 0, answered: 1, stale: 0, suggested: 1, errors: 0 });
});

test('a keystroke aborts the pending request; a change that leaves the text alone does not', async () => {
  const server = new ScriptedCompleter();
  const requests = new InlineRequests(server);
  const doc = {};
  const edits = documentWatch();
  const pending = requests.request({ document: doc, text: 'df.', cursor: 3, watch: edits.watch });
  await tick();
  edits.type('df.'); // metadata or outputs changed: same source
  assert.equal(server.aborted, 0);
  edits.type('df.h');
  assert.equal(server.aborted, 1);
  assert.deepEqual(await pending, { kind: 'none' });
  assert.equal(requests.stats.cancelled, 1);
  assert.equal(edits.watchers, 0, 'the watch ends with the request');
});

test('a newer request supersedes the older one; answers for an older version are dropped', async () => {
  const server = new ScriptedCompleter();
  const requests = new InlineRequests(server);
  const doc = {};
  const first = requests.request({ document: doc, text: 'a', cursor: 1 });
  await tick();
  const second = requests.request({ document: doc, text: 'ab', cursor: 2 });
  await tick();
  assert.equal(server.aborted, 1, 'the first was aborted');
  assert.deepEqual(await first, { kind: 'none' });
  assert.equal(server.calls[1].params.docVersion, 3, 'versions only grow (the cancellation bumped it too)');
  server.answer(1, 'c', 2); // an item for another version
  assert.deepEqual(await second, { kind: 'none' });
  assert.equal(requests.stats.stale, 1);

  const other = {};
  const third = requests.request({ document: other, text: 'x', cursor: 1 });
  await tick();
  assert.equal(server.aborted, 1, 'another document has its own request');
  server.calls[2].resolve({ error: { type: 'info', message: 'No suggestions found' } });
  assert.deepEqual(await third, { kind: 'error', type: 'info', message: 'No suggestions found' });
});

test('a request that takes too long is cancelled', async () => {
  const server = new ScriptedCompleter();
  const clock = new ManualClock();
  const requests = new InlineRequests(server, clock);
  const pending = requests.request({ document: {}, text: 'a', cursor: 1, timeoutMs: 5000 });
  await tick();
  clock.advance(4999);
  assert.equal(server.aborted, 0);
  clock.advance(1);
  assert.equal(server.aborted, 1);
  assert.deepEqual(await pending, { kind: 'none' });
});

// -- over the wire -------------------------------------------------------------------------------------------------

function connectedClient() {
  const sockets: FakeSocket[] = [];
  const handlers: Record<string, (params: any) => unknown> = {
    initialize: () => ({}),
    'chat/list': () => ({ chats: [] }),
    'rewrite/prompt': () => ({ status: 'prompting', model: 'openai/gpt-4.1' })
  };
  const factory = (url: string) => {
    const socket = new FakeSocket(url);
    const send = socket.send.bind(socket);
    socket.send = (data: string) => {
      send(data);
      const message = JSON.parse(data);
      const handler = message.id !== undefined ? handlers[message.method] : undefined;
      if (handler) {
        const result = handler(message.params);
        queueMicrotask(() => socket.receive({ jsonrpc: '2.0', id: message.id, result }));
      }
    };
    sockets.push(socket);
    return socket;
  };
  const client = new EcaClient({
    url: 'ws://lab/api/eca/v1/ws',
    createSocket: factory,
    clock: new ManualClock(),
    store: new ChatStore(() => undefined),
    newId: () => 'chat-1'
  });
  return { client, socket: () => sockets[sockets.length - 1] };
}

test('aborting completion/inline rejects at once and sends $/cancelRequest for its id', async () => {
  const { client, socket } = connectedClient();
  client.connect();
  socket().open();
  await tick(10);
  const controller = new AbortController();
  const pending = client.completeInline(
    { docText: 'x', docVersion: 1, position: { line: 1, character: 2 } },
    controller.signal
  );
  await tick();
  const request = socket().last('completion/inline');
  assert.ok(request, 'the request went out');
  controller.abort();
  await assert.rejects(pending, (error: any) => error instanceof RpcError && error.code === REQUEST_CANCELLED);
  assert.deepEqual(socket().last('$/cancelRequest').params, { id: request.id });
  // The server's late answer is ignored.
  socket().receive({ jsonrpc: '2.0', id: request.id, error: { code: REQUEST_CANCELLED, message: 'cancelled' } });
  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(
    client.completeInline({ docText: 'x', docVersion: 2, position: { line: 1, character: 2 } }, aborted.signal)
  );
  assert.equal(socket().sent.filter(m => m.method === 'completion/inline').length, 1, 'an aborted call never goes out');
});

test('rewrite contents reach their listener, from the first one on, until finished', async () => {
  const { client, socket } = connectedClient();
  client.connect();
  socket().open();
  await tick(10);
  const seen: RewriteContent[] = [];
  const range = { start: { line: 1, character: 1 }, end: { line: 1, character: 2 } };
  const pending = client.rewrite({ id: 'r1', text: 'x', prompt: 'y', range }, content => seen.push(content));
  // The server streams right after its answer; here even before it arrives.
  socket().receive({ jsonrpc: '2.0', method: 'rewrite/contentReceived', params: { rewriteId: 'r1', content: { type: 'started' } } });
  assert.deepEqual(await pending, { status: 'prompting', model: 'openai/gpt-4.1' });
  const send = (content: unknown, rewriteId = 'r1') =>
    socket().receive({ jsonrpc: '2.0', method: 'rewrite/contentReceived', params: { rewriteId, content } });
  send({ type: 'text', text: 'a' });
  send({ type: 'text', text: 'b' }, 'other');
  send({ type: 'finished', totalTimeMs: 12 });
  send({ type: 'text', text: 'late' });
  assert.deepEqual(seen.map(c => c.type), ['started', 'text', 'finished']);

  await client.stopRewrite('r1');
  assert.deepEqual(socket().last('rewrite/stop').params, { id: 'r1' });

  const lost: RewriteContent[] = [];
  await client.rewrite({ id: 'r2', text: 'x', prompt: 'y', range }, content => lost.push(content));
  socket().drop();
  assert.deepEqual(lost, [
    { type: 'error', message: 'the connection to the ECA server was lost' },
    { type: 'finished', totalTimeMs: 0 }
  ]);
});

test('the same failure is shown at most once a minute', () => {
  let now = 0;
  const throttle = new WarningThrottle(60000, () => now);
  assert.ok(throttle.shouldShow('No API key'));
  now = 59999;
  assert.ok(!throttle.shouldShow('No API key'));
  assert.ok(throttle.shouldShow('The model timed out'), 'another message is shown');
  now = 60000;
  assert.ok(throttle.shouldShow('No API key'));
});
