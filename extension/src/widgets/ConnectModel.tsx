/**
 * "Connect a model": add OpenAI, Anthropic, an OpenAI-compatible server or Ollama, Test it with one tiny request,
 * and Save it (to the user's own config file, never the workspace's) with one of its models as the default. The
 * engine reloads and sends `config/updated`, so the model picker follows by itself.
 *
 * The key field is write-only: once saved it is shown as "key saved" with its masked form, never filled back in;
 * leaving it empty keeps the saved key. Errors are the provider's own words (a 401, "cannot connect", a 404).
 */

import * as React from 'react';

import {
  ConnectionTest,
  IProvidersApi,
  insecureUrl,
  ProviderApiError,
  ProviderDraft,
  ProviderInfo,
  ProviderKind,
  ProviderModels,
  ProviderSetup
} from '../providersApi';

export interface ConnectModelProps {
  api: IProvidersApi;
  onClose: () => void;
}

const KIND_LABEL: Record<ProviderKind, string> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  'openai-compatible': 'OpenAI-compatible (vLLM, llama.cpp, LM Studio, OpenRouter…)',
  ollama: 'Ollama (on this machine)'
};

const DEFAULT_URL: Record<ProviderKind, string> = {
  openai: '',
  anthropic: '',
  'openai-compatible': '',
  ollama: 'http://127.0.0.1:11434'
};

const KEY_ENV: Record<ProviderKind, string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  'openai-compatible': '',
  ollama: ''
};

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Status = { kind: 'busy' | 'ok' | 'error'; text: string } | null;

export function ConnectModel(props: ConnectModelProps): JSX.Element {
  const { api } = props;
  const [setup, setSetup] = React.useState<ProviderSetup | null>(null);
  const [kind, setKind] = React.useState<ProviderKind>('openai');
  const [name, setName] = React.useState('');
  const [url, setUrl] = React.useState('');
  const [key, setKey] = React.useState('');
  const [useEnv, setUseEnv] = React.useState(false);
  const [keyEnv, setKeyEnv] = React.useState('');
  const [model, setModel] = React.useState('');
  const [listing, setListing] = React.useState<ProviderModels | null>(null);
  const [makeDefault, setMakeDefault] = React.useState(true);
  const [allowInsecure, setAllowInsecure] = React.useState(false);
  const [status, setStatus] = React.useState<Status>(null);
  const [fieldError, setFieldError] = React.useState<string | undefined>(undefined);
  const [confirming, setConfirming] = React.useState<string | null>(null);

  const id = kind === 'openai-compatible' ? name.trim() : kind;
  const saved: ProviderInfo | undefined = setup?.providers.find(p => p.id === id);
  const needsKey = kind !== 'ollama';

  const refresh = React.useCallback(() => {
    api.list().then(setSetup, error => setStatus({ kind: 'error', text: message(error) }));
  }, [api]);
  React.useEffect(refresh, [refresh]);

  // The models to pick from: the built-in lists, Ollama's daemon, an OpenAI-compatible server's /v1/models.
  const loadModels = React.useCallback(
    (forKind: ProviderKind, forId: string, forUrl: string) => {
      if (forKind === 'openai-compatible' && (!forId || !forUrl)) {
        setListing(null);
        return;
      }
      api.models(forId || forKind, forKind, forUrl || undefined).then(
        found => {
          setListing(found);
          setModel(current => (current && found.models.includes(current) ? current : (found.models[0] ?? current)));
        },
        () => setListing(null)
      );
    },
    [api]
  );
  React.useEffect(() => {
    loadModels(kind, kind === 'openai-compatible' ? '' : kind, DEFAULT_URL[kind]);
  }, [kind, loadModels]);

  const chooseKind = (next: ProviderKind) => {
    setKind(next);
    setUrl(DEFAULT_URL[next]);
    setModel('');
    setListing(null);
    setStatus(null);
    setFieldError(undefined);
    setAllowInsecure(false);
    setKeyEnv(KEY_ENV[next]);
  };

  const draft = (): ProviderDraft => {
    const out: ProviderDraft = { kind };
    if (url.trim()) {
      out.url = url.trim();
    }
    if (needsKey && useEnv && keyEnv.trim()) {
      out.key_env = keyEnv.trim();
    } else if (needsKey && key.trim()) {
      out.key = key.trim();
    }
    if (kind === 'openai-compatible' && model.trim()) {
      out.models = [model.trim()];
    }
    if (allowInsecure) {
      out.allow_insecure = true;
    }
    return out;
  };

  const fail = (error: unknown) => {
    if (error instanceof ProviderApiError) {
      setFieldError(error.field);
      if (error.code === 'insecure-url') {
        setAllowInsecure(false);
      }
    }
    setStatus({ kind: 'error', text: message(error) });
  };

  const onTest = async () => {
    if (!model.trim()) {
      setStatus({ kind: 'error', text: 'Choose a model to test.' });
      return;
    }
    setStatus({ kind: 'busy', text: 'Testing…' });
    setFieldError(undefined);
    try {
      const result: ConnectionTest = await api.test(id, draft(), model.trim());
      setStatus({ kind: result.ok ? 'ok' : 'error', text: result.ok ? `Connected: ${result.message}` : result.message });
    } catch (error) {
      fail(error);
    }
  };

  const onSave = async (event: React.FormEvent) => {
    event.preventDefault();
    setStatus({ kind: 'busy', text: 'Saving…' });
    setFieldError(undefined);
    try {
      const chosen = model.trim();
      const next = await api.save(id, draft(), makeDefault && chosen ? `${id}/${chosen}` : undefined);
      setSetup(next);
      const keyNote = draft().key ? ' Key saved.' : '';
      setKey('');
      const current = makeDefault && chosen ? ` ${id}/${chosen} is now the default model.` : '';
      setStatus({ kind: 'ok', text: `Saved to ${next.config_file}.${keyNote}${current}` });
    } catch (error) {
      fail(error);
    }
  };

  const onRemove = async (providerId: string) => {
    if (confirming !== providerId) {
      setConfirming(providerId); // a second click removes: the key goes with it
      return;
    }
    setConfirming(null);
    try {
      setSetup(await api.remove(providerId));
      setStatus({ kind: 'ok', text: `Removed ${providerId}.` });
    } catch (error) {
      fail(error);
    }
  };

  const showInsecure = needsKey && insecureUrl(url) && Boolean(key.trim() || (useEnv && keyEnv.trim()) || saved?.key_source);
  const invalid = (field: string) => (fieldError === field ? true : undefined);

  return (
    <div className="eca-ConnectModel" role="region" aria-label="Connect a model">
      <div className="eca-ConnectModel-head">
        <strong>Connect a model</strong>
        <button className="jp-mod-styled eca-ConnectModel-close" aria-label="Close" title="Back to the chat" onClick={props.onClose}>
          ×
        </button>
      </div>
      <form className="eca-McpForm eca-ConnectModel-form" aria-label="Provider" onSubmit={onSave}>
        <label>
          Provider
          <select aria-label="Provider type" value={kind} onChange={e => chooseKind(e.target.value as ProviderKind)}>
            {(Object.keys(KIND_LABEL) as ProviderKind[]).map(k => (
              <option key={k} value={k}>
                {KIND_LABEL[k]}
              </option>
            ))}
          </select>
        </label>
        {kind === 'openai-compatible' && (
          <label>
            Name
            <input
              aria-label="Name"
              aria-invalid={invalid('id')}
              placeholder="my-server"
              value={name}
              required
              onChange={e => setName(e.target.value)}
              onBlur={() => loadModels(kind, name.trim(), url.trim())}
            />
          </label>
        )}
        <label>
          {kind === 'openai-compatible' || kind === 'ollama' ? 'URL' : 'URL (optional, e.g. a proxy)'}
          <input
            aria-label="URL"
            aria-invalid={invalid('url')}
            placeholder={kind === 'openai-compatible' ? 'http://127.0.0.1:8000/v1' : 'default'}
            value={url}
            required={kind === 'openai-compatible'}
            onChange={e => {
              setUrl(e.target.value);
              setAllowInsecure(false);
            }}
            onBlur={() => kind !== 'openai' && kind !== 'anthropic' && loadModels(kind, id, url.trim())}
          />
        </label>
        {needsKey && (
          <>
            {useEnv ? (
              <label>
                Environment variable holding the key
                <input
                  aria-label="Environment variable"
                  aria-invalid={invalid('key_env')}
                  placeholder="MY_API_KEY"
                  value={keyEnv}
                  onChange={e => setKeyEnv(e.target.value)}
                />
              </label>
            ) : (
              <label>
                API key
                <input
                  aria-label="API key"
                  aria-invalid={invalid('key')}
                  type="password"
                  autoComplete="off"
                  placeholder={saved?.key_source ? 'leave empty to keep the saved key' : ''}
                  value={key}
                  onChange={e => setKey(e.target.value)}
                />
              </label>
            )}
            {saved?.key_source && (
              <div className="eca-ConnectModel-keySaved">
                {saved.key_env ? `Key from $${saved.key_env}` : `Key saved${saved.key_hint ? ` (${saved.key_hint})` : ''}`}
              </div>
            )}
            <label className="eca-ConnectModel-check">
              <input type="checkbox" checked={useEnv} onChange={e => setUseEnv(e.target.checked)} />
              Read the key from an environment variable (written as ${'{'}env:NAME{'}'})
            </label>
          </>
        )}
        <label>
          Model
          <input
            aria-label="Model"
            aria-invalid={invalid('model') ?? invalid('default_model')}
            list="eca-connect-models"
            placeholder={kind === 'openai-compatible' ? 'the model name the server expects' : ''}
            value={model}
            onChange={e => setModel(e.target.value)}
          />
          <datalist id="eca-connect-models">
            {(listing?.models ?? []).map(m => (
              <option key={m} value={m} />
            ))}
          </datalist>
        </label>
        {listing && listing.message && (
          <div className={`eca-ConnectModel-note${listing.reachable ? '' : ' eca-mod-warn'}`} role="note">
            {listing.message}
          </div>
        )}
        {kind === 'ollama' && listing?.reachable && listing.models.length > 0 && (
          <div className="eca-ConnectModel-note" role="note">
            Ollama found at {listing.url}: {listing.models.length} model{listing.models.length === 1 ? '' : 's'}.
          </div>
        )}
        <label className="eca-ConnectModel-check">
          <input type="checkbox" checked={makeDefault} onChange={e => setMakeDefault(e.target.checked)} />
          Make it the default model
        </label>
        {showInsecure && (
          <label className="eca-ConnectModel-check eca-mod-warn">
            <input
              type="checkbox"
              aria-label="Send the key over plain http"
              checked={allowInsecure}
              onChange={e => setAllowInsecure(e.target.checked)}
            />
            This URL is plain http to another machine: the key travels unencrypted. Send it anyway (trusted network).
          </label>
        )}
        {status && (
          <div
            className={`eca-ConnectModel-status eca-mod-${status.kind}`}
            role={status.kind === 'error' ? 'alert' : 'status'}
          >
            {status.text}
          </div>
        )}
        <div className="eca-McpForm-buttons">
          <button type="button" className="jp-mod-styled" disabled={status?.kind === 'busy'} onClick={() => void onTest()}>
            Test
          </button>
          <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={status?.kind === 'busy'}>
            Save
          </button>
        </div>
      </form>
      {setup && (
        <div className="eca-ConnectModel-saved">
          <div>
            Your providers <span className="eca-ConnectModel-file">({setup.config_file})</span>
          </div>
          {setup.providers.length === 0 ? (
            <div className="eca-ConnectModel-note">None yet.</div>
          ) : (
            <ul>
              {setup.providers.map(p => (
                <li key={p.id} aria-label={`Provider ${p.id}`}>
                  <span className="eca-ConnectModel-id">{p.id}</span>{' '}
                  <span className="eca-ConnectModel-key">
                    {p.key_env ? `key from $${p.key_env}` : p.key_source ? `key saved${p.key_hint ? ` (${p.key_hint})` : ''}` : 'no key'}
                  </span>
                  <button
                    className={confirming === p.id ? 'jp-mod-styled jp-mod-warn' : 'jp-mod-styled'}
                    aria-label={`Remove ${p.id}`}
                    onClick={() => void onRemove(p.id)}
                  >
                    {confirming === p.id ? 'Yes, remove' : 'Remove'}
                  </button>
                </li>
              ))}
            </ul>
          )}
          {setup.default && <div className="eca-ConnectModel-note">Default model: {setup.default}</div>}
        </div>
      )}
    </div>
  );
}
