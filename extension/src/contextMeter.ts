/**
 * The context meter's text: how full the model's context window is, from `usage.contextBreakdown` and
 * `usage.autoCompactPercentage` (the reference server's fields). Kept apart from the React widget so it is tested
 * without a DOM.
 */
import type { UsageContent } from './protocol';

/** "1.2k", "15k", "1.5M": a token count as the usage line shows it. */
export function compactTokens(n: number): string {
  if (n >= 1_000_000) {
    return (n / 1_000_000).toFixed(1) + 'M';
  }
  if (n >= 10_000) {
    return Math.round(n / 1000) + 'k';
  }
  if (n >= 1000) {
    return (n / 1000).toFixed(1) + 'k';
  }
  return String(n);
}

/** The hover text of the context meter: each category's tokens, the free part and the auto-compact threshold. */
export function contextTitle(usage: UsageContent): string {
  const b = usage.contextBreakdown;
  if (!b) {
    return '';
  }
  const lines = b.categories.map(c => `${c.emoji} ${c.name}: ${compactTokens(c.tokens)} tokens`);
  if (b.freeTokens !== undefined && b.freeTokens !== null) {
    lines.push(`${b.freeEmoji ?? ''} Free: ${compactTokens(b.freeTokens)} tokens`.trim());
  }
  if (usage.autoCompactPercentage) {
    lines.push(`Compacts automatically at ${usage.autoCompactPercentage}% of the context window`);
  }
  return lines.join('\n');
}
