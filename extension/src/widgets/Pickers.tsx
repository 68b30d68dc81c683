/**
 * Model, variant and behaviour pickers, fed by `config/updated` (the server may force a selection), the chat's trust
 * toggle and its usage (with the context meter). Models are grouped by provider and shown by name, cut in the middle when long, the full id in the
 * tooltip (a narrow panel used to cut `local/smollm2-135m` to "local/smollm:").
 */

import * as React from 'react';

import type { ClientConfig } from '../client';
import { modelLabel } from '../labels';
import { compactTokens, contextTitle } from '../contextMeter';
import type { UsageContent } from '../protocol';

export interface PickersProps {
  config: ClientConfig;
  onModel: (model: string) => void;
  onBehavior: (behavior: string) => void;
  /** A variant of the model was chosen (undefined: none, shown as "-"). */
  onVariant?: (variant: string | undefined) => void;
}

/** Model ids by provider, in their order (the picker's option groups: the options then show names alone). */
function groupByProvider(models: string[]): [string, string[]][] {
  const groups = new Map<string, string[]>();
  for (const model of models) {
    const provider = modelLabel(model).provider;
    groups.set(provider, [...(groups.get(provider) ?? []), model]);
  }
  return [...groups.entries()];
}

export function Pickers(props: PickersProps): JSX.Element {
  const { config } = props;
  const models = config.model && !config.models.includes(config.model) ? [config.model, ...config.models] : config.models;
  return (
    <span className="eca-Pickers">
      <select
        className="eca-ModelPicker jp-mod-styled"
        title={config.model ? `Model: ${config.model}` : 'Model'}
        aria-label="Model"
        value={config.model ?? ''}
        onChange={event => props.onModel(event.target.value)}
        disabled={models.length === 0}
      >
        {models.length === 0 && <option value="">no model</option>}
        {groupByProvider(models).map(([provider, ids]) => {
          const options = ids.map(model => (
            <option key={model} value={model} title={model}>
              {modelLabel(model).label}
            </option>
          ));
          return provider ? (
            <optgroup key={provider} label={provider}>
              {options}
            </optgroup>
          ) : (
            options
          );
        })}
      </select>
      {config.variants && config.variants.length > 0 && (
        <select
          className="eca-VariantPicker jp-mod-styled"
          title={config.variant ? `Variant: ${config.variant}` : 'Variant (reasoning effort…)'}
          aria-label="Variant"
          value={config.variant ?? ''}
          onChange={event => props.onVariant?.(event.target.value || undefined)}
        >
          <option value="">-</option>
          {config.variants.map(variant => (
            <option key={variant} value={variant}>
              {variant}
            </option>
          ))}
        </select>
      )}
      <select
        className="eca-BehaviorPicker eca-AgentPicker jp-mod-styled"
        title="Agent"
        aria-label="Agent"
        value={config.behavior ?? ''}
        onChange={event => props.onBehavior(event.target.value)}
        disabled={config.behaviors.length === 0}
      >
        {config.behaviors.map(behavior => (
          <option key={behavior} value={behavior}>
            {behavior}
          </option>
        ))}
      </select>
    </span>
  );
}

export const TRUST_TITLE =
  "Approve this chat's tool calls without asking (deny rules and paths outside the workspace still ask)";

/**
 * The chat's trust mode (the reference clients' trust indicator): a toggle button (`aria-pressed`), in the warning
 * colour while on, since tool calls then run without an approval card.
 */
export function TrustToggle(props: { trust: boolean; onChange: (trust: boolean) => void }): JSX.Element {
  return (
    <button
      type="button"
      className={'eca-TrustToggle' + (props.trust ? ' eca-mod-trusted' : '')}
      aria-pressed={props.trust}
      aria-label="Trust"
      title={TRUST_TITLE}
      onClick={() => props.onChange(!props.trust)}
    >
      {props.trust ? 'Trust: on' : 'Trust'}
    </button>
  );
}

const compact = compactTokens;

/** "1.2k tokens · $0.0031" (+ share of the context window when the model's limit is known). */
export function usageText(usage: UsageContent | undefined): string {
  if (!usage) {
    return '';
  }
  const parts = [`${compact(usage.sessionTokens)} tokens`];
  if (usage.limit && usage.limit.context > 0) {
    const share = (100 * usage.sessionTokens) / usage.limit.context;
    parts[0] += ` (${share > 0 && share < 1 ? '<1' : Math.min(100, Math.round(share))}% of context)`;
  }
  if (usage.sessionCost !== undefined && usage.sessionCost !== null && usage.sessionCost !== '') {
    parts.push(`$${usage.sessionCost}`);
  }
  return parts.join(' · ');
}

/** A small bar of how full the context window is (usage.contextBreakdown), coloured by category as the server says,
 * with a mark at autoCompactPercentage; the breakdown on hover. Nothing when the window is unknown. */
export function ContextMeter(props: { usage: UsageContent | undefined }): JSX.Element | null {
  const usage = props.usage;
  const b = usage?.contextBreakdown;
  const limit = b?.contextLimit;
  if (!usage || !b || !limit || limit <= 0) {
    return null;
  }
  const bar: React.CSSProperties = {
    display: 'inline-flex', width: '48px', height: '6px', marginLeft: '6px', verticalAlign: 'middle',
    position: 'relative', overflow: 'hidden', borderRadius: '2px', background: b.freeColor ?? '#5c6370'
  };
  return (
    <span className="eca-ContextMeter" style={bar} title={contextTitle(usage)} aria-label="Context window usage"
      role="meter" aria-valuemin={0} aria-valuemax={limit} aria-valuenow={b.usedTokens}>
      {b.categories.map(c => (
        <span key={c.name} style={{ width: `${(100 * c.tokens) / limit}%`, background: c.color, height: '100%' }} />
      ))}
      {usage.autoCompactPercentage ? (
        <span className="eca-ContextMeter-mark" style={{
          position: 'absolute', left: `${usage.autoCompactPercentage}%`, top: 0, bottom: 0, width: '1px',
          background: 'var(--jp-ui-font-color1, #000)'
        }} />
      ) : null}
    </span>
  );
}

export function Usage(props: { usage: UsageContent | undefined }): JSX.Element | null {
  const text = usageText(props.usage);
  if (!text) {
    return null;
  }
  const last = props.usage?.lastMessageCost;
  return (
    <span className="eca-Usage" title={last ? `Last message: $${last}` : undefined}>
      {text}
      <ContextMeter usage={props.usage} />
    </span>
  );
}
