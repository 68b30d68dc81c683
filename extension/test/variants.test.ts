import { test } from 'node:test';
import assert from 'node:assert/strict';

import { EcaClient } from '../src/client';
import { ChatStore } from '../src/model';
import { FakeSocket, ManualClock, tick } from './fakes';

/** The server's end of the socket: answers initialize, chat/list and chat/prompt; notifications on demand. */
function setup() {
  const sockets: FakeSocket[] = [];
  const handlers: Record<string, (params: any) => unknown> = {
    initialize: () => ({}),
    'chat/list': () => ({ chats: [] }),
    'chat/prompt': (params: any) => ({ chatId: params.chatId, model: params.model, status: 'prompting' })
  };
  const factory = (url: string) => {
    const socket = new FakeSocket(url);
    const send = socket.send.bind(socket);
    socket.send = (data: string) => {
      send(data);
      const message = JSON.parse(data);
      const handler = message.method && message.id !== undefined ? handlers[message.method] : undefined;
      if (handler) {
        const result = handler(message.params);
        queueMicrotask(() => socket.receive({ jsonrpc: '2.0', id: message.id, result }));
      }
    };
    sockets.push(socket);
    return socket;
  };
  const storage = { getItem: () => null, setItem: () => undefined } as any;
  let n = 0;
  const client = new EcaClient({
    url: 'ws://lab/api/eca/v1/ws', createSocket: factory, clock: new ManualClock(),
    store: new ChatStore(() => undefined), storage, newId: () => `new-${++n}`
  });
  return { client, socket: () => sockets[sockets.length - 1] };
}

test('variants: config/updated feeds the variant picker, a choice goes with chat/selectedModelChanged and prompts', async () => {
  const { client, socket } = setup();
  client.connect();
  socket().open();
  await tick(10);
  const notify = (params: unknown) => socket().receive({ jsonrpc: '2.0', method: 'config/updated', params });
  notify({ chat: { models: ['anthropic/claude-sonnet-4-5', 'openai/gpt-4.1'], selectModel: 'anthropic/claude-sonnet-4-5',
                   variants: ['high', 'low', 'medium'], selectVariant: null } });
  assert.deepEqual(client.config.variants, ['high', 'low', 'medium']);
  assert.equal(client.config.variant, undefined);

  await client.selectVariant('high');
  assert.deepEqual(socket().last('chat/selectedModelChanged').params,
                   { model: 'anthropic/claude-sonnet-4-5', variant: 'high' });
  await client.prompt('think hard', []);
  assert.equal(socket().last('chat/prompt').params.variant, 'high');

  // another model: the variant goes along; the server answers that this model has none (null clears it)
  await client.selectModel('openai/gpt-4.1');
  assert.deepEqual(socket().last('chat/selectedModelChanged').params,
                   { model: 'openai/gpt-4.1', chatId: 'new-1', variant: 'high' });
  notify({ chatId: 'new-1', chat: { variants: [], selectVariant: null } });
  assert.deepEqual(client.config.variants, []);
  assert.equal(client.config.variant, undefined);
  await client.prompt('plain', []);
  assert.equal('variant' in socket().last('chat/prompt').params, false);
});
