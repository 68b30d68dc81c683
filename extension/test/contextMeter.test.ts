import { test } from 'node:test';
import assert from 'node:assert/strict';

import { contextTitle } from '../src/contextMeter';
import type { UsageContent } from '../src/protocol';

test('the context meter lists the breakdown, the free part and the auto-compact threshold on hover', () => {
  const usage: UsageContent = {
    type: 'usage',
    sessionTokens: 1500,
    autoCompactPercentage: 75,
    contextBreakdown: {
      categories: [
        { name: 'System prompt', tokens: 1200, color: '#61afef', emoji: '🟦' },
        { name: 'Conversation', tokens: 300, color: '#98c379', emoji: '🟩' }
      ],
      usedTokens: 1500,
      freeTokens: 198500,
      contextLimit: 200000,
      freeColor: '#5c6370',
      freeEmoji: '⬜'
    }
  };
  assert.deepEqual(contextTitle(usage).split('\n'), [
    '🟦 System prompt: 1.2k tokens',
    '🟩 Conversation: 300 tokens',
    '⬜ Free: 199k tokens',
    'Compacts automatically at 75% of the context window'
  ]);
  assert.equal(contextTitle({ type: 'usage', sessionTokens: 1 }), '');
});
