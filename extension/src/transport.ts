/**
 * A JSON-RPC 2.0 client over one WebSocket, one JSON message per WebSocket message (the server extension carries
 * ECA exactly as over stdio, minus the Content-Length framing).
 *
 * Why its own module, free of JupyterLab imports: the connection logic (request correlation, server→client
 * requests, the handshake gate, reconnect with backoff after a server restart) is where the subtle bugs live, and
 * here it is unit-tested under node with an in-memory socket (`test/transport.test.ts`).
 *
 * Life cycle: `connect()` opens the socket; on open the `handshake` hook runs (the ECA `initialize`/`initialized`
 * exchange) through `requestNow`/`notifyNow`, and only then is the transport `open`: calls made before that wait in
 * a queue, so no `chat/*` message can overtake `initialize`. When the socket closes, in-flight requests fail with
 * CONNECTION_LOST (the server forgot them) and a reconnect is scheduled with exponential backoff and jitter; the
 * handshake runs again on the new socket.
 */

export const CONNECTION_LOST = -32000;
export const METHOD_NOT_FOUND = -32601;
export const INTERNAL_ERROR = -32603;
/** A request of ours got no answer in time: the protocol's TIMEOUT (-32001 is the reference's "Unknown error"). */
export const REQUEST_TIMEOUT = -32003;
/** The notification either peer sends to cancel one of its requests (LSP). */
export const CANCEL_METHOD = '$/cancelRequest';
/** A request of ours that its caller cancelled (its `signal` aborted): LSP's RequestCancelled. */
export const REQUEST_CANCELLED = -32800;

/** The part of the browser's WebSocket this module uses (so tests can pass an in-memory socket). */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onclose: ((event: { code?: number; reason?: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
}

export type SocketFactory = (url: string) => SocketLike;

/** Timers, injectable so tests control time. */
export interface Clock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  random(): number;
}

const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>),
  random: () => Math.random()
};

export interface Backoff {
  /** First retry delay. */
  initialMs: number;
  /** Upper bound of a delay. */
  maxMs: number;
  /** Growth per failed attempt. */
  factor: number;
  /** ± fraction of randomness, so many tabs don't reconnect in lockstep after a server restart. */
  jitter: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 10000, factor: 2, jitter: 0.2 };

export type ConnectionState = 'idle' | 'connecting' | 'handshaking' | 'open' | 'reconnecting' | 'disposed';

export interface TransportOptions {
  /** The socket URL, or a function returning it (re-evaluated on each reconnect, e.g. for a fresh token). */
  url: string | (() => string);
  createSocket?: SocketFactory;
  /** Runs on every (re)open before queued calls are released; a throw closes the socket and retries. */
  handshake?: (transport: JsonRpcTransport) => Promise<void>;
  backoff?: Partial<Backoff>;
  /** How long the handshake may take before the socket is dropped and retried. */
  handshakeTimeoutMs?: number;
  clock?: Clock;
  logger?: Pick<Console, 'debug' | 'warn' | 'error'>;
}

/** A JSON-RPC error answered by the peer (or CONNECTION_LOST / timeout raised locally). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export interface RequestOptions {
  /** Reject with REQUEST_TIMEOUT after this long (0 or absent: wait for the answer or the connection to drop). */
  timeoutMs?: number;
  /**
   * Cancels the request: it rejects at once with REQUEST_CANCELLED, and a request already sent is followed by
   * `$/cancelRequest` so the server stops working on it (its late answer is dropped).
   */
  signal?: AbortSignal;
}

type Handler = (params: any) => unknown;

/**
 * Answers one server→client request. `signal` aborts when the server sends `$/cancelRequest` for it (e.g. the engine
 * gave up on `notebook/runCells`): a long handler should stop its work then (interrupt the kernel) and answer with
 * what it has; the answer is still sent, as LSP asks, and the server ignores it.
 */
export type RequestHandler = (params: any, signal: AbortSignal) => unknown;

interface Pending {
  method: string;
  resolve: (value: any) => void;
  reject: (error: Error) => void;
  timer?: unknown;
}

interface Deferred {
  run: () => void;
  fail: (error: Error) => void;
}

export class JsonRpcTransport {
  private _state: ConnectionState = 'idle';
  private _socket: SocketLike | null = null;
  private _nextId = 1;
  private readonly _pending = new Map<number, Pending>();
  private _waiting: Deferred[] = [];
  private readonly _notificationHandlers = new Map<string, Set<Handler>>();
  private readonly _anyNotification = new Set<(method: string, params: any) => void>();
  private readonly _requestHandlers = new Map<string, RequestHandler>();
  /** Server→client requests being answered, by id: aborted by `$/cancelRequest`. */
  private readonly _running = new Map<number | string, AbortController>();
  private readonly _stateListeners = new Set<(state: ConnectionState) => void>();
  private _attempt = 0;
  private _retryTimer: unknown = null;
  private readonly _backoff: Backoff;
  private readonly _clock: Clock;
  private readonly _createSocket: SocketFactory;
  /** How many times the handshake completed (1 after the first connect; more after reconnects). */
  connections = 0;

  constructor(private readonly _options: TransportOptions) {
    this._backoff = { ...DEFAULT_BACKOFF, ..._options.backoff };
    this._clock = _options.clock ?? realClock;
    this._createSocket =
      _options.createSocket ?? ((url: string) => new WebSocket(url) as unknown as SocketLike);
  }

  get state(): ConnectionState {
    return this._state;
  }

  get isOpen(): boolean {
    return this._state === 'open';
  }

  /** Subscribe to state changes; returns an unsubscribe function. */
  onStateChange(listener: (state: ConnectionState) => void): () => void {
    this._stateListeners.add(listener);
    return () => this._stateListeners.delete(listener);
  }

  onNotification(method: string, handler: Handler): () => void {
    let set = this._notificationHandlers.get(method);
    if (!set) {
      set = new Set();
      this._notificationHandlers.set(method, set);
    }
    set.add(handler);
    return () => set!.delete(handler);
  }

  /** Every notification, after the per-method handlers (for logging, tests, benchmarks). */
  onAnyNotification(handler: (method: string, params: any) => void): () => void {
    this._anyNotification.add(handler);
    return () => this._anyNotification.delete(handler);
  }

  /**
   * Answer server→client requests of `method` (e.g. `editor/getDiagnostics`); the return value is the result. The
   * handler's second argument aborts when the server cancels the request.
   */
  onRequest(method: string, handler: RequestHandler): void {
    this._requestHandlers.set(method, handler);
  }

  connect(): void {
    if (this._state === 'disposed' || this._socket) {
      return;
    }
    this._open();
  }

  dispose(): void {
    if (this._state === 'disposed') {
      return;
    }
    this._cancelRetry();
    const socket = this._socket;
    this._socket = null;
    this._setState('disposed');
    this._failAll(new RpcError(CONNECTION_LOST, 'connection closed'));
    if (socket) {
      this._detach(socket);
      try {
        socket.close(1000, 'disposed');
      } catch {
        // already closed
      }
    }
  }

  /** Close the current socket (as a server restart would); a reconnect follows. For tests and "retry now". */
  dropConnection(): void {
    const socket = this._socket;
    if (socket) {
      try {
        socket.close(4000, 'dropped by client');
      } catch {
        // ignore
      }
      this._handleClose(socket, 'dropped by client');
    }
  }

  /** Retry immediately instead of waiting for the backoff (the user clicked "reconnect"). */
  reconnectNow(): void {
    if (this._state === 'reconnecting') {
      this._cancelRetry();
      this._open();
    }
  }

  /** A request; waits for the handshake when not open yet. */
  request<T = any>(method: string, params?: unknown, options: RequestOptions = {}): Promise<T> {
    return this._whenOpen(() => this.requestNow<T>(method, params, options));
  }

  /** A notification; queued until the handshake is done. */
  notify(method: string, params?: unknown): Promise<void> {
    return this._whenOpen(async () => this.notifyNow(method, params));
  }

  /** Send a request right now, bypassing the handshake gate (used by the handshake itself). */
  requestNow<T = any>(method: string, params?: unknown, options: RequestOptions = {}): Promise<T> {
    const socket = this._socket;
    if (!socket || (this._state !== 'open' && this._state !== 'handshaking')) {
      return Promise.reject(new RpcError(CONNECTION_LOST, `not connected (${method})`));
    }
    const signal = options.signal;
    if (signal?.aborted) {
      return Promise.reject(new RpcError(REQUEST_CANCELLED, `${method} cancelled`));
    }
    const id = this._nextId++;
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { method, resolve, reject };
      if (signal) {
        const onAbort = () => {
          if (this._pending.get(id) !== pending) {
            return; // answered meanwhile
          }
          this._pending.delete(id);
          this._clearTimer(pending);
          if (socket === this._socket && this._state === 'open') {
            try {
              socket.send(JSON.stringify({ jsonrpc: '2.0', method: CANCEL_METHOD, params: { id } }));
            } catch {
              // the connection dropped: the server forgot the request anyway
            }
          }
          reject(new RpcError(REQUEST_CANCELLED, `${method} cancelled`));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        pending.resolve = value => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        };
        pending.reject = error => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        };
      }
      if (options.timeoutMs && options.timeoutMs > 0) {
        pending.timer = this._clock.setTimeout(() => {
          if (this._pending.delete(id)) {
            reject(new RpcError(REQUEST_TIMEOUT, `${method} timed out after ${options.timeoutMs} ms`));
          }
        }, options.timeoutMs);
      }
      this._pending.set(id, pending);
      const message: Record<string, unknown> = { jsonrpc: '2.0', id, method };
      if (params !== undefined) {
        message.params = params;
      }
      try {
        socket.send(JSON.stringify(message));
      } catch (error) {
        this._pending.delete(id);
        this._clearTimer(pending);
        reject(new RpcError(CONNECTION_LOST, `could not send ${method}: ${error}`));
      }
    });
  }

  notifyNow(method: string, params?: unknown): void {
    const socket = this._socket;
    if (!socket || (this._state !== 'open' && this._state !== 'handshaking')) {
      throw new RpcError(CONNECTION_LOST, `not connected (${method})`);
    }
    const message: Record<string, unknown> = { jsonrpc: '2.0', method };
    if (params !== undefined) {
      message.params = params;
    }
    socket.send(JSON.stringify(message));
  }

  /** The delay before reconnect attempt number `attempt` (0-based), jitter included. */
  retryDelay(attempt: number): number {
    const { initialMs, maxMs, factor, jitter } = this._backoff;
    const base = Math.min(maxMs, initialMs * Math.pow(factor, attempt));
    const spread = base * jitter * (this._clock.random() * 2 - 1);
    return Math.max(0, Math.round(base + spread));
  }

  // -- internals -----------------------------------------------------------------------------------------------

  private _whenOpen<T>(call: () => Promise<T>): Promise<T> {
    if (this._state === 'open') {
      return call();
    }
    if (this._state === 'disposed') {
      return Promise.reject(new RpcError(CONNECTION_LOST, 'connection closed'));
    }
    return new Promise<T>((resolve, reject) => {
      this._waiting.push({
        run: () => call().then(resolve, reject),
        fail: reject
      });
    });
  }

  private _setState(state: ConnectionState): void {
    if (this._state === state) {
      return;
    }
    this._state = state;
    for (const listener of [...this._stateListeners]) {
      try {
        listener(state);
      } catch (error) {
        this._options.logger?.error('eca: state listener failed', error);
      }
    }
  }

  private _url(): string {
    const url = this._options.url;
    return typeof url === 'function' ? url() : url;
  }

  private _open(): void {
    this._setState(this.connections === 0 && this._attempt === 0 ? 'connecting' : 'reconnecting');
    let socket: SocketLike;
    try {
      socket = this._createSocket(this._url());
    } catch (error) {
      this._options.logger?.warn('eca: could not open the WebSocket', error);
      this._scheduleRetry();
      return;
    }
    this._socket = socket;
    socket.onopen = () => void this._handleOpen(socket);
    socket.onmessage = event => this._handleMessage(event.data);
    socket.onerror = () => {
      // A close event always follows; nothing to do here.
    };
    socket.onclose = event => this._handleClose(socket, event?.reason || `code ${event?.code ?? '?'}`);
  }

  private async _handleOpen(socket: SocketLike): Promise<void> {
    if (socket !== this._socket) {
      return;
    }
    this._setState('handshaking');
    const hook = this._options.handshake;
    if (hook) {
      const timeout = this._options.handshakeTimeoutMs ?? 15000;
      let timer: unknown = null;
      try {
        await Promise.race([
          hook(this),
          new Promise((_, reject) => {
            timer = this._clock.setTimeout(
              () => reject(new RpcError(REQUEST_TIMEOUT, 'handshake timed out')),
              timeout
            );
          })
        ]);
      } catch (error) {
        this._options.logger?.warn('eca: handshake failed', error);
        if (socket === this._socket) {
          try {
            socket.close(4001, 'handshake failed');
          } catch {
            // ignore
          }
          this._handleClose(socket, 'handshake failed');
        }
        return;
      } finally {
        if (timer !== null) {
          this._clock.clearTimeout(timer);
        }
      }
    }
    if (socket !== this._socket) {
      return;
    }
    this._attempt = 0;
    this.connections += 1;
    this._setState('open');
    const waiting = this._waiting;
    this._waiting = [];
    for (const deferred of waiting) {
      deferred.run();
    }
  }

  private _handleClose(socket: SocketLike, reason: string): void {
    if (socket !== this._socket) {
      return;
    }
    this._detach(socket);
    this._socket = null;
    this._failPending(new RpcError(CONNECTION_LOST, `connection lost (${reason})`));
    // The next connection numbers its requests afresh: a cancel on it must not reach a handler still answering the old
    // one (that handler keeps running; its answer is dropped with the old socket).
    this._running.clear();
    if (this._state === 'disposed') {
      return;
    }
    this._scheduleRetry();
  }

  private _scheduleRetry(): void {
    this._setState('reconnecting');
    this._cancelRetry();
    const delay = this.retryDelay(this._attempt);
    this._attempt += 1;
    this._retryTimer = this._clock.setTimeout(() => {
      this._retryTimer = null;
      if (this._state !== 'disposed') {
        this._open();
      }
    }, delay);
  }

  private _cancelRetry(): void {
    if (this._retryTimer !== null) {
      this._clock.clearTimeout(this._retryTimer);
      this._retryTimer = null;
    }
  }

  private _detach(socket: SocketLike): void {
    socket.onopen = null;
    socket.onmessage = null;
    socket.onerror = null;
    socket.onclose = null;
  }

  private _clearTimer(pending: Pending): void {
    if (pending.timer !== undefined) {
      this._clock.clearTimeout(pending.timer);
    }
  }

  private _failPending(error: Error): void {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) {
      this._clearTimer(p);
      p.reject(error);
    }
  }

  private _failAll(error: Error): void {
    this._failPending(error);
    const waiting = this._waiting;
    this._waiting = [];
    for (const deferred of waiting) {
      deferred.fail(error);
    }
  }

  private _handleMessage(data: unknown): void {
    let message: any;
    try {
      message = JSON.parse(typeof data === 'string' ? data : String(data));
    } catch {
      this._options.logger?.warn('eca: ignoring a message that is not JSON');
      return;
    }
    const messages = Array.isArray(message) ? message : [message];
    for (const item of messages) {
      if (item && typeof item === 'object') {
        this._dispatch(item);
      }
    }
  }

  private _dispatch(message: any): void {
    const hasId = message.id !== undefined && message.id !== null;
    if (typeof message.method === 'string') {
      if (hasId) {
        void this._answer(message.id, message.method, message.params);
      } else {
        if (message.method === CANCEL_METHOD) {
          this._cancelRunning(message.params?.id);
        }
        this._notifyHandlers(message.method, message.params);
      }
      return;
    }
    if (!hasId) {
      return;
    }
    const pending = this._pending.get(message.id);
    if (!pending) {
      return;
    }
    this._pending.delete(message.id);
    this._clearTimer(pending);
    if (message.error) {
      const error = message.error;
      pending.reject(new RpcError(Number(error.code ?? INTERNAL_ERROR), String(error.message ?? 'error'), error.data));
    } else {
      pending.resolve(message.result);
    }
  }

  private _notifyHandlers(method: string, params: unknown): void {
    const handlers = this._notificationHandlers.get(method);
    if (handlers) {
      for (const handler of [...handlers]) {
        try {
          handler(params);
        } catch (error) {
          this._options.logger?.error(`eca: handler for ${method} failed`, error);
        }
      }
    }
    for (const handler of [...this._anyNotification]) {
      try {
        handler(method, params);
      } catch (error) {
        this._options.logger?.error('eca: notification listener failed', error);
      }
    }
  }

  private _cancelRunning(id: unknown): void {
    if (typeof id === 'number' || typeof id === 'string') {
      this._running.get(id)?.abort();
    }
  }

  private async _answer(id: number | string, method: string, params: unknown): Promise<void> {
    const socket = this._socket;
    const handler = this._requestHandlers.get(method);
    let reply: Record<string, unknown>;
    if (!handler) {
      reply = { jsonrpc: '2.0', id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method}` } };
    } else {
      const controller = new AbortController();
      this._running.set(id, controller);
      try {
        const result = await handler(params, controller.signal);
        reply = { jsonrpc: '2.0', id, result: result === undefined ? null : result };
      } catch (error) {
        const code = error instanceof RpcError ? error.code : INTERNAL_ERROR;
        reply = { jsonrpc: '2.0', id, error: { code, message: String((error as Error)?.message ?? error) } };
      } finally {
        // A reconnect may reuse the id for a new request meanwhile: only forget our own entry.
        if (this._running.get(id) === controller) {
          this._running.delete(id);
        }
      }
    }
    if (socket && socket === this._socket) {
      try {
        socket.send(JSON.stringify(reply));
      } catch {
        // the connection dropped meanwhile; the server times the request out
      }
    }
  }
}
