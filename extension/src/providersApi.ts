/**
 * The "Connect a model" view's side of the REST API (`<base_url>api/eca/v1/providers…`): list the providers of the
 * user's config file, list a provider's models (Ollama's daemon), Test, Save, Remove. Requests go through
 * JupyterLab's `ServerConnection.makeRequest`, which adds the token and the XSRF header the server checks.
 *
 * A key is sent once, in the body of a Test or a Save, and never comes back: answers carry it masked.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export type ProviderKind = 'openai' | 'anthropic' | 'openai-compatible' | 'ollama';

export interface ProviderInfo {
  id: string;
  kind: ProviderKind;
  url?: string | null;
  key_source?: 'config' | 'env' | null;
  key_env?: string | null;
  key_hint?: string | null;
  models: string[];
}

export interface ProviderSetup {
  config_file: string;
  providers: ProviderInfo[];
  models: string[];
  default?: string | null;
  current?: string | null;
}

export interface ProviderModels {
  url: string;
  reachable: boolean;
  models: string[];
  message: string;
}

export interface ConnectionTest {
  ok: boolean;
  message: string;
  status?: number | null;
}

/** What the form sends (`key` or `key_env`, or neither to keep the saved key). */
export interface ProviderDraft {
  kind: ProviderKind;
  url?: string;
  key?: string;
  key_env?: string;
  models?: string[];
  allow_insecure?: boolean;
}

/** A refused request: the server's message, and the field and kind of the first problem when it named one. */
export class ProviderApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly field?: string,
    readonly code?: string
  ) {
    super(message);
  }
}

export interface IProvidersApi {
  list(): Promise<ProviderSetup>;
  models(id: string, kind: ProviderKind, url?: string): Promise<ProviderModels>;
  test(id: string, draft: ProviderDraft, model: string): Promise<ConnectionTest>;
  save(id: string, draft: ProviderDraft, defaultModel?: string): Promise<ProviderSetup>;
  remove(id: string): Promise<ProviderSetup>;
}

export class ProvidersApi implements IProvidersApi {
  constructor(private readonly _settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  list(): Promise<ProviderSetup> {
    return this._call('GET', ['providers']);
  }

  models(id: string, kind: ProviderKind, url?: string): Promise<ProviderModels> {
    const query = new URLSearchParams({ kind });
    if (url) {
      query.set('url', url);
    }
    return this._call('GET', ['providers', id, 'models'], undefined, query.toString());
  }

  test(id: string, draft: ProviderDraft, model: string): Promise<ConnectionTest> {
    return this._call('POST', ['providers', id, 'test'], { ...draft, model });
  }

  save(id: string, draft: ProviderDraft, defaultModel?: string): Promise<ProviderSetup> {
    const body: Record<string, unknown> = { ...draft };
    if (defaultModel) {
      body.default_model = defaultModel;
    }
    return this._call('PUT', ['providers', id], body);
  }

  remove(id: string): Promise<ProviderSetup> {
    return this._call('DELETE', ['providers', id]);
  }

  private async _call<T>(method: string, path: string[], body?: unknown, query?: string): Promise<T> {
    let url = URLExt.join(this._settings.baseUrl, 'api/eca/v1', ...path.map(encodeURIComponent));
    if (query) {
      url += `?${query}`;
    }
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    const response = await ServerConnection.makeRequest(url, init, this._settings);
    const text = await response.text();
    let data: any = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      const detail = data?.details?.[0];
      throw new ProviderApiError(
        data?.message ?? `HTTP ${response.status}`,
        response.status,
        detail?.loc?.[0],
        detail?.type
      );
    }
    return data as T;
  }
}

/**
 * Whether the "Connect a model" view is showing: opened by the header's button and by the command
 * `eca-notebook:connect-model` (which a notice elsewhere may execute), closed by the view itself.
 */
export class ConnectModelView {
  private _open = false;
  private readonly _listeners = new Set<() => void>();

  get isOpen(): boolean {
    return this._open;
  }

  open(): void {
    this._set(true);
  }

  close(): void {
    this._set(false);
  }

  subscribe(listener: () => void): () => void {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  private _set(open: boolean): void {
    if (this._open !== open) {
      this._open = open;
      this._listeners.forEach(listener => listener());
    }
  }
}

/** A plain http:// URL to another machine: a key sent there travels unencrypted (the server asks to confirm). */
export function insecureUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'http:') {
    return false;
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return !(host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\./.test(host));
}
