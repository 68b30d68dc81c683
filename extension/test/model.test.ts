import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ChatStore, ToolItem, applyContent, awaitingApproval, newChat, resetChat } from '../src/model';

test('assistant text chunks grow one message; user text loses its trailing newline', () => {
  const chat = newChat('c');
  applyContent(chat, 'user', { type: 'text', text: 'hello\n' });
  for (const piece of ['Hel', 'lo ', 'there']) {
    applyContent(chat, 'assistant', { type: 'text', text: piece });
  }
  assert.equal(chat.items.length, 2);
  assert.deepEqual(
    chat.items.map(i => [i.kind, (i as any).text]),
    [
      ['user', 'hello'],
      ['assistant', 'Hello there']
    ]
  );
  assert.equal(chat.items[1].version, 2, 'the message version bumps per appended chunk');
});

test('the tool-call lifecycle folds into one card: prepare → run (approval) → running → called', () => {
  const chat = newChat('c');
  const base = { origin: 'native' as const, id: 'call_1', name: 'edit_file', server: 'eca' };
  applyContent(chat, 'assistant', { type: 'text', text: 'Let me fix it.' });
  applyContent(chat, 'assistant', { type: 'toolCallPrepare', ...base, argumentsText: '{"path": ' });
  applyContent(chat, 'assistant', { type: 'toolCallPrepare', ...base, argumentsText: '"a.py"}' });
  const card = chat.items[1] as ToolItem;
  assert.equal(card.kind, 'tool');
  assert.equal(card.argumentsText, '{"path": "a.py"}');
  assert.equal(card.state, 'preparing');
  const details = { type: 'fileChange' as const, path: 'a.py', diff: '-a\n+b\n', linesAdded: 1, linesRemoved: 1 };
  applyContent(chat, 'assistant', {
    type: 'toolCallRun',
    ...base,
    arguments: { path: 'a.py' },
    manualApproval: true,
    details
  });
  assert.equal(card.state, 'waiting');
  assert.deepEqual(awaitingApproval(chat), [card]);
  assert.deepEqual(card.details, details);
  applyContent(chat, 'assistant', { type: 'toolCallRunning', ...base, arguments: { path: 'a.py' } });
  assert.equal(card.state, 'running');
  applyContent(chat, 'assistant', {
    type: 'toolCalled',
    ...base,
    arguments: { path: 'a.py' },
    error: false,
    outputs: [{ type: 'text', text: 'ok', content: 'ok' }],
    totalTimeMs: 12
  });
  assert.equal(card.state, 'done');
  assert.equal(card.totalTimeMs, 12);
  assert.equal(chat.items.length, 2, 'still one card');
  applyContent(chat, 'assistant', { type: 'text', text: 'Done.' });
  assert.equal(chat.items.length, 3, 'text after a card starts a new message');
});

test('an automatically approved call skips the waiting state; a rejection keeps its reason', () => {
  const chat = newChat('c');
  const call = (id: string) => ({ origin: 'native' as const, id, name: 'read_file', server: 'eca' });
  applyContent(chat, 'assistant', { type: 'toolCallRun', ...call('a'), arguments: {}, manualApproval: false });
  assert.equal((chat.items[0] as ToolItem).state, 'approved');
  applyContent(chat, 'assistant', { type: 'toolCallRun', ...call('b'), arguments: {}, manualApproval: true });
  applyContent(chat, 'assistant', { type: 'toolCallRejected', ...call('b'), arguments: {}, reason: 'user-choice' });
  const rejected = chat.items[1] as ToolItem;
  assert.equal(rejected.state, 'rejected');
  assert.equal(rejected.reason, 'user-choice');
});

test('a call keeps the risk the engine gave it, from the approval to the result', () => {
  const chat = newChat('c');
  const base = { origin: 'native' as const, id: 'r', name: 'shell_command', server: 'eca', arguments: {} };
  const risk = { level: 'high' as const, reason: 'deletes recursively: build' };
  applyContent(chat, 'assistant', { type: 'toolCallRun', ...base, manualApproval: true, risk });
  const card = chat.items[0] as ToolItem;
  assert.deepEqual(card.risk, risk);
  applyContent(chat, 'assistant', { type: 'toolCallRunning', ...base });
  applyContent(chat, 'assistant', { type: 'toolCalled', ...base, error: false, outputs: [], totalTimeMs: 1 });
  assert.deepEqual(card.risk, risk, 'a content without it keeps the known one');
});

test('reasoning blocks collect their text and finish with a duration', () => {
  const chat = newChat('c');
  applyContent(chat, 'assistant', { type: 'reasonStarted', id: 'r1' });
  applyContent(chat, 'assistant', { type: 'reasonText', id: 'r1', text: 'think ' });
  applyContent(chat, 'assistant', { type: 'reasonText', id: 'r1', text: 'hard' });
  applyContent(chat, 'assistant', { type: 'reasonFinished', id: 'r1', totalTimeMs: 1500 });
  assert.equal(chat.items.length, 1);
  assert.deepEqual(
    { ...chat.items[0], version: 0 },
    { kind: 'reasoning', key: chat.items[0].key, version: 0, id: 'r1', text: 'think hard', done: true, totalTimeMs: 1500 }
  );
});

test('metadata, progress and usage update the chat, not the items; unknown content is ignored', () => {
  const chat = newChat('c');
  assert.ok(applyContent(chat, 'system', { type: 'metadata', title: 'Fix the bug' }));
  assert.ok(applyContent(chat, 'system', { type: 'progress', state: 'running', text: 'Generating' }));
  assert.equal(chat.progress, 'Generating');
  assert.ok(applyContent(chat, 'system', { type: 'usage', sessionTokens: 120, sessionCost: '0.01' }));
  applyContent(chat, 'system', { type: 'progress', state: 'finished', text: '' });
  assert.equal(chat.progress, undefined);
  assert.equal(chat.title, 'Fix the bug');
  assert.equal(chat.usage?.sessionTokens, 120);
  assert.equal(applyContent(chat, 'system', { type: 'hologram', x: 1 } as any), false);
  assert.equal(chat.items.length, 0);
});

test('the store coalesces a burst of chunks into one flush', () => {
  const queued: (() => void)[] = [];
  const store = new ChatStore(flush => queued.push(flush));
  let notified = 0;
  store.subscribe(() => (notified += 1));
  for (let i = 0; i < 5000; i++) {
    store.applyContent('c', 'assistant', { type: 'text', text: 'x' });
  }
  assert.equal(queued.length, 1, 'one flush scheduled for 5000 chunks');
  assert.equal(notified, 0);
  queued[0]();
  assert.equal(notified, 1);
  assert.equal((store.chats.get('c')!.items[0] as any).text.length, 5000);
  assert.deepEqual(store.stats, { contents: 5000, flushes: 1 });
  store.applyContent('c', 'assistant', { type: 'text', text: 'y' });
  assert.equal(queued.length, 2, 'the next change schedules the next flush');
});

test('chat/list summaries are merged: titles and status kept, chats gone from the server dropped', () => {
  const store = new ChatStore(() => undefined);
  store.ensure('old', { title: 'Old' });
  store.ensure('mine');
  store.setCurrent('mine');
  store.mergeSummaries([
    { id: 'a', title: 'A', status: 'idle', messageCount: 2, updatedAt: 10 },
    { id: 'b', title: 'B', status: 'running', messageCount: 4, updatedAt: 20 }
  ]);
  assert.deepEqual(
    store.list().map(c => [c.id, c.title, c.status]),
    [
      ['b', 'B', 'running'],
      ['a', 'A', 'idle'],
      ['mine', undefined, 'idle']
    ]
  );
  assert.ok(!store.chats.has('old'));
  assert.ok(store.chats.get('a')!.loaded === false, 'listed chats must be opened before they are shown');
});

test('a plan content sets the chat plan (the latest replaces the earlier) without adding an item; reset drops it', () => {
  const chat = newChat('c');
  applyContent(chat, 'assistant', {
    type: 'plan',
    steps: [
      { description: 'Read', status: 'in_progress', files: ['a.py'] },
      { description: 'Fix', status: 'pending' }
    ],
    explanation: 'why'
  });
  assert.equal(chat.items.length, 0);
  assert.deepEqual(
    chat.plan?.steps.map(s => s.status),
    ['in_progress', 'pending']
  );
  assert.equal(chat.plan?.explanation, 'why');
  const first = chat.plan;
  applyContent(chat, 'assistant', {
    type: 'plan',
    steps: [
      { description: 'Read', status: 'completed', files: ['a.py'] },
      { description: 'Fix', status: 'completed' }
    ]
  });
  assert.notEqual(chat.plan, first, 'a new object, so a memoized view redraws');
  assert.equal(chat.plan?.version, 2);
  assert.deepEqual(
    chat.plan?.steps.map(s => s.status),
    ['completed', 'completed']
  );
  assert.equal(chat.plan?.explanation, undefined);
  resetChat(chat);
  assert.equal(chat.plan, undefined);
});
