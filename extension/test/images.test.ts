import { test } from 'node:test';
import assert from 'node:assert/strict';

import { base64Bytes, fitSize, humanBytes, imageDataUrl } from '../src/images';
import { applyContent, newChat } from '../src/model';
import { RASTER_DATA_IMAGE } from '../src/untrusted';

test('an image content is drawn only from a raster data URL of plain base64', () => {
  assert.equal(imageDataUrl('image/png', 'iVBORw0KGgo='), 'data:image/png;base64,iVBORw0KGgo=');
  assert.ok(RASTER_DATA_IMAGE.test(imageDataUrl('image/webp', 'UklGRg==') ?? ''));
  assert.equal(imageDataUrl('image/svg+xml', 'PHN2Zz4='), null); // SVG may carry script
  assert.equal(imageDataUrl('text/html', 'PGI+'), null);
  assert.equal(imageDataUrl('image/png', '" onerror="alert(1)'), null); // never out of the attribute
  assert.equal(imageDataUrl('image/png', ''), null);
  assert.equal(imageDataUrl(undefined, 'iVBO'), null);
});

test('sizes: base64 bytes, a human size, the longest side fitted to 2048 px', () => {
  assert.equal(base64Bytes('iVBORw0KGgo='), 8);
  assert.equal(humanBytes(3 * 1024 * 1024 + 1), '3.0 MB');
  assert.equal(humanBytes(300), '1 KB');
  assert.deepEqual(fitSize(4096, 1024), { width: 2048, height: 512 });
  assert.deepEqual(fitSize(800, 600), { width: 800, height: 600 });
});

test('image chat contents become image items, by role', () => {
  const chat = newChat('c');
  assert.ok(applyContent(chat, 'assistant', { type: 'image', mediaType: 'image/png', base64: 'iVBORw0KGgo=' }));
  assert.ok(applyContent(chat, 'user', { type: 'image', mediaType: 'image/jpeg', base64: '/9j/' }));
  assert.deepEqual(
    chat.items.map(i => (i.kind === 'image' ? [i.role, i.mediaType] : [i.kind])),
    [['assistant', 'image/png'], ['user', 'image/jpeg']]
  );
});
