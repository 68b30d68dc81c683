/**
 * The prompt box: Enter sends (Shift+Enter for a new line) — while an answer runs, Enter queues the message (shown
 * above the box as queued, removable, sent when the turn ends: `EcaClient.queuePrompt`) —, `/` completes commands (`chat/queryCommands`), `@`
 * completes contexts (`chat/queryContext`: files, directories, code symbols, plus the open notebooks' cells),
 * attached contexts show as removable chips, and the active notebook/editor rides along as a toggleable chip.
 */

import * as React from 'react';

import type { EcaClient } from '../client';
import {
  CellAttachment,
  IconKind,
  Trigger,
  cellLabel,
  cellMention,
  composeMessage,
  contextLabel,
  findTrigger,
  insertMention,
  mentionOf,
  replaceTrigger,
  sameContext
} from '../completion';
import { focusCellContext } from '../cellFocus';
import { MAX_PROMPT_IMAGE_CHARS, attachImageFile, base64Bytes, humanBytes, imageDataUrl, imageFiles } from '../images';
import type { ActiveContext, EditorContextSource } from '../editorContext';
import { cellRow, visible } from '../labels';
import { OutputAttachment, composeOutputs, composerInbox } from '../outputCore';
import type { ChatContext } from '../protocol';
import { KindIcon } from './icons';

type Attachment =
  | { kind: 'context'; context: ChatContext }
  | { kind: 'cell'; cell: CellAttachment }
  | { kind: 'output'; output: OutputAttachment };

interface Suggestion {
  key: string;
  icon: IconKind;
  label: string;
  detail: string;
  /** The whole of it, for the tooltip (label and detail are cut to the panel's width). */
  title?: string;
  apply: () => void;
}

export interface ComposerProps {
  client: EcaClient;
  editors: EditorContextSource;
  running: boolean;
  connected: boolean;
  onStop: () => void;
  onError: (error: unknown) => void;
  /** A prompt was sent (or queued): e.g. the Connect-a-model view closes so its answer shows. */
  onSent?: () => void;
  /** Pickers and usage, shown left of the Send / Stop button. */
  toolbar?: React.ReactNode;
}

const QUERY_DELAY_MS = 60;

export function Composer(props: ComposerProps): JSX.Element {
  const { client, editors } = props;
  const [text, setText] = React.useState('');
  const [attachments, setAttachments] = React.useState<Attachment[]>([]);
  const [auto, setAuto] = React.useState(true);
  const [active, setActive] = React.useState<ActiveContext | null>(() => editors.active());
  const [trigger, setTrigger] = React.useState<Trigger | null>(null);
  const [suggestions, setSuggestions] = React.useState<Suggestion[]>([]);
  const [selected, setSelected] = React.useState(0);
  const input = React.useRef<HTMLTextAreaElement>(null);
  const sequence = React.useRef(0);

  React.useEffect(() => editors.subscribe(() => setActive(editors.active())), [editors]);
  // "Add to chat" on a notebook output: its text or image becomes a chip here
  React.useEffect(
    () =>
      composerInbox.subscribe(items => {
        setAttachments(list => [
          ...list,
          ...items.map(
            (item): Attachment =>
              item.kind === 'output' ? { kind: 'output', output: item.output } : { kind: 'context', context: item.image }
          )
        ]);
        requestAnimationFrame(() => input.current?.focus());
      }),
    []
  );
  const chat = client.store.current;
  const queued = chat?.queued ?? [];

  const contexts = React.useMemo(
    () => attachments.flatMap(a => (a.kind === 'context' ? [a.context] : [])),
    [attachments]
  );

  const close = React.useCallback(() => {
    sequence.current += 1;
    setTrigger(null);
    setSuggestions([]);
  }, []);

  const updateTrigger = React.useCallback(
    (value: string, caret: number) => {
      const found = findTrigger(value, caret);
      if (!found) {
        if (trigger) {
          close();
        }
        return;
      }
      setTrigger(found);
      const seq = ++sequence.current;
      setTimeout(async () => {
        if (seq !== sequence.current) {
          return;
        }
        try {
          const items = await suggest(found, value);
          if (seq === sequence.current) {
            setSuggestions(items);
            setSelected(0);
          }
        } catch (error) {
          console.warn('eca: completion failed', error);
          if (seq === sequence.current) {
            setSuggestions([]);
          }
        }
      }, QUERY_DELAY_MS);
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [trigger, contexts, attachments, auto]
  );

  const applyText = (value: string, caret: number) => {
    setText(value);
    requestAnimationFrame(() => {
      const el = input.current;
      if (el) {
        el.focus();
        el.setSelectionRange(caret, caret);
      }
    });
  };

  const suggest = async (found: Trigger, value: string): Promise<Suggestion[]> => {
    if (found.kind === 'command') {
      const commands = await client.queryCommands(found.query);
      return commands.map(command => ({
        key: 'cmd:' + command.name,
        icon: 'command',
        label: '/' + command.name,
        detail: command.description,
        apply: () => {
          const next = replaceTrigger(value, found, `/${command.name} `);
          applyText(next.text, next.caret);
          close();
        }
      }));
    }
    // the active notebook (its chip on) goes along, so the server offers its kernel's variables (`@df`)
    const current = auto ? editors.active() : null;
    const sent = current && !contexts.some(c => sameContext(c, current.context)) ? [...contexts, current.context] : contexts;
    const fromServer = await client.queryContext(found.query, sent);
    const items: Suggestion[] = fromServer.map((context, index) => {
      // the server's paths are absolute: shown from the Jupyter root, as the file browser shows them
      const shown = 'path' in context && editors.relative ? { ...context, path: editors.relative(context.path) } : context;
      const label = contextLabel(shown);
      return {
        key: `ctx:${index}:${label.detail}`,
        icon: label.icon,
        label: label.label,
        detail: label.detail,
        title: `${label.label} — ${label.detail}`,
        apply: () => {
          setAttachments(list =>
            list.some(a => a.kind === 'context' && sameContext(a.context, context))
              ? list
              : [...list, { kind: 'context', context }]
          );
          const next = insertMention(value, found, mentionOf(context));
          applyText(next.text, next.caret);
          close();
        }
      };
    });
    for (const cell of editors.cells(found.query, 8)) {
      const row = cellRow(cell); // "cell 3 · df = load()": what tells the rows of one notebook apart
      items.push({
        key: `cell:${cell.path}:${cell.index}`,
        icon: 'cell',
        label: row.label,
        detail: row.detail,
        title: row.title,
        apply: () => {
          setAttachments(list =>
            list.some(a => a.kind === 'cell' && a.cell.path === cell.path && a.cell.index === cell.index)
              ? list
              : [...list, { kind: 'cell', cell }]
          );
          const next = insertMention(value, found, cellMention(cell));
          applyText(next.text, next.caret);
          close();
        }
      });
    }
    return items.slice(0, 50);
  };

  // a pasted screenshot or a dropped image file: an `image` context chip (downscaled first when it is large)
  const attachImages = (files: File[]) => {
    for (const file of files) {
      attachImageFile(file)
        .then(image => setAttachments(list => [...list, { kind: 'context', context: image.context }]))
        .catch(props.onError);
    }
  };
  const onPaste = (event: React.ClipboardEvent<HTMLTextAreaElement>) => {
    const files = imageFiles(event.clipboardData);
    if (files.length > 0) {
      if (!event.clipboardData.getData('text/plain')) {
        event.preventDefault(); // a screenshot: nothing to paste as text
      }
      attachImages(files);
    }
  };
  const onDragOver = (event: React.DragEvent<HTMLDivElement>) => {
    if (Array.from(event.dataTransfer.types).includes('Files')) {
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
    }
  };
  const onDrop = (event: React.DragEvent<HTMLDivElement>) => {
    const files = imageFiles(event.dataTransfer);
    if (files.length > 0) {
      event.preventDefault();
      event.stopPropagation();
      attachImages(files);
    }
  };

  const send = async () => {
    const typed = text.trim();
    if (!typed || !props.connected) {
      return;
    }
    const imageChars = contexts.reduce((sum, c) => sum + (c.type === 'image' ? c.base64.length : 0), 0);
    if (imageChars > MAX_PROMPT_IMAGE_CHARS) {
      props.onError(new Error('The attached images are too large for one message: remove some and send again.'));
      return;
    }
    const cells = attachments.flatMap(a => (a.kind === 'cell' ? [a.cell] : []));
    const outputs = attachments.flatMap(a => (a.kind === 'output' ? [a.output] : []));
    const all = [...contexts];
    const current = editors.active() ?? active; // fresh: the cursor may have moved since the chip was drawn
    if (auto && current && !all.some(c => sameContext(c, current.context))) {
      all.push(current.context);
    }
    // with it, the notebook's cell last run or edited and its error output (unless that cell is attached with @),
    // first: the most relevant context, which a small model's budget keeps whole
    if (auto && current?.cell && !cells.some(c => c.path === current.cell?.path && c.index === current.cell?.index)) {
      all.unshift(focusCellContext(current.cell));
    }
    const message = typed;
    setText('');
    setAttachments([]);
    close();
    props.onSent?.();
    try {
      const composed = composeOutputs(composeMessage(message, cells), outputs);
      if (props.running) {
        client.queuePrompt(composed, all);
      } else {
        await client.prompt(composed, all);
      }
    } catch (error) {
      props.onError(error);
    }
  };

  // Alt+Enter or Steer while an answer runs: the text guides that answer (`EcaClient.steer`, chat/promptSteer); it
  // waits above the box until the server takes it in after the current tool calls (attachments stay for a prompt)
  const steer = () => {
    const typed = text.trim();
    if (typed && props.connected && props.running && client.steer(typed)) {
      setText('');
      close();
    }
  };

  const onKeyDown = (event: React.KeyboardEvent<HTMLTextAreaElement>) => {
    if (trigger && suggestions.length > 0) {
      if (event.key === 'ArrowDown') {
        event.preventDefault();
        setSelected(i => (i + 1) % suggestions.length);
        return;
      }
      if (event.key === 'ArrowUp') {
        event.preventDefault();
        setSelected(i => (i - 1 + suggestions.length) % suggestions.length);
        return;
      }
      if (event.key === 'Enter' || event.key === 'Tab') {
        event.preventDefault();
        suggestions[Math.min(selected, suggestions.length - 1)].apply();
        return;
      }
    }
    if (event.key === 'Escape' && trigger) {
      event.preventDefault();
      close();
      return;
    }
    if (event.key === 'Enter' && event.altKey && props.running && !event.nativeEvent.isComposing) {
      event.preventDefault();
      steer();
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };

  return (
    <div className="eca-Composer" onDragOver={onDragOver} onDrop={onDrop}>
      {trigger && suggestions.length > 0 && (
        <ul className="eca-Completions" role="listbox">
          {suggestions.map((s, index) => (
            <li
              key={s.key}
              role="option"
              aria-selected={index === selected}
              className={index === selected ? 'eca-Completion eca-mod-selected' : 'eca-Completion'}
              onMouseDown={event => {
                event.preventDefault();
                s.apply();
              }}
              onMouseEnter={() => setSelected(index)}
              title={s.title}
            >
              <KindIcon kind={s.icon} />
              <span className="eca-Completion-label">{visible(s.label)}</span>
              <span className="eca-Completion-detail">{visible(s.detail)}</span>
            </li>
          ))}
        </ul>
      )}
      {queued.length > 0 && (
        <ul className="eca-Queued" aria-label="Queued messages">
          {queued.map(q => (
            <li className="eca-Queued-item" key={q.id} title={q.message}>
              <span className="eca-Queued-badge">Queued</span>
              <span className="eca-Queued-text">{q.message.split('\n')[0]}</span>
              <button
                className="eca-Queued-remove"
                aria-label="Remove the queued message"
                title="Remove: it will not be sent"
                onClick={() => chat && client.removeQueued(chat.id, q.id)}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div className="eca-Chips">
        {active && (
          <button
            className={auto ? 'eca-Chip eca-mod-auto eca-mod-on' : 'eca-Chip eca-mod-auto'}
            title={`${active.label}\n` +
              (auto ? 'Sent with the prompt: click to leave it out' : 'Left out: click to send it with the prompt')}
            onClick={() => setAuto(on => !on)}
          >
            {auto ? '◉ ' : '○ '}
            {active.label}
          </button>
        )}
        {attachments.map((a, index) => {
          if (a.kind === 'context' && a.context.type === 'image') {
            const name = a.context.name || 'image';
            const src = imageDataUrl(a.context.mediaType, a.context.base64);
            const size = humanBytes(base64Bytes(a.context.base64));
            return (
              <span className="eca-Chip eca-mod-image" key={index} title={`${name} · ${a.context.mediaType} · ${size}`}>
                {src && <img className="eca-Chip-thumb" src={src} alt="" />}
                <span className="eca-Chip-name">{visible(name)}</span>
                <span className="eca-Chip-size">{size}</span>
                <button
                  className="eca-Chip-remove"
                  aria-label={`Remove ${name}`}
                  onClick={() => setAttachments(list => list.filter((_, i) => i !== index))}
                >
                  ×
                </button>
              </span>
            );
          }
          const label =
            a.kind === 'cell'
              ? { label: cellLabel(a.cell), icon: 'cell' as IconKind, detail: a.cell.path }
              : a.kind === 'output'
                ? { label: a.output.label, icon: 'output' as IconKind, detail: a.output.text.slice(0, 200) }
                : contextLabel(a.context);
          return (
            <span className="eca-Chip" key={index} title={label.detail}>
              <KindIcon kind={label.icon} />
              {visible(label.label)}
              <button
                className="eca-Chip-remove"
                aria-label={`Remove ${label.label}`}
                onClick={() => setAttachments(list => list.filter((_, i) => i !== index))}
              >
                ×
              </button>
            </span>
          );
        })}
      </div>
      <textarea
        ref={input}
        className="eca-Composer-input jp-mod-styled"
        placeholder={
          !props.connected
            ? 'Connecting to the ECA server…'
            : props.running
              ? 'Enter queues a message for when this answer ends; Alt+Enter steers this answer'
              : 'Ask ECA… (@ to add context, / for commands)'
        }
        rows={3}
        value={text}
        onChange={event => {
          setText(event.target.value);
          updateTrigger(event.target.value, event.target.selectionStart ?? event.target.value.length);
        }}
        onKeyDown={onKeyDown}
        onPaste={onPaste}
        onBlur={() =>
          setTimeout(() => {
            // Close only if the focus really left (a blur-and-back must not cancel the running query).
            if (document.activeElement !== input.current) {
              close();
            }
          }, 150)
        }
        onFocus={event => {
          // Focus can be taken away while typing (a notebook grabbing it when its kernel starts): complete again.
          const el = event.currentTarget;
          if (findTrigger(el.value, el.selectionStart ?? el.value.length)) {
            updateTrigger(el.value, el.selectionStart ?? el.value.length);
          }
        }}
      />
      <div className="eca-Composer-toolbar">
        {props.toolbar}
        <span className="eca-Composer-spacer" />
        {props.running && (
          <button
            className="jp-mod-styled eca-steer"
            disabled={!props.connected || !text.trim()}
            onClick={steer}
            title="Steer this answer (Alt+Enter): the text joins after its current tool calls"
          >
            Steer
          </button>
        )}
        {props.running ? (
          <button className="jp-mod-styled jp-mod-warn eca-stop" onClick={props.onStop} title="Stop the running prompt">
            Stop
          </button>
        ) : (
          <button
            className="jp-mod-styled jp-mod-accept eca-send"
            disabled={!props.connected || !text.trim()}
            onClick={() => void send()}
            title="Send (Enter)"
          >
            Send
          </button>
        )}
      </div>
    </div>
  );
}

export { Composer as default };
