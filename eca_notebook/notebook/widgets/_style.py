"""The chat widget's look: one small style block, in JupyterLab's CSS variables only.

Every colour is a ``var(--jp-…)`` with a neutral fallback, so the widget follows the light and dark themes of
JupyterLab and Notebook 7 (and stays readable in VS Code, which defines most of the same variables). Nothing here
hardcodes a background or text colour that could vanish on a dark theme.
"""

from __future__ import annotations

__all__ = ["CSS", "style_html"]

CSS = """
.eca-chat { font-family: var(--jp-ui-font-family, sans-serif); font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-ui-font-color1, inherit); border-left: 3px solid var(--jp-brand-color1, #1976d2);
  padding-left: 8px; }
.eca-user { color: var(--jp-ui-font-color2, inherit); font-style: italic; margin: 2px 0 4px 0;
  white-space: pre-wrap; }
.eca-note { color: var(--jp-ui-font-color2, inherit); font-size: var(--jp-ui-font-size0, 11px); margin: 2px 0; }
.eca-error { color: var(--jp-error-color1, #d32f2f); }
.eca-progress { color: var(--jp-ui-font-color2, inherit); font-size: var(--jp-ui-font-size0, 11px); }
.eca-footer { color: var(--jp-ui-font-color3, inherit); font-size: var(--jp-ui-font-size0, 11px);
  border-top: 1px solid var(--jp-border-color2, rgba(127,127,127,.3)); margin-top: 4px; padding-top: 2px; }
.eca-card { border: 1px solid var(--jp-border-color1, rgba(127,127,127,.5)); border-radius: 4px;
  margin: 4px 0; padding: 4px 6px; background: var(--jp-layout-color1, transparent); }
.eca-card-title { font-weight: 600; color: var(--jp-ui-font-color1, inherit); }
.eca-card-kind { font-size: var(--jp-ui-font-size0, 11px); text-transform: uppercase; letter-spacing: .05em;
  color: var(--jp-ui-font-color2, inherit); }
.eca-card-summary { color: var(--jp-ui-font-color2, inherit); }
.eca-status { font-size: var(--jp-ui-font-size0, 11px); padding: 0 4px; border-radius: 3px;
  border: 1px solid var(--jp-border-color2, rgba(127,127,127,.3)); }
.eca-status-pending { color: var(--jp-warn-color1, #f57c00); border-color: var(--jp-warn-color1, #f57c00); }
.eca-status-done { color: var(--jp-success-color1, #388e3c); border-color: var(--jp-success-color1, #388e3c); }
.eca-status-failed, .eca-status-rejected { color: var(--jp-error-color1, #d32f2f);
  border-color: var(--jp-error-color1, #d32f2f); }
.eca-risk { font-size: var(--jp-ui-font-size0, 11px); padding: 0 4px; border-radius: 8px; border: 1px solid;
  color: var(--jp-ui-font-color2, inherit); white-space: nowrap; }
.eca-risk-medium { color: var(--jp-warn-color1, #f57c00); }
.eca-risk-high { color: var(--jp-error-color1, #d32f2f); font-weight: 600; }
.eca-risk-reason { font-size: var(--jp-ui-font-size0, 11px); border: none; font-weight: normal; margin-top: 2px; }
.eca-rationale, .eca-found { font-size: var(--jp-ui-font-size0, 11px); margin-top: 4px; }
.eca-criteria { margin: 2px 0 0; padding-left: 18px; opacity: 0.8; }
.eca-chat .widget-html-content { line-height: 1.4; }
.eca-args, .eca-output { font-family: var(--jp-code-font-family, monospace); line-height: 1.4;
  font-size: var(--jp-code-font-size, 12px); white-space: pre-wrap; margin: 0;
  color: var(--jp-content-font-color1, inherit); }
.eca-diff { font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 12px);
  margin: 2px 0; border: 1px solid var(--jp-border-color2, rgba(127,127,127,.3)); border-radius: 3px;
  overflow-x: auto; }
.eca-diff-head { padding: 2px 6px; background: var(--jp-layout-color2, rgba(127,127,127,.1));
  color: var(--jp-ui-font-color1, inherit); }
.eca-diff-line { white-space: pre; padding: 0 6px; color: var(--jp-content-font-color1, inherit);
  line-height: var(--jp-code-line-height, 1.4); }
.eca-diff-add { background: var(--jp-diff-added-color0, rgba(46,160,67,.15));
  color: var(--jp-success-color0, inherit); }
.eca-diff-del { background: var(--jp-diff-deleted-color0, rgba(248,81,73,.15));
  color: var(--jp-error-color0, inherit); }
.eca-diff-hunk { color: var(--jp-brand-color1, inherit); }
.eca-plus { color: var(--jp-success-color1, #388e3c); }
.eca-minus { color: var(--jp-error-color1, #d32f2f); }
.eca-chat details > summary { cursor: pointer; color: var(--jp-ui-font-color2, inherit); }
.eca-plan { border: 1px solid var(--jp-border-color2, rgba(127,127,127,.3)); border-radius: 4px; margin: 4px 0;
  padding: 3px 6px; }
.eca-plan-head { font-weight: 600; color: var(--jp-ui-font-color1, inherit); }
.eca-plan-note { color: var(--jp-ui-font-color2, inherit); white-space: pre-wrap; }
.eca-plan-steps { list-style: none; margin: 2px 0; padding: 0; }
.eca-plan-step { line-height: 1.5; color: var(--jp-ui-font-color1, inherit); }
.eca-plan-mark { display: inline-block; width: 1.2em; text-align: center; }
.eca-plan-completed .eca-plan-mark { color: var(--jp-success-color1, #388e3c); }
.eca-plan-completed .eca-plan-text { color: var(--jp-ui-font-color2, inherit); text-decoration: line-through; }
.eca-plan-in_progress { font-weight: 600; background: var(--jp-layout-color2, rgba(127,127,127,.1)); }
.eca-plan-in_progress .eca-plan-mark { color: var(--jp-brand-color1, #1976d2); }
.eca-plan-file { font-size: var(--jp-ui-font-size0, 11px); margin-left: 4px; padding: 0 3px;
  background: var(--jp-layout-color2, rgba(127,127,127,.1)); border-radius: 3px; }
.eca-remote-image { border: 1px dashed var(--jp-border-color1, rgba(127,127,127,.5)); border-radius: 3px;
  padding: 0 4px; }
.eca-code .k, .eca-code .kc, .eca-code .kd, .eca-code .kn, .eca-code .kp, .eca-code .kr, .eca-code .kt,
.eca-code .ow { color: var(--jp-mirror-editor-keyword-color, #008000); font-weight: bold; }
.eca-code .s, .eca-code .s1, .eca-code .s2, .eca-code .sa, .eca-code .sb, .eca-code .sc, .eca-code .sd,
.eca-code .se, .eca-code .sh, .eca-code .si, .eca-code .sr, .eca-code .ss, .eca-code .sx, .eca-code .dl
  { color: var(--jp-mirror-editor-string-color, #ba2121); }
.eca-code .c, .eca-code .c1, .eca-code .ch, .eca-code .cm, .eca-code .cp, .eca-code .cpf, .eca-code .cs
  { color: var(--jp-mirror-editor-comment-color, #408080); font-style: italic; }
.eca-code .m, .eca-code .mb, .eca-code .mf, .eca-code .mh, .eca-code .mi, .eca-code .mo, .eca-code .il
  { color: var(--jp-mirror-editor-number-color, #080); }
.eca-code .nf, .eca-code .fm, .eca-code .nc, .eca-code .nn { color: var(--jp-mirror-editor-def-color, #00f); }
.eca-code .nb, .eca-code .bp { color: var(--jp-mirror-editor-builtin-color, #008000); }
.eca-code .o { color: var(--jp-mirror-editor-operator-color, #aa22ff); }
"""


def style_html() -> str:
    return f"<style>{CSS}</style>"
