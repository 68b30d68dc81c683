/**
 * Markdown through JupyterLab's own renderer (rendermime: marked + sanitizer + CodeMirror highlighting, theme
 * aware), throttled while a reply streams.
 *
 * Why throttled: re-rendering a growing answer on every chunk re-parses all of it each time. While streaming we
 * render at most every STREAM_INTERVAL_MS and never two renders at once (the latest text wins); the final text is
 * rendered as soon as the reply ends. Model output is untrusted, so the model is marked untrusted (sanitized), and
 * the renderer's sanitizer is JupyterLab's followed by `hardenHtml` (../untrusted.ts): no remote image, media, form,
 * style or command button; an image from elsewhere is a "Load image from HOST" button that loads it on a click.
 */

import * as React from 'react';
import { MimeModel, IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { decorateCodeBlocks, handleCodeActionClick } from '../codeActions';
import { renderStats } from '../stats';
import { hardenHtml, remoteImage, REMOTE_IMAGE_CLASS } from '../untrusted';

export const STREAM_INTERVAL_MS = 100;

/** JupyterLab's sanitizer, then ours: what it keeps that an answer must not have (see ../untrusted.ts). */
class UntrustedSanitizer implements IRenderMime.ISanitizer {
  constructor(private readonly _base: IRenderMime.ISanitizer) {}

  sanitize(dirty: string, options?: IRenderMime.ISanitizerOptions): string {
    return hardenHtml(this._base.sanitize(dirty, options));
  }

  getAutolink(): boolean {
    return this._base.getAutolink?.() ?? true;
  }

  get allowNamedProperties(): boolean {
    return false;
  }
}

const untrustedRegistries = new WeakMap<IRenderMimeRegistry, IRenderMimeRegistry>();

/** The registry with the untrusted sanitizer (one clone per registry). */
function untrusted(rendermime: IRenderMimeRegistry): IRenderMimeRegistry {
  let clone = untrustedRegistries.get(rendermime);
  if (!clone) {
    clone = rendermime.clone({ sanitizer: new UntrustedSanitizer(rendermime.sanitizer) });
    untrustedRegistries.set(rendermime, clone);
  }
  return clone;
}

class MarkdownHost {
  private _renderer: IRenderMime.IRenderer | null = null;
  private _text = '';
  private _rendered: string | null = null;
  private _busy = false;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _last = 0;
  private _disposed = false;
  // the images the user chose to load (their placeholders clicked): a re-render shows them again
  private readonly _loaded = new Set<string>();

  constructor(
    private readonly _node: HTMLElement,
    rendermime: IRenderMimeRegistry | null
  ) {
    if (rendermime) {
      try {
        this._renderer = untrusted(rendermime).createRenderer('text/markdown');
        this._node.appendChild(this._renderer.node);
      } catch {
        this._renderer = null;
      }
    }
    this._node.addEventListener('click', this._onClick);
  }

  private readonly _onClick = (event: MouseEvent): void => {
    if (handleCodeActionClick(event, this._node)) {
      return; // Copy / Insert below / Replace cell on a code block
    }
    const target = event.target instanceof Element ? event.target : null;
    const placeholder = target?.closest(`button.${REMOTE_IMAGE_CLASS}`);
    if (placeholder && this._node.contains(placeholder)) {
      event.preventDefault();
      this._loaded.add(placeholder.getAttribute('data-eca-src') ?? '');
      this._showImages();
    }
  };

  /** Replace the placeholders of the images the user loaded by the images; links open without a referrer. */
  private _showImages(): void {
    for (const placeholder of Array.from(this._node.querySelectorAll(`button.${REMOTE_IMAGE_CLASS}`))) {
      if (this._loaded.has(placeholder.getAttribute('data-eca-src') ?? '')) {
        const img = remoteImage(placeholder, this._node.ownerDocument);
        if (img) {
          placeholder.replaceWith(img);
        }
      }
    }
    // JupyterLab sets rel="noopener" on external links after sanitising: noreferrer too
    for (const anchor of Array.from(this._node.querySelectorAll('a[href]'))) {
      anchor.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  }

  update(text: string, streaming: boolean): void {
    this._text = text;
    if (this._busy || this._timer !== null) {
      return; // a render is running or scheduled: it will pick up the latest text
    }
    const wait = streaming ? this._last + STREAM_INTERVAL_MS - Date.now() : 0;
    if (wait > 0) {
      this._timer = setTimeout(() => {
        this._timer = null;
        void this._render();
      }, wait);
    } else {
      void this._render();
    }
  }

  private async _render(): Promise<void> {
    if (this._disposed || this._rendered === this._text) {
      return;
    }
    const text = this._text;
    this._busy = true;
    renderStats.markdown += 1;
    try {
      if (this._renderer) {
        const model = new MimeModel({ data: { 'text/markdown': text }, trusted: false });
        await this._renderer.renderModel(model);
        this._showImages();
        decorateCodeBlocks(this._node);
      } else {
        this._node.textContent = text;
      }
      this._rendered = text;
    } catch {
      this._node.textContent = text;
      this._rendered = text;
    } finally {
      this._busy = false;
      this._last = Date.now();
    }
    if (!this._disposed && this._rendered !== this._text) {
      this.update(this._text, true);
    }
  }

  dispose(): void {
    this._disposed = true;
    this._node.removeEventListener('click', this._onClick);
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._renderer?.dispose();
  }
}

export interface MarkdownProps {
  text: string;
  streaming: boolean;
  rendermime: IRenderMimeRegistry | null;
}

export function Markdown(props: MarkdownProps): JSX.Element {
  const node = React.useRef<HTMLDivElement>(null);
  const host = React.useRef<MarkdownHost | null>(null);
  React.useEffect(() => {
    host.current = new MarkdownHost(node.current!, props.rendermime);
    return () => {
      host.current?.dispose();
      host.current = null;
    };
  }, [props.rendermime]);
  React.useEffect(() => {
    host.current?.update(props.text, props.streaming);
  }, [props.text, props.streaming, props.rendermime]);
  return <div className="eca-Markdown" ref={node} />;
}
