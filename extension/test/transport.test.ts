import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CONNECTION_LOST, JsonRpcTransport, METHOD_NOT_FOUND, RpcError } from '../src/transport';
import { FakeSocket, ManualClock, tick } from './fakes';

function setup(handshake?: (t: JsonRpcTransport) => Promise<void>) {
  const sockets: FakeSocket[] = [];
  const clock = new ManualClock();
  const transport = new JsonRpcTransport({
    url: 'ws://example/api/eca/v1/ws',
    createSocket: url => {
      const socket = new FakeSocket(url);
      sockets.push(socket);
      return socket;
    },
    handshake,
    clock,
    backoff: { initialMs: 500, maxMs: 4000, factor: 2, jitter: 0.2 }
  });
  return { transport, sockets, clock };
}

/** A handshake like the ECA client's: initialize (answered by the test), then initialized. */
async function ecaHandshake(t: JsonRpcTransport): Promise<void> {
  await t.requestNow('initialize', { workspaceFolders: [] });
  t.notifyNow('initialized', {});
}

async function answerInitialize(socket: FakeSocket): Promise<void> {
  await tick();
  const init = socket.last('initialize');
  assert.ok(init, 'initialize was sent');
  socket.receive({ jsonrpc: '2.0', id: init.id, result: {} });
  await tick();
}

test('calls made before the handshake wait for it, and go out after initialize/initialized', async () => {
  const { transport, sockets } = setup(ecaHandshake);
  transport.connect();
  const listed = transport.request('chat/list', {});
  void transport.notify('chat/selectedModelChanged', { model: 'm' });
  const socket = sockets[0];
  socket.open();
  await tick();
  assert.deepEqual(socket.methods(), ['initialize'], 'nothing overtakes initialize');
  assert.equal(transport.state, 'handshaking');
  await answerInitialize(socket);
  assert.equal(transport.state, 'open');
  assert.deepEqual(socket.methods(), ['initialize', 'initialized', 'chat/list', 'chat/selectedModelChanged']);
  const request = socket.last('chat/list');
  socket.receive({ jsonrpc: '2.0', id: request.id, result: { chats: [] } });
  assert.deepEqual(await listed, { chats: [] });
});

test('responses are matched by id, errors become RpcError with the code', async () => {
  const { transport, sockets } = setup();
  transport.connect();
  sockets[0].open();
  await tick();
  const first = transport.request('a');
  const second = transport.request('b');
  const [ma, mb] = sockets[0].sent;
  sockets[0].receive({ jsonrpc: '2.0', id: mb.id, error: { code: -32602, message: 'bad', data: { x: 1 } } });
  sockets[0].receive({ jsonrpc: '2.0', id: ma.id, result: 42 });
  assert.equal(await first, 42);
  await assert.rejects(second, (error: unknown) => {
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, -32602);
    assert.deepEqual(error.data, { x: 1 });
    return true;
  });
});

test('server requests are answered; unknown ones get METHOD_NOT_FOUND', async () => {
  const { transport, sockets } = setup();
  transport.onRequest('editor/getDiagnostics', async (params: any) => ({ diagnostics: [], uri: params.uri }));
  transport.connect();
  const socket = sockets[0];
  socket.open();
  await tick();
  socket.receive({ jsonrpc: '2.0', id: 'abc', method: 'editor/getDiagnostics', params: { uri: 'x.py' } });
  socket.receive({ jsonrpc: '2.0', id: 7, method: 'no/such', params: {} });
  await tick();
  const answers = socket.sent.filter(m => m.method === undefined);
  assert.deepEqual(answers.find(m => m.id === 'abc'), {
    jsonrpc: '2.0',
    id: 'abc',
    result: { diagnostics: [], uri: 'x.py' }
  });
  assert.equal(answers.find(m => m.id === 7).error.code, METHOD_NOT_FOUND);
});

test('$/cancelRequest aborts the signal of the request it names; the handler still answers', async () => {
  const { transport, sockets } = setup();
  const signals = new Map<number, AbortSignal>();
  const release = new Map<number, () => void>();
  transport.onRequest('notebook/runCells', (params: any, signal: AbortSignal) => {
    signals.set(params.n, signal);
    return new Promise(resolve => {
      const done = () => resolve({ n: params.n, aborted: signal.aborted });
      release.set(params.n, done);
      signal.addEventListener('abort', done);
    });
  });
  transport.connect();
  const socket = sockets[0];
  socket.open();
  await tick();
  socket.receive({ jsonrpc: '2.0', id: 1, method: 'notebook/runCells', params: { n: 1 } });
  socket.receive({ jsonrpc: '2.0', id: 2, method: 'notebook/runCells', params: { n: 2 } });
  await tick();
  socket.receive({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 2 } });
  await tick();
  assert.equal(signals.get(1)!.aborted, false);
  assert.equal(signals.get(2)!.aborted, true);
  assert.deepEqual(socket.sent.find(m => m.id === 2), { jsonrpc: '2.0', id: 2, result: { n: 2, aborted: true } });
  release.get(1)!();
  await tick();
  assert.deepEqual(socket.sent.find(m => m.id === 1), { jsonrpc: '2.0', id: 1, result: { n: 1, aborted: false } });
  // A cancel for a request already answered (or never seen) is harmless.
  socket.receive({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 1 } });
  socket.receive({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id: 99 } });
  await tick();
  assert.equal(signals.get(1)!.aborted, false);
});

test('notifications reach their handlers; non-JSON messages are ignored and the transport keeps working', async () => {
  const { transport, sockets } = setup();
  const seen: any[] = [];
  const all: string[] = [];
  transport.onNotification('chat/contentReceived', params => seen.push(params));
  transport.onAnyNotification(method => all.push(method));
  transport.connect();
  sockets[0].open();
  await tick();
  sockets[0].receive('this is not json {');
  sockets[0].receive([
    { jsonrpc: '2.0', method: 'chat/contentReceived', params: { chatId: 'c', n: 1 } },
    { jsonrpc: '2.0', method: '$/progress', params: {} }
  ]);
  sockets[0].receive({ jsonrpc: '2.0', method: 'chat/contentReceived', params: { chatId: 'c', n: 2 } });
  assert.deepEqual(
    seen.map(p => p.n),
    [1, 2]
  );
  assert.deepEqual(all, ['chat/contentReceived', '$/progress', 'chat/contentReceived']);
  assert.equal(transport.state, 'open');
});

test('a dropped connection fails in-flight requests, reconnects with growing delays and handshakes again', async () => {
  const { transport, sockets, clock } = setup(ecaHandshake);
  const states: string[] = [];
  transport.onStateChange(state => states.push(state));
  transport.connect();
  sockets[0].open();
  await answerInitialize(sockets[0]);
  assert.equal(transport.connections, 1);

  const inflight = transport.request('chat/prompt', { message: 'hi' });
  sockets[0].drop();
  await assert.rejects(inflight, (error: any) => error.code === CONNECTION_LOST);
  assert.equal(transport.state, 'reconnecting');

  // Attempts 1 and 2 fail (server still down): delays grow 500 → 1000 → 2000 (jitter neutral at random()=0.5).
  clock.advance(499);
  assert.equal(sockets.length, 1, 'no reconnect before the delay');
  clock.advance(1);
  assert.equal(sockets.length, 2);
  sockets[1].drop();
  clock.advance(1000);
  assert.equal(sockets.length, 3);
  sockets[2].drop();
  clock.advance(1999);
  assert.equal(sockets.length, 3);
  clock.advance(1);
  assert.equal(sockets.length, 4);

  // A call made while down waits, then goes out after the new handshake.
  const waiting = transport.request('chat/list', {});
  sockets[3].open();
  await answerInitialize(sockets[3]);
  assert.equal(transport.connections, 2);
  assert.deepEqual(sockets[3].methods(), ['initialize', 'initialized', 'chat/list']);
  sockets[3].receive({ jsonrpc: '2.0', id: sockets[3].last('chat/list').id, result: { chats: [1] } });
  assert.deepEqual(await waiting, { chats: [1] });
  assert.deepEqual(states, ['connecting', 'handshaking', 'open', 'reconnecting', 'handshaking', 'open']);
});

test('the backoff is capped and resets after a successful connection', () => {
  const { transport } = setup();
  const delays = [0, 1, 2, 3, 4, 5, 6].map(n => transport.retryDelay(n));
  assert.deepEqual(delays, [500, 1000, 2000, 4000, 4000, 4000, 4000]);
});

test('jitter spreads reconnect delays within ±20%', () => {
  const values = [0, 0.25, 0.999];
  const transport = new JsonRpcTransport({
    url: 'ws://x',
    createSocket: url => new FakeSocket(url),
    clock: { setTimeout: () => 0, clearTimeout: () => undefined, random: () => values.shift() ?? 0.5 },
    backoff: { initialMs: 1000, maxMs: 1000, factor: 2, jitter: 0.2 }
  });
  assert.deepEqual([transport.retryDelay(0), transport.retryDelay(0), transport.retryDelay(0)], [800, 900, 1200]);
});

test('a failing handshake closes the socket and retries', async () => {
  const { transport, sockets, clock } = setup(ecaHandshake);
  transport.connect();
  sockets[0].open();
  await tick();
  const init = sockets[0].last('initialize');
  sockets[0].receive({ jsonrpc: '2.0', id: init.id, error: { code: -32603, message: 'engine failed' } });
  await tick();
  assert.ok(sockets[0].closed);
  assert.equal(transport.state, 'reconnecting');
  clock.advance(500);
  assert.equal(sockets.length, 2);
});

test('a request with a timeout fails when no answer comes', async () => {
  const { transport, sockets, clock } = setup();
  transport.connect();
  sockets[0].open();
  await tick();
  const slow = transport.request('chat/queryContext', { query: '' }, { timeoutMs: 1000 });
  clock.advance(1000);
  await assert.rejects(slow, (error: any) => error instanceof RpcError && /timed out/.test(error.message));
});

test('dispose fails waiting calls and stops reconnecting', async () => {
  const { transport, sockets, clock } = setup(ecaHandshake);
  transport.connect();
  const waiting = transport.request('chat/list');
  transport.dispose();
  await assert.rejects(waiting, (error: any) => error.code === CONNECTION_LOST);
  assert.equal(transport.state, 'disposed');
  clock.advance(60000);
  assert.equal(sockets.length, 1);
});
