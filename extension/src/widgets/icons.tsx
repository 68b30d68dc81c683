/**
 * JupyterLab's own icons for contexts and commands (theme-aware SVGs; emoji need fonts a server may not have).
 */

import * as React from 'react';
import {
  LabIcon,
  extensionIcon,
  fileIcon,
  folderIcon,
  imageIcon,
  inspectorIcon,
  historyIcon,
  linkIcon,
  listIcon,
  notebookIcon,
  runIcon,
  textEditorIcon,
  treeViewIcon
} from '@jupyterlab/ui-components';

import type { IconKind } from '../completion';

const ICONS: Record<IconKind, LabIcon> = {
  file: fileIcon,
  directory: folderIcon,
  web: linkIcon,
  repoMap: treeViewIcon,
  cursor: textEditorIcon,
  mcpResource: extensionIcon,
  git: historyIcon,
  cell: notebookIcon,
  command: runIcon,
  variable: listIcon,
  output: inspectorIcon,
  image: imageIcon,
  other: fileIcon
};

export function KindIcon(props: { kind: IconKind }): JSX.Element {
  const icon = ICONS[props.kind] ?? fileIcon;
  return <icon.react tag="span" className="eca-Icon" width="14px" height="14px" />;
}
