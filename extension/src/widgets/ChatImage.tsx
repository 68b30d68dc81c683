/**
 * An `image` chat content: a prompt's attached screenshot or an MCP tool's picture. Drawn from a raster `data:` URL
 * only (`imageDataUrl`: never SVG, never a URL the browser would fetch — model and tool output is untrusted), at most
 * 320 px high in the list; a click shows it whole over the panel, a click or Escape closes it.
 */

import * as React from 'react';

import { base64Bytes, humanBytes, imageDataUrl } from '../images';
import type { ImageItem } from '../model';

export function ChatImage(props: { item: ImageItem }): JSX.Element {
  const { item } = props;
  const [enlarged, setEnlarged] = React.useState(false);
  const src = imageDataUrl(item.mediaType, item.base64);
  React.useEffect(() => {
    if (!enlarged) {
      return;
    }
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && setEnlarged(false);
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [enlarged]);
  const label = `${item.mediaType} · ${humanBytes(base64Bytes(item.base64))}`;
  if (!src) {
    return <div className="eca-Message eca-mod-system eca-ImageNotShown">{`[image not shown: ${label}]`}</div>;
  }
  return (
    <div className={`eca-Message eca-mod-image eca-mod-${item.role}`}>
      <img
        className="eca-ChatImage"
        src={src}
        alt={item.role === 'user' ? 'attached image' : 'image'}
        title={`${label} — click to enlarge`}
        onClick={() => setEnlarged(true)}
      />
      {enlarged && (
        <div className="eca-ImageOverlay" role="dialog" aria-label="Image" onClick={() => setEnlarged(false)}>
          <img src={src} alt="" />
        </div>
      )}
    </div>
  );
}
