/**
 * The model's questions (`chat/askQuestion`, from its `ask_user` tool) waiting for the user, per chat.
 *
 * The server's request stays open until the user answers in the panel's question card: `ask` returns a promise
 * the card settles through `answer`. A question the server gives up on (the chat's Stop or the tool's timeout
 * cancel the request: `signal` aborts) leaves the panel at once. Questions of one chat are answered in order.
 *
 * Pure TypeScript: no JupyterLab imports.
 */

import type { ChatAskQuestionParams, ChatAskQuestionResult } from './protocol';

export interface PendingQuestion {
  params: ChatAskQuestionParams;
  /** Settle the request: the option's label or typed text; `null` when the user skipped the question. */
  answer(answer: string | null): void;
}

export class Questions {
  private readonly _pending = new Map<string, PendingQuestion[]>();

  /** `changed` is called whenever the questions shown change (the store's flush). */
  constructor(private readonly _changed: () => void) {}

  /** The question the chat's card shows: its oldest one still waiting. */
  get(chatId: string): PendingQuestion | undefined {
    return this._pending.get(chatId)?.[0];
  }

  /** Serve one `chat/askQuestion` request. */
  ask(params: ChatAskQuestionParams, signal?: AbortSignal): Promise<ChatAskQuestionResult> {
    return new Promise(resolve => {
      const chatId = String(params.chatId);
      const pending: PendingQuestion = {
        params,
        answer: answer => {
          if (this._remove(chatId, pending)) {
            resolve(answer === null ? { cancelled: true } : { answer, cancelled: false });
          }
        }
      };
      const list = this._pending.get(chatId) ?? [];
      list.push(pending);
      this._pending.set(chatId, list);
      signal?.addEventListener('abort', () => {
        if (this._remove(chatId, pending)) {
          resolve({ cancelled: true }); // nobody reads it: the server cancelled the request
        }
      });
      this._changed();
    });
  }

  private _remove(chatId: string, pending: PendingQuestion): boolean {
    const list = this._pending.get(chatId);
    const index = list ? list.indexOf(pending) : -1;
    if (!list || index < 0) {
      return false;
    }
    list.splice(index, 1);
    if (list.length === 0) {
      this._pending.delete(chatId);
    }
    this._changed();
    return true;
  }
}
