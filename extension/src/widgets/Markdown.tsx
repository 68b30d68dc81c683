/**
 * Markdown through JupyterLab's own renderer (rendermime: marked + sanitizer + CodeMirror highlighting, theme
 * aware), throttled while a reply streams.
 *
 * Why throttled: re-rendering a growing answer on every chunk re-parses all of it each time. While streaming we
 * render at most every STREAM_INTERVAL_MS and never two renders at once (the latest text wins); the final text is
 * rendered as soon as the reply ends. Model output is untrusted, so the model is marked untrusted (sanitized).
 */

import * as React from 'react';
import { MimeModel, IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { renderStats } from '../stats';

export const STREAM_INTERVAL_MS = 100;

class MarkdownHost {
  private _renderer: IRenderMime.IRenderer | null = null;
  private _text = '';
  private _rendered: string | null = null;
  private _busy = false;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _last = 0;
  private _disposed = false;

  constructor(
    private readonly _node: HTMLElement,
    rendermime: IRenderMimeRegistry | null
  ) {
    if (rendermime) {
      try {
        this._renderer = rendermime.createRenderer('text/markdown');
        this._node.appendChild(this._renderer.node);
      } catch {
        this._renderer = null;
      }
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
