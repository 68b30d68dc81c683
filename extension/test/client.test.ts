import { test } from 'node:test';
import assert from 'node:assert/strict';

import { EcaClient, LAST_CHAT_KEY, NavigationProvider, NotebookProvider } from '../src/client';
import { ChatStore } from '../src/model';
import { FakeSocket, ManualClock, tick } from './fakes';

/** A scripted ECA server on the other end of the fake socket: answers requests from a table of handlers. */
class FakeServer {
  sockets: FakeSocket[] = [];
  handlers: Record<string, (params: any, socket: FakeSocket) => unknown> = {
    initialize: () => ({}),
    'chat/list': () => ({ chats: [] }),
    'chat/open': () => ({ found: true }),
    'chat/prompt': (params: any) => ({ chatId: params.chatId, model: params.model, status: 'prompting' }),
    'chat/delete': () => ({}),
    'chat/queryContext': () => ({ contexts: [{ type: 'file', path: 'hello.py' }] }),
    'chat/queryCommands': () => ({ commands: [{ name: 'doctor', description: 'd', type: 'native', arguments: [] }] })
  };

  factory = (url: string) => {
    const socket = new FakeSocket(url);
    const send = socket.send.bind(socket);
    socket.send = (data: string) => {
      send(data);
      const message = JSON.parse(data);
      const handler = message.method && message.id !== undefined ? this.handlers[message.method] : undefined;
      if (handler) {
        const result = handler(message.params, socket);
        queueMicrotask(() => socket.receive({ jsonrpc: '2.0', id: message.id, result }));
      }
    };
    this.sockets.push(socket);
    return socket;
  };

  get socket(): FakeSocket {
    return this.sockets[this.sockets.length - 1];
  }

  notify(method: string, params: unknown): void {
    this.socket.receive({ jsonrpc: '2.0', method, params });
  }
}

function memoryStorage(): Storage {
  const data = new Map<string, string>();
  return {
    getItem: (key: string) => data.get(key) ?? null,
    setItem: (key: string, value: string) => void data.set(key, value)
  } as any;
}

function setup(
  options: { storage?: Storage; diagnostics?: boolean; notebooks?: NotebookProvider; navigation?: NavigationProvider } = {}
) {
  const server = new FakeServer();
  const clock = new ManualClock();
  const store = new ChatStore(() => undefined);
  const messages: { type: string; message: string }[] = [];
  let n = 0;
  const client = new EcaClient({
    url: 'ws://lab/api/eca/v1/ws',
    createSocket: server.factory,
    clock,
    store,
    storage: options.storage ?? memoryStorage(),
    newId: () => `new-${++n}`,
    diagnostics: options.diagnostics ? () => [] : undefined,
    notebooks: options.notebooks,
    navigation: options.navigation,
    onMessage: message => messages.push(message)
  });
  return { server, clock, client, store, messages };
}

async function connect(server: FakeServer, client: EcaClient): Promise<void> {
  client.connect();
  server.socket.open();
  await tick(10);
}

test('the handshake sends no workspace folders and advertises diagnostics only when answered', async () => {
  for (const diagnostics of [false, true]) {
    const { server, client } = setup({ diagnostics });
    await connect(server, client);
    const init = server.socket.sent[0];
    assert.equal(init.method, 'initialize');
    assert.deepEqual(init.params.workspaceFolders, []);
    assert.equal(init.params.capabilities.codeAssistant.editor.diagnostics, diagnostics);
    assert.equal(server.socket.sent[1].method, 'initialized');
    assert.equal(client.connection, 'open');
  }
});

test('config/updated feeds the pickers; prompts carry the selected model and behavior', async () => {
  const { server, client, store } = setup();
  await connect(server, client);
  server.notify('config/updated', {
    chat: { models: ['openai/gpt-4.1', 'ollama/llama3'], behaviors: ['agent', 'plan'], selectModel: 'openai/gpt-4.1',
            selectBehavior: 'agent', welcomeMessage: 'Hi!' }
  });
  assert.deepEqual(client.config, {
    models: ['openai/gpt-4.1', 'ollama/llama3'],
    behaviors: ['agent', 'plan'],
    model: 'openai/gpt-4.1',
    behavior: 'agent',
    welcomeMessage: 'Hi!'
  });
  await client.selectBehavior('plan');
  const chat = store.current!;
  assert.equal(chat.id, 'new-1', 'a fresh chat is ready after connecting');
  await client.prompt('hello', [{ type: 'file', path: 'a.py' }]);
  const prompt = server.socket.last('chat/prompt');
  assert.deepEqual(prompt.params, {
    chatId: 'new-1',
    message: 'hello',
    contexts: [{ type: 'file', path: 'a.py' }],
    model: 'openai/gpt-4.1',
    behavior: 'plan'
  });
  // A forced selection from the server wins over the user's choice.
  server.notify('config/updated', { chat: { selectBehavior: 'agent' } });
  assert.equal(client.config.behavior, 'agent');
  // Newer servers name them agents too; those names win.
  server.notify('config/updated', {
    chat: { behaviors: ['code', 'plan'], agents: ['code', 'plan', 'reviewer'], selectBehavior: 'code',
            selectAgent: 'reviewer' }
  });
  assert.deepEqual(client.config.behaviors, ['code', 'plan', 'reviewer']);
  assert.equal(client.config.behavior, 'reviewer');
});

test('switching to a chat that was not loaded replays it with chat/open', async () => {
  const { server, client, store } = setup();
  server.handlers['chat/list'] = () => ({
    chats: [{ id: 'saved', title: 'Saved chat', status: 'idle', messageCount: 2, updatedAt: 5 }]
  });
  server.handlers['chat/open'] = (params: any, socket: FakeSocket) => {
    // The server replays before answering.
    socket.receive({ jsonrpc: '2.0', method: 'chat/opened', params: { chatId: params.chatId, title: 'Saved chat' } });
    socket.receive({
      jsonrpc: '2.0',
      method: 'chat/contentReceived',
      params: { chatId: params.chatId, role: 'user', content: { type: 'text', text: 'old question\n' } }
    });
    return { found: true, title: 'Saved chat' };
  };
  await connect(server, client);
  // Some live content streamed by before the user looked at the chat: it must not be duplicated by the replay.
  server.notify('chat/contentReceived', { chatId: 'saved', role: 'assistant', content: { type: 'text', text: 'x' } });
  await client.selectChat('saved');
  const chat = store.chats.get('saved')!;
  assert.deepEqual(
    chat.items.map(i => [i.kind, (i as any).text]),
    [['user', 'old question']]
  );
  assert.ok(chat.loaded);
  await client.selectChat('saved');
  assert.equal(server.socket.sent.filter(m => m.method === 'chat/open').length, 1, 'a loaded chat is not replayed');
});

test('after a reload the last chat is shown again', async () => {
  const storage = memoryStorage();
  storage.setItem(LAST_CHAT_KEY, 'saved');
  const { server, client, store } = setup({ storage });
  server.handlers['chat/list'] = () => ({ chats: [{ id: 'saved', title: 'T', status: 'idle', messageCount: 1 }] });
  await connect(server, client);
  await tick(10);
  assert.equal(store.currentId, 'saved');
  assert.ok(server.socket.last('chat/open'), 'the chat was replayed');
});

test('after a server restart the client handshakes again, refreshes the list and replays the current chat', async () => {
  const { server, client, store, clock } = setup();
  await connect(server, client);
  await client.prompt('first');
  server.notify('chat/contentReceived', { chatId: 'new-1', role: 'user', content: { type: 'text', text: 'first\n' } });
  server.socket.drop();
  assert.equal(client.connection, 'reconnecting');
  clock.advance(10000);
  server.socket.open();
  await tick(10);
  assert.equal(client.connection, 'open');
  assert.equal(client.handshakes, 2);
  assert.deepEqual(server.socket.methods().slice(0, 4), ['initialize', 'initialized', 'chat/list', 'chat/open']);
  assert.equal(server.socket.last('chat/open').params.chatId, 'new-1');
  assert.equal(store.currentId, 'new-1');
});

test('approve and reject hide the buttons at once and tell the server', async () => {
  const { server, client, store } = setup();
  await connect(server, client);
  const call = { origin: 'native', id: 'call_1', name: 'edit_file', server: 'eca', arguments: {}, manualApproval: true };
  server.notify('chat/contentReceived', { chatId: 'new-1', role: 'assistant', content: { type: 'toolCallRun', ...call } });
  const card: any = store.chats.get('new-1')!.items[0];
  assert.equal(card.state, 'waiting');
  await client.approve('new-1', 'call_1', 'session');
  assert.equal(card.state, 'approved');
  assert.deepEqual(server.socket.last('chat/toolCallApprove').params, {
    chatId: 'new-1',
    toolCallId: 'call_1',
    save: 'session'
  });
  await client.reject('new-1', 'call_2');
  assert.deepEqual(server.socket.last('chat/toolCallReject').params, { chatId: 'new-1', toolCallId: 'call_2' });
});

test('deleting the current chat tells the server and starts a new one; chat/deleted from another tab too', async () => {
  const { server, client, store } = setup();
  await connect(server, client);
  await client.prompt('hello');
  await client.deleteChat('new-1');
  assert.deepEqual(server.socket.last('chat/delete').params, { chatId: 'new-1' });
  assert.equal(store.currentId, 'new-2');
  server.notify('chat/opened', { chatId: 'other', title: 'Other tab' });
  assert.equal(store.chats.get('other')!.title, 'Other tab');
  server.notify('chat/deleted', { chatId: 'other' });
  assert.ok(!store.chats.has('other'));
});

test('completions come from chat/queryContext and chat/queryCommands', async () => {
  const { server, client } = setup();
  await connect(server, client);
  assert.deepEqual(await client.queryContext('hel'), [{ type: 'file', path: 'hello.py' }]);
  assert.deepEqual(server.socket.last('chat/queryContext').params, { query: 'hel', contexts: [] });
  const commands = await client.queryCommands('doc');
  assert.equal(commands[0].name, 'doctor');
});

/** A notebook provider that records its calls; runCells waits until the signal aborts when `hang` is set. */
function fakeNotebooks(hang = false) {
  const calls: { method: string; params: any; signal?: AbortSignal }[] = [];
  const provider: NotebookProvider = {
    getCells: params => {
      calls.push({ method: 'getCells', params });
      return params.path.endsWith('/open.ipynb')
        ? { open: true, cells: [{ id: 'c1', index: 0, cellType: 'code', source: 'x = 1' }] }
        : { open: false, cells: [] };
    },
    applyEdit: params => {
      calls.push({ method: 'applyEdit', params });
      return { open: true, applied: true };
    },
    runCells: (params, signal) => {
      calls.push({ method: 'runCells', params, signal });
      if (!hang) {
        return Promise.resolve({ open: true, runs: [{ id: 'c1', index: 0, status: 'ok', outputs: [] }] });
      }
      return new Promise(resolve =>
        signal!.addEventListener('abort', () =>
          resolve({ open: true, runs: [{ id: 'c1', index: 0, status: 'error', outputs: [] }], error: 'cancelled' })
        )
      );
    }
  };
  return { provider, calls };
}

test('the notebooks capability is advertised only with a provider, and then notebook/* requests are served', async () => {
  {
    const { server, client } = setup();
    await connect(server, client);
    assert.equal(server.socket.sent[0].params.capabilities.codeAssistant.editor.notebooks, false);
    server.socket.receive({ jsonrpc: '2.0', id: 'g0', method: 'notebook/getCells', params: { path: '/w/open.ipynb' } });
    await tick();
    assert.equal(server.socket.sent.find(m => m.id === 'g0').error.code, -32601);
  }
  const { provider, calls } = fakeNotebooks();
  const { server, client } = setup({ notebooks: provider });
  await connect(server, client);
  assert.equal(server.socket.sent[0].params.capabilities.codeAssistant.editor.notebooks, true);
  server.socket.receive({ jsonrpc: '2.0', id: 'g1', method: 'notebook/getCells', params: { path: '/w/open.ipynb' } });
  server.socket.receive({ jsonrpc: '2.0', id: 'g2', method: 'notebook/getCells', params: { path: '/w/closed.ipynb' } });
  const edit = { path: '/w/open.ipynb', edits: [{ action: 'delete', cellId: 'c1', expectedSource: 'x = 1' }] };
  server.socket.receive({ jsonrpc: '2.0', id: 'e1', method: 'notebook/applyEdit', params: edit });
  server.socket.receive({
    jsonrpc: '2.0',
    id: 'r1',
    method: 'notebook/runCells',
    params: { path: '/w/open.ipynb', cellIds: ['c1'], timeoutMs: 1000 }
  });
  await tick();
  const answer = (id: string) => server.socket.sent.find(m => m.id === id);
  assert.equal(answer('g1').result.cells[0].id, 'c1');
  assert.deepEqual(answer('g2').result, { open: false, cells: [] });
  assert.deepEqual(answer('e1').result, { open: true, applied: true });
  assert.deepEqual(calls[2].params, edit);
  assert.equal(answer('r1').result.runs[0].status, 'ok');
  assert.deepEqual(calls[3].params.cellIds, ['c1']);
});

test('$/cancelRequest of notebook/runCells reaches the provider as an aborted signal', async () => {
  const { provider, calls } = fakeNotebooks(true);
  const { server, client } = setup({ notebooks: provider });
  await connect(server, client);
  server.socket.receive({ jsonrpc: '2.0', id: 7, method: 'notebook/runCells', params: { path: '/w/open.ipynb', cellIds: ['c1'] } });
  await tick();
  assert.equal(calls[0].signal!.aborted, false);
  assert.equal(server.socket.sent.find(m => m.id === 7), undefined);
  server.notify('$/cancelRequest', { id: 7 });
  await tick();
  assert.equal(calls[0].signal!.aborted, true);
  assert.equal(server.socket.sent.find(m => m.id === 7).result.error, 'cancelled');
});

test('undoToolCall sends chat/toolCallUndo and marks the card undone; a refusal is shown as a message', async () => {
  const { server, client, store, messages } = setup();
  await connect(server, client);
  let answer = { undone: true, message: 'Undone.' };
  server.handlers['chat/toolCallUndo'] = () => answer;
  const call = { origin: 'native', id: 'call_1', name: 'edit_notebook', server: 'eca' };
  const details = {
    type: 'fileChange',
    path: '/w/analysis.ipynb',
    diff: '-a\n+b\n',
    linesAdded: 1,
    linesRemoved: 1,
    cellId: 'c1',
    undoable: true
  };
  server.notify('chat/contentReceived', {
    chatId: 'new-1',
    role: 'assistant',
    content: { type: 'toolCalled', ...call, arguments: {}, error: false, outputs: [], details }
  });
  const chat = store.chats.get('new-1')!;
  const card: any = chat.items[0];
  assert.equal(card.state, 'done');
  assert.equal(card.details.undoable, true);
  const version = card.version;
  const result = await client.undoToolCall('new-1', 'call_1');
  assert.equal(result.undone, true);
  assert.deepEqual(server.socket.last('chat/toolCallUndo').params, { chatId: 'new-1', toolCallId: 'call_1' });
  assert.equal(card.undone, true);
  assert.ok(card.version > version);
  assert.deepEqual(messages, []);

  answer = { undone: false, message: 'cell c1 changed since the edit' };
  const refused = await client.undoToolCall('new-1', 'call_2');
  assert.equal(refused.undone, false);
  assert.deepEqual(messages, [{ type: 'warning', message: 'cell c1 changed since the edit' }]);
});

test('rewind sends chat/rollback; chat/cleared drops the messages and the replay rebuilds them', async () => {
  const { server, client, store } = setup();
  await connect(server, client);
  server.handlers['chat/rollback'] = (params: any, socket) => {
    const chatId = params.chatId;
    queueMicrotask(() => {
      socket.receive({ jsonrpc: '2.0', method: 'chat/cleared', params: { chatId, messages: true } });
      socket.receive({
        jsonrpc: '2.0',
        method: 'chat/contentReceived',
        params: { chatId, role: 'user', content: { type: 'text', text: 'one\n', contentId: 'c1' } }
      });
    });
    return {};
  };
  for (const [text, contentId] of [
    ['one\n', 'c1'],
    ['two\n', 'c2']
  ]) {
    server.notify('chat/contentReceived', { chatId: 'new-1', role: 'user', content: { type: 'text', text, contentId } });
  }
  const chat = store.chats.get('new-1')!;
  assert.deepEqual(
    chat.items.map((i: any) => [i.text, i.contentId]),
    [
      ['one', 'c1'],
      ['two', 'c2']
    ]
  );
  await client.rewind('new-1', 'c2', false);
  await tick(10);
  assert.deepEqual(server.socket.last('chat/rollback').params, { chatId: 'new-1', contentId: 'c2', include: ['messages'] });
  assert.deepEqual(
    chat.items.map((i: any) => i.text),
    ['one']
  );
  await client.rewind('new-1', 'c1');
  assert.deepEqual(server.socket.last('chat/rollback').params.include, ['messages', 'tools']);
});

test('fork sends chat/fork and shows the new chat without replaying it again', async () => {
  const { server, client, store } = setup();
  await connect(server, client);
  server.handlers['chat/fork'] = (_params: any, socket) => {
    socket.receive({ jsonrpc: '2.0', method: 'chat/opened', params: { chatId: 'forked', title: 'One (2)' } });
    socket.receive({
      jsonrpc: '2.0',
      method: 'chat/contentReceived',
      params: { chatId: 'forked', role: 'user', content: { type: 'text', text: 'one\n', contentId: 'c1' } }
    });
    return { chatId: 'forked' };
  };
  server.notify('chat/contentReceived', {
    chatId: 'new-1',
    role: 'user',
    content: { type: 'text', text: 'one\n', contentId: 'c1' }
  });
  const id = await client.fork('new-1', 'c1');
  assert.equal(id, 'forked');
  assert.deepEqual(server.socket.last('chat/fork').params, { chatId: 'new-1', contentId: 'c1' });
  assert.equal(store.currentId, 'forked');
  const forked = store.chats.get('forked')!;
  assert.equal(forked.title, 'One (2)');
  assert.deepEqual(
    forked.items.map((i: any) => i.text),
    ['one']
  );
  assert.equal(server.socket.methods().filter(m => m === 'chat/open').length, 0);
});

test('editor/getDefinition and getReferences are advertised and answered only with a navigation provider', async () => {
  {
    const { server, client } = setup();
    await connect(server, client);
    const editor = server.socket.sent[0].params.capabilities.codeAssistant.editor;
    assert.equal(editor.definition, false);
    assert.equal(editor.references, false);
    server.socket.receive({ jsonrpc: '2.0', id: 'd0', method: 'editor/getDefinition', params: {} });
    await tick();
    assert.equal(server.socket.sent.find(m => m.id === 'd0').error.code, -32601);
  }
  const asked: unknown[] = [];
  const location = { uri: 'file:///w/a.py', range: { start: { line: 1, character: 5 }, end: { line: 1, character: 9 } } };
  const navigation: NavigationProvider = {
    definition: async params => (asked.push(params), { status: 'success', locations: [location] }),
    references: async params => (asked.push(params), { status: 'no-server', message: 'off' })
  };
  const { server, client } = setup({ navigation });
  await connect(server, client);
  const editor = server.socket.sent[0].params.capabilities.codeAssistant.editor;
  assert.equal(editor.definition, true);
  assert.equal(editor.references, true);
  const position = { line: 3, character: 7 };
  server.socket.receive({ jsonrpc: '2.0', id: 'd1', method: 'editor/getDefinition', params: { uri: 'file:///w/b.py', position } });
  server.socket.receive({
    jsonrpc: '2.0',
    id: 'r1',
    method: 'editor/getReferences',
    params: { uri: 'file:///w/b.py', position, includeDeclaration: false }
  });
  await tick();
  assert.deepEqual(server.socket.sent.find(m => m.id === 'd1').result, { status: 'success', locations: [location] });
  assert.deepEqual(server.socket.sent.find(m => m.id === 'r1').result, { status: 'no-server', message: 'off' });
  assert.deepEqual(asked[1], { uri: 'file:///w/b.py', position, includeDeclaration: false });
});

test('the trust toggle: a new chat sends it with its first prompt, a known one with chat/update; per chat', async () => {
  const { server, client, store } = setup();
  server.handlers['chat/update'] = () => ({});
  await connect(server, client);
  assert.equal(client.trustOf(), false, 'off unless the server or the user says otherwise');
  // a new chat: nothing to update yet, the toggle goes out with the first prompt
  await client.setTrust(true);
  assert.equal(server.socket.last('chat/update'), undefined);
  assert.equal(client.trustOf(), true);
  await client.prompt('write it');
  assert.equal(server.socket.last('chat/prompt').params.trust, true);
  // a known chat: chat/update at once; the server's chat-scoped answer is what the indicator shows
  await client.setTrust(false);
  assert.deepEqual(server.socket.last('chat/update').params, { chatId: 'new-1', trust: false });
  assert.equal(client.trustOf(), false);
  server.notify('config/updated', { chatId: 'new-1', chat: { selectTrust: true } });
  assert.equal(client.trustOf(), true);
  // another chat keeps its own state; a session-wide selectTrust is the default of chats without their own
  client.newChat();
  assert.equal(store.currentId, 'new-2');
  assert.equal(client.trustOf(), false);
  server.notify('config/updated', { chat: { selectTrust: true } });
  assert.equal(client.trustOf(), true, 'the session default');
  server.notify('config/updated', { chatId: 'other', chat: { selectTrust: false } });
  assert.equal(client.trustOf(), true, 'another chat scoped update does not touch this one');
  assert.equal(client.trustOf(store.chats.get('other')), false);
  await client.prompt('hello');
  assert.equal(server.socket.last('chat/prompt').params.trust, undefined, 'untouched: the server decides');
  // reopening a chat: chat/open's chat-scoped config/updated sets its indicator
  server.handlers['chat/open'] = (params: any, socket: FakeSocket) => {
    queueMicrotask(() =>
      socket.receive({ jsonrpc: '2.0', method: 'config/updated', params: { chatId: params.chatId, chat: { selectTrust: false } } })
    );
    return { found: true };
  };
  await client.openChat('new-1');
  await tick(10);
  await client.selectChat('new-1');
  assert.equal(client.trustOf(), false);
});

test('a message sent while the chat runs is queued, removable, and sent by itself when the turn ends', async () => {
  const { server, client, store } = setup();
  await connect(server, client);
  await client.prompt('first');
  const chat = store.current!;
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'running' });
  const second = client.queuePrompt('second', [{ type: 'file', path: 'a.py' }]);
  client.queuePrompt('third');
  const dropped = client.queuePrompt('never mind');
  assert.deepEqual(chat.queued.map(q => q.message), ['second', 'third', 'never mind']);
  assert.equal(server.socket.sent.filter(m => m.method === 'chat/prompt').length, 1, 'nothing sent while running');
  assert.ok(client.removeQueued(chat.id, dropped.id));
  assert.ok(!client.removeQueued(chat.id, dropped.id), 'gone already');

  server.notify('chat/statusChanged', { chatId: chat.id, status: 'idle' });
  await tick(5);
  const prompts = () => server.socket.sent.filter(m => m.method === 'chat/prompt');
  assert.equal(prompts().length, 2, 'the turn ended: the oldest queued message went out');
  assert.deepEqual(prompts()[1].params.message, 'second');
  assert.deepEqual(prompts()[1].params.contexts, [{ type: 'file', path: 'a.py' }], 'with its contexts');
  assert.equal(prompts()[1].params.chatId, chat.id);
  assert.deepEqual(chat.queued.map(q => q.id), [chat.queued[0].id]);
  assert.equal(chat.status, 'running', 'running again until the server says otherwise');
  assert.ok(!client.removeQueued(chat.id, second.id), 'a sent message cannot be taken back');

  server.notify('chat/statusChanged', { chatId: chat.id, status: 'running' });
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'idle' });
  await tick(5);
  assert.deepEqual(prompts().map(p => p.params.message), ['first', 'second', 'third']);
  assert.deepEqual(chat.queued, []);
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'idle' });
  await tick(5);
  assert.equal(prompts().length, 3, 'an empty queue sends nothing');

  client.queuePrompt('when idle');
  await tick(5);
  assert.equal(prompts().length, 4, 'queued on an idle chat: sent at once');
});

test('the open chat is remembered per workspace key, a fresh one too; one the server lost gives a new chat', async () => {
  const storage = memoryStorage();
  const server = new FakeServer();
  server.handlers['chat/list'] = () => ({ chats: [{ id: 'a', title: 'A', status: 'idle', messageCount: 1 }] });
  const opened: string[] = [];
  server.handlers['chat/open'] = (params: any) => {
    opened.push(params.chatId);
    return params.chatId === 'a' || params.chatId === 'running' ? { found: true } : { found: false };
  };
  const make = (key: string) =>
    new EcaClient({
      url: 'ws://lab/api/eca/v1/ws',
      createSocket: server.factory,
      clock: new ManualClock(),
      store: new ChatStore(() => undefined),
      storage,
      lastChatKey: key,
      newId: () => `fresh-${key}`
    });
  const one = make('k:one');
  await connect(server, one);
  assert.equal(one.store.currentId, 'fresh-k:one', 'nothing remembered: a new chat');
  assert.equal(storage.getItem('k:one'), 'fresh-k:one', 'the fresh chat is the open one');
  await one.selectChat('a');
  assert.equal(storage.getItem('k:one'), 'a');
  storage.setItem('k:two', 'running'); // another workspace's open chat: not listed yet, but the server has it

  const again = make('k:one');
  await connect(server, again);
  await tick(10);
  assert.equal(again.store.currentId, 'a', 'the chat open before the reload');
  const two = make('k:two');
  await connect(server, two);
  await tick(10);
  assert.equal(two.store.currentId, 'running', 'an unlisted chat the server still has is opened');
  assert.ok(opened.includes('running'));

  storage.setItem('k:three', 'gone');
  const three = make('k:three');
  await connect(server, three);
  await tick(10);
  assert.equal(three.store.currentId, 'fresh-k:three', 'a chat the server does not have: a new one');
  assert.ok(!three.store.chats.has('gone'));
});

test('a message queued while the connection was down goes out once the chat is found idle again', async () => {
  const { server, client, store, clock } = setup();
  server.handlers['chat/list'] = () => ({ chats: [{ id: 'new-1', title: 'T', status: 'idle', messageCount: 1 }] });
  await connect(server, client);
  await client.prompt('first');
  server.notify('chat/statusChanged', { chatId: 'new-1', status: 'running' });
  client.queuePrompt('next');
  server.socket.drop(); // the turn ends meanwhile: its statusChanged never arrives
  clock.advance(10000);
  server.socket.open();
  await tick(10);
  assert.equal(store.current?.status, 'running', 'the listed idle chat took the queued message');
  assert.deepEqual(
    server.socket.sent.filter(m => m.method === 'chat/prompt').map(m => m.params.message),
    ['next']
  );
});

test('the native tool/serverUpdated gives the custom tools (customTools), not the built-in ones', async () => {
  const { server, client } = setup();
  await connect(server, client);
  server.notify('tool/serverUpdated', {
    type: 'native',
    name: 'ECA',
    status: 'running',
    tools: [
      { name: 'read_file', description: 'Read a file.', parameters: {} },
      { name: 'web-search', description: 'Fetches a URL.', parameters: {}, custom: true },
      { name: 'lint', description: 'Lints.', parameters: {}, custom: true, disabled: true }
    ]
  });
  await tick(5);
  assert.deepEqual(client.customTools, [
    { name: 'web-search', description: 'Fetches a URL.', disabled: false },
    { name: 'lint', description: 'Lints.', disabled: true }
  ]);
  server.notify('tool/serverUpdated', { type: 'mcp', name: 'fs', status: 'running', tools: [] });
  await tick(5);
  assert.equal(client.customTools.length, 2); // an MCP server's update leaves them as they are
});
