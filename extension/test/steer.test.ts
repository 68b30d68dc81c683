import { test } from 'node:test';
import assert from 'node:assert/strict';

import { EcaClient } from '../src/client';
import { ChatStore } from '../src/model';
import { FakeSocket, ManualClock, tick } from './fakes';

/** The other end of the fake socket: answers requests from a table, records what the client sent. */
class Server {
  sockets: FakeSocket[] = [];
  killed: string[] = [];
  handlers: Record<string, (params: any) => unknown> = {
    initialize: () => ({}),
    'chat/list': () => ({ chats: [] }),
    'chat/open': () => ({ found: true }),
    'chat/prompt': (params: any) => ({ chatId: params.chatId, status: 'prompting' }),
    'jobs/list': () => ({ jobs: [job('job-1', 'running')] }),
    'jobs/kill': (params: any) => {
      this.killed.push(params.jobId);
      return { killed: true };
    }
  };

  factory = (url: string) => {
    const socket = new FakeSocket(url);
    const send = socket.send.bind(socket);
    socket.send = (data: string) => {
      send(data);
      const message = JSON.parse(data);
      const handler = message.method && message.id !== undefined ? this.handlers[message.method] : undefined;
      if (handler) {
        const result = handler(message.params);
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

  sent(method: string): any[] {
    return this.socket.sent.filter(m => m.method === method).map(m => m.params);
  }
}

function job(id: string, status: string, chatId = 'new-1') {
  return {
    id, type: 'shell', status, label: 'python train.py', summary: 'training', startedAt: '2026-01-01T00:00:00+00:00',
    elapsed: '3s', exitCode: null, chatId, chatLabel: 'Train'
  };
}

async function started() {
  const server = new Server();
  let n = 0;
  const client = new EcaClient({
    url: 'ws://lab/api/eca/v1/ws',
    createSocket: server.factory,
    clock: new ManualClock(),
    store: new ChatStore(() => undefined),
    newId: () => `new-${++n}`
  });
  client.connect();
  server.socket.open();
  await tick(10);
  await client.prompt('train the model');
  const chat = client.store.current!;
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'running' });
  return { server, client, chat };
}

test('a steer is sent at once, pending until the server shows it taken in', async () => {
  const { server, client, chat } = await started();
  assert.equal(client.steer('use pandas'), chat.steering[0]);
  client.steer('not csv');
  await tick(5);
  assert.deepEqual(server.sent('chat/promptSteer'), [
    { chatId: chat.id, message: 'use pandas' },
    { chatId: chat.id, message: 'not csv' }
  ]);
  assert.deepEqual(chat.steering.map(s => s.message), ['use pandas', 'not csv']);
  // the round boundary: the server takes both in as one user message
  server.notify('chat/contentReceived', {
    chatId: chat.id, role: 'user', content: { type: 'text', text: 'use pandas\nnot csv\n', contentId: 'c-9' }
  });
  assert.deepEqual(chat.steering, []);
  assert.equal(chat.items[chat.items.length - 1].kind, 'user');
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'idle' });
  await tick(5);
  assert.equal(server.sent('chat/prompt').length, 1, 'taken in: nothing is resent');
});

test('removing one steer takes all back on the server and sends the others again; left ones become a prompt', async () => {
  const { server, client, chat } = await started();
  const first = client.steer('first')!;
  client.steer('second');
  assert.ok(client.removeSteer(chat.id, first.id));
  assert.ok(!client.removeSteer(chat.id, first.id), 'gone already');
  await tick(5);
  assert.deepEqual(server.sent('chat/promptSteerRemove'), [{ chatId: chat.id }]);
  assert.deepEqual(server.sent('chat/promptSteer').map(p => p.message), ['first', 'second', 'second']);
  // the answer ends before the next round: the steer is sent as the chat's next prompt
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'idle' });
  await tick(5);
  assert.deepEqual(server.sent('chat/prompt').map(p => p.message), ['train the model', 'second']);
  assert.deepEqual(chat.steering, []);
  server.notify('chat/statusChanged', { chatId: chat.id, status: 'idle' });
  assert.equal(client.steer('idle now'), null, 'nothing runs: not a steer');
});

test('jobs come from jobs/list and jobs/updated; killJob asks the server', async () => {
  const { server, client, chat } = await started();
  assert.deepEqual(client.jobs.map(j => j.id), ['job-1']);
  server.notify('jobs/updated', { jobs: [job('job-1', 'running', chat.id), job('job-2', 'running', chat.id)] });
  assert.deepEqual(client.jobs.map(j => j.id), ['job-1', 'job-2']);
  assert.equal(await client.killJob('job-2'), true);
  assert.deepEqual(server.killed, ['job-2']);
});
