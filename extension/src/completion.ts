/**
 * The composer's pure helpers: which completion the caret is in (`/command` at the start, `@context` anywhere),
 * labels for contexts, and turning attachments into the `chat/prompt` message and contexts.
 * No JupyterLab imports (unit-tested under node in `test/completion.test.ts`).
 */

import type { ChatContext } from './protocol';

export interface Trigger {
  kind: 'command' | 'context';
  /** What the user typed after `/` or `@`. */
  query: string;
  /** Offset of the `/` or `@`. */
  start: number;
  /** Offset just past the query (the caret). */
  end: number;
}

/** The completion the caret is in, if any: `/name` only as the first word, `@query` after a space or at the start. */
export function findTrigger(text: string, caret: number): Trigger | null {
  const before = text.slice(0, caret);
  const command = /^\/([^\s]*)$/.exec(before);
  if (command) {
    return { kind: 'command', query: command[1], start: 0, end: caret };
  }
  const context = /(^|\s)@([^\s@]*)$/.exec(before);
  if (context) {
    return { kind: 'context', query: context[2], start: caret - context[2].length - 1, end: caret };
  }
  return null;
}

/** Replace the trigger's text (`/que` or `@que`) with `replacement`; returns the new text and caret. */
export function replaceTrigger(text: string, trigger: Trigger, replacement: string): { text: string; caret: number } {
  let rest = text.slice(trigger.end);
  if (replacement === '' && trigger.start > 0 && text[trigger.start - 1] === ' ' && rest.startsWith(' ')) {
    rest = rest.slice(1); // removing "@foo" from "a @foo b" leaves "a b"
  }
  return { text: text.slice(0, trigger.start) + replacement + rest, caret: trigger.start + replacement.length };
}

function basename(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '');
  const index = Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\'));
  return index >= 0 ? trimmed.slice(index + 1) : trimmed;
}

/**
 * `:8-15` for a file context of some lines, else ''. With a `description` as well, the context is a code symbol the
 * server offered (`chat/queryContext`), e.g. "class Circle".
 */
function linesOf(context: { linesRange?: { start: number; end: number } | null }): string {
  return context.linesRange ? `:${context.linesRange.start}-${context.linesRange.end}` : '';
}

/** Which icon a context shows (the widgets map it to a JupyterLab icon). */
export type IconKind =
  | 'file'
  | 'directory'
  | 'web'
  | 'repoMap'
  | 'cursor'
  | 'mcpResource'
  | 'git'
  | 'cell'
  | 'command'
  | 'variable'
  | 'output'
  | 'image'
  | 'other';

/** The pseudo-server of the contexts that name a variable of the active notebook's kernel (`@df`). */
export const KERNEL_SERVER = 'kernel';

/** A short label for a context chip or completion item, plus a longer detail. */
export function contextLabel(context: ChatContext): { label: string; detail: string; icon: IconKind } {
  switch (context.type) {
    case 'file': {
      const where = basename(context.path) + linesOf(context);
      if (context.description && context.linesRange) {
        // a code symbol: its kind and name as the label (short enough for a narrow panel), then where it is — the
        // file's name and lines first, as the detail is cut at the end
        return { label: context.description, detail: `${where} · ${context.path}`, icon: 'file' };
      }
      return { label: where, detail: context.path, icon: 'file' };
    }
    case 'directory':
      return { label: basename(context.path) + '/', detail: context.path, icon: 'directory' };
    case 'web':
      return { label: context.url, detail: context.url, icon: 'web' };
    case 'repoMap':
      return { label: 'repoMap', detail: 'Workspace structure', icon: 'repoMap' };
    case 'cursor': {
      const s = context.position.start;
      const e = context.position.end;
      const where = s.line === e.line && s.character === e.character ? `${s.line}` : `${s.line}-${e.line}`;
      return { label: `${basename(context.path)}:${where}`, detail: context.path, icon: 'cursor' };
    }
    case 'mcpResource':
      if (context.server === KERNEL_SERVER) {
        // a live kernel variable: its name, then its type and shape ("DataFrame shape=(3, 2)")
        return { label: context.name, detail: context.description || 'kernel variable', icon: 'variable' };
      }
      return { label: context.name || context.uri, detail: `${context.server}: ${context.uri}`, icon: 'mcpResource' };
    case 'image':
      return { label: context.name || 'image', detail: context.mediaType, icon: 'image' };
    case 'git':
      // `@git` / `@git:diff`, as typed; the server describes it (branch and changes) in its completion answer
      return {
        label: context.part ? `git:${context.part}` : 'git',
        detail: context.description || (context.part ? `Git ${context.part}` : 'Git status, recent commits and diff'),
        icon: 'git'
      };
    default:
      return { label: String((context as any).type), detail: '', icon: 'other' };
  }
}

/**
 * What stays in the prompt where `@query` was typed once a context is picked: a short mention of it
 * (`@README.md`, `@shapes.py:8-15`, `@Circle`, `@git:diff`, `@src/`), so "compare @a.py with @b.py" still reads
 * as the user meant — the model gets the contexts themselves after the message. The reference ECA client (eca-emacs)
 * keeps such a mention in the prompt too.
 */
export function mentionOf(context: ChatContext): string {
  switch (context.type) {
    case 'file': {
      if (context.description && context.linesRange) {
        // a code symbol ("class Circle", "method Circle.area"): its name
        const words = context.description.trim().split(/\s+/);
        return '@' + words[words.length - 1];
      }
      return '@' + basename(context.path) + linesOf(context);
    }
    case 'directory':
      return '@' + basename(context.path) + '/';
    case 'web':
      return '@' + context.url;
    case 'repoMap':
      return '@repoMap';
    case 'cursor':
      return '@cursor';
    case 'mcpResource':
      if (context.server === KERNEL_SERVER) {
        return '@' + context.name; // as `%eca @df` writes it
      }
      return `@${context.server}:${(context.name || context.uri).replace(/\s+/g, '-')}`;
    case 'image':
      return '@' + (context.name || 'image').replace(/\s+/g, '-');
    case 'git':
      return context.part ? `@git:${context.part}` : '@git';
    default:
      return '@' + String((context as any).type);
  }
}

/** The mention of an attached notebook cell (its block after the message names the notebook and the cell). */
export function cellMention(cell: CellAttachment): string {
  return `@${basename(cell.path)}:cell${cell.index + 1}`;
}

/** Replace the trigger's `@query` with `mention` and a space (unless one follows already), the caret after it. */
export function insertMention(text: string, trigger: Trigger, mention: string): { text: string; caret: number } {
  const spaced = /^\s/.test(text.slice(trigger.end)); // a space follows already: the caret goes past it
  const next = replaceTrigger(text, trigger, spaced ? mention : mention + ' ');
  return spaced ? { text: next.text, caret: next.caret + 1 } : next;
}

/** Same context (ignoring label-only differences), for de-duplicating attachments. */
export function sameContext(a: ChatContext, b: ChatContext): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A notebook cell attached with `@`: sent inline in the message (the protocol has no cell context type). */
export interface CellAttachment {
  path: string;
  /** 0-based index in the notebook. */
  index: number;
  cellType: string;
  language: string;
  source: string;
}

export function cellLabel(cell: CellAttachment): string {
  return `${basename(cell.path)} · cell ${cell.index + 1}`;
}

/** The prompt text: the user's message, then each attached cell as a fenced block naming its notebook. */
export function composeMessage(text: string, cells: CellAttachment[]): string {
  let message = text.trim();
  for (const cell of cells) {
    const fence = cell.source.includes('```') ? '~~~~' : '```';
    const lang = cell.cellType === 'markdown' ? 'markdown' : cell.language;
    message += `\n\nCell ${cell.index + 1} (${cell.cellType}) of ${cell.path}:\n${fence}${lang}\n${cell.source}\n${fence}`;
  }
  return message;
}
