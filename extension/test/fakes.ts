/** Test doubles for the node unit tests: an in-memory WebSocket pair end and a manual clock. */

import type { Clock, SocketLike } from '../src/transport';

export class FakeSocket implements SocketLike {
  readyState = 0;
  sent: any[] = [];
  closed = false;
  onopen: ((event: unknown) => void) | null = null;
  onclose: ((event: { code?: number; reason?: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;

  constructor(readonly url: string) {}

  send(data: string): void {
    if (this.readyState !== 1) {
      throw new Error('socket not open');
    }
    this.sent.push(JSON.parse(data));
  }

  close(): void {
    if (!this.closed) {
      this.closed = true;
      this.readyState = 3;
    }
  }

  // -- the server's side ---------------------------------------------------------------------------------------

  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  receive(message: unknown): void {
    this.onmessage?.({ data: typeof message === 'string' ? message : JSON.stringify(message) });
  }

  /** The server went away (restart): the browser fires close. */
  drop(code = 1006, reason = 'gone'): void {
    this.readyState = 3;
    this.closed = true;
    this.onclose?.({ code, reason });
  }

  methods(): string[] {
    return this.sent.map(m => m.method ?? `response:${m.id}`);
  }

  last(method: string): any {
    return [...this.sent].reverse().find(m => m.method === method);
  }
}

export class ManualClock implements Clock {
  now = 0;
  private _timers: { id: number; at: number; fn: () => void }[] = [];
  private _next = 1;
  delays: number[] = [];

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this._next++;
    this.delays.push(ms);
    this._timers.push({ id, at: this.now + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this._timers = this._timers.filter(t => t.id !== handle);
  }

  random(): number {
    return 0.5; // no jitter
  }

  /** Run every timer due within `ms`, in order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      this._timers.sort((a, b) => a.at - b.at);
      const timer = this._timers[0];
      if (!timer || timer.at > until) {
        break;
      }
      this._timers.shift();
      this.now = timer.at;
      timer.fn();
    }
    this.now = until;
  }

  get pending(): number {
    return this._timers.length;
  }
}

/** Let pending promise callbacks run. */
export async function tick(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) {
    await Promise.resolve();
  }
  await new Promise(resolve => setImmediate(resolve));
}
