/**
 * MCP servers configured for this workspace: status from `tool/serverUpdated`, Start/Stop through
 * `mcp/startServer` / `mcp/stopServer`. Collapsed by default — it is a status line until something fails.
 */

import * as React from 'react';

export interface McpServerInfo {
  name: string;
  status: string;
  tools?: unknown[] | null;
}

export function McpServers(props: {
  servers: McpServerInfo[];
  onToggle: (name: string, running: boolean) => void;
}): JSX.Element {
  const running = props.servers.filter(s => s.status === 'running').length;
  const failed = props.servers.some(s => s.status === 'failed');
  return (
    <details className={`eca-McpServers${failed ? ' eca-mod-failed' : ''}`} open={failed}>
      <summary>
        MCP servers: {running}/{props.servers.length} running
      </summary>
      <ul>
        {props.servers.map(server => {
          const busy = server.status === 'starting';
          const up = server.status === 'running' || busy;
          return (
            <li key={server.name} className="eca-McpServer" data-status={server.status}>
              <span className="eca-McpServer-name">{server.name}</span>
              <span className="eca-McpServer-status">
                {server.status}
                {server.status === 'running' && server.tools ? ` · ${server.tools.length} tools` : ''}
              </span>
              <button
                className="jp-mod-styled"
                disabled={busy}
                onClick={() => props.onToggle(server.name, !up)}
              >
                {up ? 'Stop' : 'Start'}
              </button>
            </li>
          );
        })}
      </ul>
    </details>
  );
}
