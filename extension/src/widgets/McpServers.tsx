/**
 * MCP servers configured for this workspace: status from `tool/serverUpdated` (rows go with `tool/serverRemoved`),
 * Start/Stop through `mcp/startServer` / `mcp/stopServer`, and managing them: Add (`mcp/addServer`, to the global
 * or the workspace config), Edit (`mcp/updateServer`), Disable/Enable (`mcp/disableServer|enableServer`) and Remove
 * (`mcp/removeServer`, after a confirmation). No optimistic rows: the list changes only when the server says so, so
 * it always shows what is configured. Collapsed by default — it is a status line until something fails.
 */

import * as React from 'react';

import type { McpServerInfo } from '../client';

/** What the Add form sends (`mcp/addServer` params). `env` / `headers` are secrets: they go to the config file
 * and are never shown again (`tool/serverUpdated` does not carry them). */
export interface McpServerDraft {
  name: string;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
  scope: 'global' | 'workspace';
}

/** A result's `error`, shown next to the form that caused it. */
type Outcome = { error?: { message: string } | null } | void;

export interface McpServersProps {
  servers: McpServerInfo[];
  onToggle: (name: string, running: boolean) => void;
  onAdd?: (draft: McpServerDraft) => Promise<Outcome>;
  onUpdate?: (name: string, change: { command?: string; args?: string[]; url?: string }) => Promise<Outcome>;
  onRemove?: (name: string) => Promise<Outcome>;
  onSetEnabled?: (name: string, enabled: boolean) => void;
}

/** Arguments typed in one field, split on whitespace ("double quotes" keep spaces together). */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    out.push(m[1] ?? m[2]);
  }
  return out;
}

/**
 * `KEY=value` (env) or `Name: value` (headers) lines into a map: blank lines skipped, the first separator splits
 * (a value may hold more). Throws, naming the line by its number (its text may be a secret), when one has no
 * separator or no key.
 */
export function parsePairs(text: string, separator: '=' | ':', what: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) {
      continue;
    }
    const at = line.indexOf(separator);
    const key = at > 0 ? line.slice(0, at).trim() : '';
    if (!key) {
      const shape = separator === '=' ? 'KEY=value' : 'Name: value';
      throw new Error(`${what}: line ${i + 1} is not ${shape}`);
    }
    out[key] = line.slice(at + 1).trim();
  }
  return out;
}

function joinArgs(args: string[] | undefined): string {
  return (args ?? []).map(a => (/\s/.test(a) || a === '' ? `"${a}"` : a)).join(' ');
}

async function run(action: () => Promise<Outcome>, setError: (e: string | null) => void): Promise<boolean> {
  try {
    const outcome = await action();
    if (outcome && outcome.error) {
      setError(outcome.error.message);
      return false;
    }
    setError(null);
    return true;
  } catch (err) {
    setError(err instanceof Error ? err.message : String(err));
    return false;
  }
}

function AddForm(props: { onAdd: NonNullable<McpServersProps['onAdd']>; onDone: () => void }): JSX.Element {
  const [name, setName] = React.useState('');
  const [kind, setKind] = React.useState<'command' | 'url'>('command');
  const [command, setCommand] = React.useState('');
  const [args, setArgs] = React.useState('');
  const [url, setUrl] = React.useState('');
  const [env, setEnv] = React.useState('');
  const [headers, setHeaders] = React.useState('');
  const [scope, setScope] = React.useState<'global' | 'workspace'>('workspace');
  const [error, setError] = React.useState<string | null>(null);
  const [busy, setBusy] = React.useState(false);
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    let draft: McpServerDraft;
    try {
      if (kind === 'command') {
        const vars = parsePairs(env, '=', 'Environment');
        draft = { name: name.trim(), command: command.trim(), args: splitArgs(args), scope };
        if (Object.keys(vars).length) {
          draft.env = vars;
        }
      } else {
        const sent = parsePairs(headers, ':', 'Headers');
        draft = { name: name.trim(), url: url.trim(), scope };
        if (Object.keys(sent).length) {
          draft.headers = sent;
        }
      }
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      return;
    }
    setBusy(true);
    const ok = await run(() => props.onAdd(draft), setError);
    setBusy(false);
    if (ok) {
      props.onDone();
    }
  };
  return (
    <form className="eca-McpForm" aria-label="Add MCP server" onSubmit={submit}>
      <TextField label="Name" value={name} onChange={setName} required />
      <label>
        Transport
        <select value={kind} onChange={e => setKind(e.target.value as 'command' | 'url')}>
          <option value="command">Command (stdio)</option>
          <option value="url">URL (HTTP)</option>
        </select>
      </label>
      {kind === 'command' ? (
        <>
          <TextField label="Command" value={command} onChange={setCommand} required />
          <TextField label="Arguments" value={args} onChange={setArgs} />
          <label>
            Environment (KEY=value, one per line)
            <textarea value={env} rows={2} spellCheck={false} onChange={e => setEnv(e.target.value)} />
          </label>
        </>
      ) : (
        <>
          <TextField label="URL" value={url} onChange={setUrl} required />
          <label>
            Headers (Name: value, one per line)
            <textarea value={headers} rows={2} spellCheck={false} onChange={e => setHeaders(e.target.value)} />
          </label>
        </>
      )}
      <label>
        Scope
        <select value={scope} onChange={e => setScope(e.target.value as 'global' | 'workspace')}>
          <option value="workspace">Workspace (.eca/config.json)</option>
          <option value="global">Global (user config)</option>
        </select>
      </label>
      <FormFooter error={error} busy={busy} submit="Add server" onCancel={props.onDone} />
    </form>
  );
}

/** A labelled one-line input of the add and edit forms (the label wraps it, so it names the input). */
function TextField(props: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  required?: boolean;
}): JSX.Element {
  return (
    <label>
      {props.label}
      <input value={props.value} required={props.required} onChange={e => props.onChange(e.target.value)} />
    </label>
  );
}

/** The forms' error line (an alert) and their submit / Cancel buttons. */
function FormFooter(props: { error: string | null; busy: boolean; submit: string; onCancel: () => void }): JSX.Element {
  return (
    <>
      {props.error && (
        <div className="eca-McpForm-error" role="alert">
          {props.error}
        </div>
      )}
      <div className="eca-McpForm-buttons">
        <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={props.busy}>
          {props.submit}
        </button>
        <button type="button" className="jp-mod-styled" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </>
  );
}

function EditForm(props: {
  server: McpServerInfo;
  onUpdate: NonNullable<McpServersProps['onUpdate']>;
  onDone: () => void;
}): JSX.Element {
  const { server } = props;
  const remote = !server.command && Boolean(server.url);
  const [command, setCommand] = React.useState(server.command ?? '');
  const [args, setArgs] = React.useState(joinArgs(server.args));
  const [url, setUrl] = React.useState(server.url ?? '');
  const [error, setError] = React.useState<string | null>(null);
  const [busy, setBusy] = React.useState(false);
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    const change = remote ? { url: url.trim() } : { command: command.trim(), args: splitArgs(args) };
    setBusy(true);
    const ok = await run(() => props.onUpdate(server.name, change), setError);
    setBusy(false);
    if (ok) {
      props.onDone();
    }
  };
  return (
    <form className="eca-McpForm" aria-label={`Edit MCP server ${server.name}`} onSubmit={submit}>
      {remote ? (
        <TextField label="URL" value={url} onChange={setUrl} required />
      ) : (
        <>
          <TextField label="Command" value={command} onChange={setCommand} required />
          <TextField label="Arguments" value={args} onChange={setArgs} />
        </>
      )}
      <FormFooter error={error} busy={busy} submit="Save" onCancel={props.onDone} />
    </form>
  );
}

function ServerRow(props: McpServersProps & { server: McpServerInfo }): JSX.Element {
  const { server } = props;
  const [mode, setMode] = React.useState<'view' | 'edit' | 'confirm-remove'>('view');
  const [error, setError] = React.useState<string | null>(null);
  const busy = server.status === 'starting';
  const up = server.status === 'running' || busy;
  const disabled = server.status === 'disabled' || Boolean(server.disabled);
  const remove = async () => {
    if (props.onRemove && (await run(() => props.onRemove!(server.name), setError))) {
      setMode('view');
    }
  };
  return (
    <li className="eca-McpServer" data-status={server.status} aria-label={`MCP server ${server.name}`}>
      <span className="eca-McpServer-name">{server.name}</span>
      <span className="eca-McpServer-status">
        {server.status}
        {server.status === 'running' && server.tools ? ` · ${server.tools.length} tools` : ''}
      </span>
      {!disabled && (
        <button
          className="jp-mod-styled"
          disabled={busy}
          aria-label={`${up ? 'Stop' : 'Start'} ${server.name}`}
          onClick={() => props.onToggle(server.name, !up)}
        >
          {up ? 'Stop' : 'Start'}
        </button>
      )}
      {props.onSetEnabled && (
        <button
          className="jp-mod-styled"
          aria-label={`${disabled ? 'Enable' : 'Disable'} ${server.name}`}
          onClick={() => props.onSetEnabled!(server.name, disabled)}
        >
          {disabled ? 'Enable' : 'Disable'}
        </button>
      )}
      {props.onUpdate && (
        <button
          className="jp-mod-styled"
          aria-label={`Edit ${server.name}`}
          aria-expanded={mode === 'edit'}
          onClick={() => setMode(mode === 'edit' ? 'view' : 'edit')}
        >
          Edit
        </button>
      )}
      {props.onRemove && (
        <button
          className="jp-mod-styled"
          aria-label={`Remove ${server.name}`}
          onClick={() => setMode('confirm-remove')}
        >
          Remove
        </button>
      )}
      {mode === 'edit' && props.onUpdate && (
        <EditForm server={server} onUpdate={props.onUpdate} onDone={() => setMode('view')} />
      )}
      {mode === 'confirm-remove' && (
        <div className="eca-McpConfirm" role="group" aria-label={`Confirm removing ${server.name}`}>
          <span>Remove {server.name} from its config file?</span>
          <button className="jp-mod-styled jp-mod-warn" onClick={() => void remove()}>
            Yes, remove
          </button>
          <button className="jp-mod-styled" onClick={() => setMode('view')}>
            Cancel
          </button>
        </div>
      )}
      {error && mode !== 'edit' && (
        <div className="eca-McpForm-error" role="alert">
          {error}
        </div>
      )}
    </li>
  );
}

export function McpServers(props: McpServersProps): JSX.Element {
  const [adding, setAdding] = React.useState(false);
  // the user's open/closed, kept across re-renders (a failed server opens it too)
  const [open, setOpen] = React.useState(false);
  const running = props.servers.filter(s => s.status === 'running').length;
  const failed = props.servers.some(s => s.status === 'failed');
  return (
    <details
      className={`eca-McpServers${failed ? ' eca-mod-failed' : ''}`}
      open={open || failed || adding}
      onToggle={e => setOpen((e.currentTarget as HTMLDetailsElement).open)}
    >
      <summary>
        MCP servers: {running}/{props.servers.length} running
      </summary>
      <ul>
        {props.servers.map(server => (
          <ServerRow key={server.name} {...props} server={server} />
        ))}
      </ul>
      {props.onAdd &&
        (adding ? (
          <AddForm onAdd={props.onAdd} onDone={() => setAdding(false)} />
        ) : (
          <button className="jp-mod-styled eca-McpServers-add" onClick={() => setAdding(true)}>
            Add MCP server
          </button>
        ))}
    </details>
  );
}
