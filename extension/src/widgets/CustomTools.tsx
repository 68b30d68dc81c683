/**
 * The config's custom tools (`customTools`: command lines the user declared as tools), listed from the native
 * `tool/serverUpdated` (its tools marked `custom`). Read-only: they are edited in the config file. A tool the
 * selected agent is not offered says so; one a workspace declares appears once the workspace is trusted (until then
 * the trust question and `/doctor` name it). Collapsed by default, like the MCP servers above it.
 */

import * as React from 'react';

export interface CustomToolInfo {
  name: string;
  description: string;
  disabled?: boolean;
}

export function CustomTools(props: { tools: CustomToolInfo[] }): JSX.Element | null {
  if (props.tools.length === 0) {
    return null;
  }
  return (
    <details className="eca-McpServers eca-CustomTools">
      <summary>Custom tools: {props.tools.length}</summary>
      <ul>
        {props.tools.map(tool => (
          <li key={tool.name} className="eca-McpServer" aria-label={`Custom tool ${tool.name}`}>
            <span className="eca-McpServer-name">{tool.name}</span>
            <span className="eca-McpServer-status" title={tool.description}>
              {tool.disabled ? 'not offered to this agent · ' : ''}
              {tool.description}
            </span>
          </li>
        ))}
      </ul>
    </details>
  );
}
