/**
 * Tokens other JupyterLab plug-ins can require to reach the ECA panel (e.g. to send a prompt from a command).
 */

import { Token } from '@lumino/coreutils';

import type { EcaClient } from './client';

export interface IEcaChat {
  /** The ECA client of this page (one WebSocket shared by the panel and any other plug-in). */
  readonly client: EcaClient;
  /** Reveal the chat panel in the sidebar. */
  open(): void;
}

export const IEcaChat = new Token<IEcaChat>(
  'eca-notebook:IEcaChat',
  'The ECA chat panel and its client (JSON-RPC over the eca WebSocket).'
);
