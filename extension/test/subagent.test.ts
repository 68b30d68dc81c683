import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ChatStore, ToolItem } from '../src/model';

const spawn = { origin: 'native' as const, id: 'call_1', name: 'spawn_agent', server: 'eca' };
const details = {
  type: 'subagent' as const,
  subagentChatId: 'subagent-1',
  model: 'fake/m1',
  agentName: 'explorer',
  maxSteps: 5,
  step: 1
};

test("a subagent's contents nest in the parent's spawn_agent card, never in the chat list", () => {
  const store = new ChatStore(() => undefined);
  store.applyContent('p', 'user', { type: 'text', text: 'explore\n' });
  store.applyContent('p', 'assistant', {
    type: 'toolCallRunning',
    ...spawn,
    arguments: { agent: 'explorer', task: 'find it', activity: 'Exploring' },
    details
  });
  const card = store.chats.get('p')!.items[1] as ToolItem;
  assert.equal(card.subagent?.id, 'subagent-1', 'the card holds the subagent chat as soon as it names it');
  const before = card.version;
  const read = { origin: 'native' as const, id: 'call_1', name: 'read_file', server: 'eca' };
  store.applyContent('subagent-1', 'assistant', { type: 'toolCallRun', ...read, arguments: {}, manualApproval: true }, 'p');
  store.applyContent('subagent-1', 'assistant', { type: 'text', text: 'Found it.' }, 'p');
  assert.ok(card.version > before, "the parent's card re-renders when its subagent moves on");
  const nested = card.subagent!.items;
  assert.deepEqual(
    nested.map(i => i.kind),
    ['tool', 'assistant']
  );
  assert.equal((nested[0] as ToolItem).state, 'waiting', "the child's call waits for its own approval");
  assert.equal(card.state, 'running', 'the same call id in the child does not touch the parent card');
  assert.deepEqual(
    store.list().map(c => c.id),
    ['p']
  );
  store.mergeSummaries([{ id: 'p', status: 'running' } as any]);
  assert.ok(store.chats.has('subagent-1'), 'chat/list (which never lists subagents) keeps them');
});

test("a subagent's content arriving before the parent's card links up when the card names it", () => {
  const store = new ChatStore(() => undefined);
  store.applyContent('subagent-2', 'assistant', { type: 'text', text: 'early' }, 'p');
  store.applyContent('p', 'assistant', {
    type: 'toolCallRunning',
    ...spawn,
    arguments: {},
    details: { ...details, subagentChatId: 'subagent-2', step: 2 }
  });
  const card = store.chats.get('p')!.items[0] as ToolItem;
  assert.equal(card.subagent?.items.length, 1);
  assert.equal(store.list().length, 1);
});
