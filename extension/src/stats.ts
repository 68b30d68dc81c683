/**
 * Render counters, exposed as `window.__ecaPanelStats` for the browser test and the 5,000-chunk benchmark: they show
 * that streaming re-renders only the changing message, once per frame, not the whole list once per chunk.
 */

export interface RenderStats {
  /** ChatApp renders (the whole panel). */
  panel: number;
  /** MessageList renders. */
  list: number;
  /** Renders of individual message items. */
  items: number;
  /** Markdown renders through the rendermime renderer. */
  markdown: number;
}

export const renderStats: RenderStats = { panel: 0, list: 0, items: 0, markdown: 0 };

export function resetRenderStats(): void {
  renderStats.panel = 0;
  renderStats.list = 0;
  renderStats.items = 0;
  renderStats.markdown = 0;
}
