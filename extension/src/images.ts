/**
 * Images in the panel: a pasted screenshot or a dropped image file becomes an `image` context (the reference's
 * `ImageContext`), and an `image` chat content (a prompt's attachment, an MCP tool's picture) is shown as an `<img>`.
 *
 * Why downscale here: a prompt travels in one WebSocket message, and the server refuses one over `max_message_size`
 * (8 MiB; base64 adds a third). The engine keeps at most 2048 px on the longest side anyway (`MAX_SIDE`), so an image
 * larger than that, or heavier than {@link DOWNSCALE_BYTES}, is redrawn on a canvas at most 2048 px wide or high —
 * as PNG, or JPEG when the PNG is still too heavy (a photo) — before it leaves the browser.
 *
 * What is shown: model and tool output is untrusted, so an image content is drawn only from a `data:` URL of a raster
 * type (PNG, JPEG, GIF, WebP) with base64 characters only — never SVG (it may carry script), never a URL to fetch.
 *
 * The pure part (types, sizes, the data URL check) has no DOM or JupyterLab import: unit-tested under node.
 */

import type { ImageContext } from './protocol';

/** The media types a pasted or dropped file may have, and the only ones an image content is drawn with. */
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/** The longest side kept (the engine's `MAX_SIDE`: the largest any provider uses). */
export const MAX_SIDE = 2048;
/** Above this many bytes an image is redrawn (downscaled, re-encoded) before it is attached. */
export const DOWNSCALE_BYTES = 2 * 1024 * 1024;
/** The base64 of one prompt's images together: under the WebSocket's 8 MiB message limit with room for the rest. */
export const MAX_PROMPT_IMAGE_CHARS = 7 * 1024 * 1024;
/** The largest file taken at all (the engine refuses more than 20 MB too). */
export const MAX_FILE_BYTES = 20 * 1024 * 1024;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The `data:` URL an image content is drawn from, or null when it must not be drawn (SVG, an unknown type, a
 * value that is not plain base64 and could break out of the attribute). */
export function imageDataUrl(mediaType: unknown, base64: unknown): string | null {
  if (typeof mediaType !== 'string' || typeof base64 !== 'string' || !IMAGE_MEDIA_TYPES.includes(mediaType)) {
    return null;
  }
  return BASE64.test(base64) ? `data:${mediaType};base64,${base64}` : null;
}

/** The bytes a base64 string holds. */
export function base64Bytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

/** "1.2 MB", "340 KB". */
export function humanBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) {
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** The size an image of `width` × `height` is drawn at: at most {@link MAX_SIDE} on its longest side. */
export function fitSize(width: number, height: number, maxSide = MAX_SIDE): { width: number; height: number } {
  const scale = Math.min(1, maxSide / Math.max(width, height, 1));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** The image files a paste or a drop carries (SVG and anything else not a raster image left out). */
export function imageFiles(transfer: DataTransfer | null): File[] {
  if (!transfer) {
    return [];
  }
  const files: File[] = [];
  for (const file of Array.from(transfer.files ?? [])) {
    if (IMAGE_MEDIA_TYPES.includes(file.type)) {
      files.push(file);
    }
  }
  if (files.length === 0) {
    // some browsers put a pasted screenshot only in `items`
    for (const item of Array.from(transfer.items ?? [])) {
      const file = item.kind === 'file' && IMAGE_MEDIA_TYPES.includes(item.type) ? item.getAsFile() : null;
      if (file) {
        files.push(file);
      }
    }
  }
  return files;
}

/** A dropped or pasted image ready to attach, and what it cost. */
export interface AttachedImage {
  context: ImageContext;
  /** The bytes that will be sent (after any downscaling). */
  bytes: number;
  /** The file's own size. */
  originalBytes: number;
  width: number;
  height: number;
  downscaled: boolean;
}

function toBase64(buffer: ArrayBuffer): string {
  const bytes = new Uint8Array(buffer);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function canvasBlob(canvas: HTMLCanvasElement, type: string, quality?: number): Promise<Blob> {
  return new Promise((resolve, reject) =>
    canvas.toBlob(blob => (blob ? resolve(blob) : reject(new Error('the image could not be encoded'))), type, quality)
  );
}

/** A pasted or dropped image file as an `image` context, downscaled on a canvas when it is over {@link MAX_SIDE}
 * px or {@link DOWNSCALE_BYTES}. Throws an Error the user can read (not an image, too large, undecodable). */
export async function attachImageFile(file: File, name?: string): Promise<AttachedImage> {
  if (!IMAGE_MEDIA_TYPES.includes(file.type)) {
    throw new Error(`${file.name || 'the file'} is not a PNG, JPEG, GIF or WebP image`);
  }
  if (file.size > MAX_FILE_BYTES) {
    throw new Error(`${file.name || 'the image'} is ${humanBytes(file.size)}: images over 20 MB are not sent`);
  }
  const label = name || file.name || 'pasted image';
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    throw new Error(`${label} could not be read as an image`);
  }
  const { width, height } = bitmap;
  try {
    if (file.size <= DOWNSCALE_BYTES && Math.max(width, height) <= MAX_SIDE) {
      const base64 = toBase64(await file.arrayBuffer());
      return {
        context: { type: 'image', mediaType: file.type, base64, name: label },
        bytes: file.size,
        originalBytes: file.size,
        width,
        height,
        downscaled: false
      };
    }
    let side = MAX_SIDE;
    for (;;) {
      const size = fitSize(width, height, side);
      const canvas = document.createElement('canvas');
      canvas.width = size.width;
      canvas.height = size.height;
      const context2d = canvas.getContext('2d');
      if (!context2d) {
        throw new Error('this browser cannot downscale images');
      }
      context2d.drawImage(bitmap, 0, 0, size.width, size.height);
      let blob = await canvasBlob(canvas, 'image/png');
      if (blob.size > DOWNSCALE_BYTES) {
        blob = await canvasBlob(canvas, 'image/jpeg', 0.85); // a photo: JPEG is a fraction of PNG
      }
      if (blob.size <= DOWNSCALE_BYTES || side <= 512) {
        const base64 = toBase64(await blob.arrayBuffer());
        return {
          context: { type: 'image', mediaType: blob.type, base64, name: label },
          bytes: blob.size,
          originalBytes: file.size,
          width: size.width,
          height: size.height,
          downscaled: true
        };
      }
      side = Math.round(side * 0.7);
    }
  } finally {
    bitmap.close();
  }
}
