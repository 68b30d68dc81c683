/**
 * How a `%eca` in a notebook reaches this page: the kernel's engine has no WebSocket to the panel, but the kernel
 * has a channel to the page showing its notebook — Jupyter comms. Every notebook kernel gets the comm target
 * `eca-notebook`; the kernel opens a comm on its first notebook tool call, this page answers `ready` with an id of
 * its own, and then serves the same `notebook/getCells`, `notebook/applyEdit` and `notebook/runCells` requests as
 * the panel's WebSocket, with the same {@link NotebookProvider}. So a `%eca` cell's changes land in the live
 * document exactly where asked (undoable, no "file changed on disk" dialog).
 *
 * Several pages may show the same kernel (two browser tabs): each answers `ready`, the kernel keeps the first and
 * addresses every request to it (`page`), and the others ignore requests that are not theirs — an edit is never
 * applied twice.
 */

import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';

import type { NotebookProvider } from './client';

export const COMM_TARGET = 'eca-notebook';

type Request = { id: number; method: string; params: any; page?: string };

function pageId(): string {
  const c: any = (globalThis as any).crypto;
  return c && typeof c.randomUUID === 'function' ? c.randomUUID() : `page-${Date.now()}-${Math.random()}`;
}

/** Serve the `eca-notebook` comm target on the kernel of every notebook the tracker has (now and later). */
export function serveNotebookComms(tracker: INotebookTracker, provider: NotebookProvider): void {
  const page = pageId();
  const registered = new WeakSet<Kernel.IKernelConnection>();

  const serve = (comm: Kernel.IComm) => {
    const running = new Map<number, AbortController>();
    comm.onMsg = async msg => {
      const data = msg.content.data as any;
      if (!data || data.page !== page) {
        return; // another page's request (or a malformed one)
      }
      if (data.type === 'cancel') {
        running.get(data.id)?.abort();
        return;
      }
      const request = data as Request;
      const controller = new AbortController();
      running.set(request.id, controller);
      try {
        let result: unknown;
        if (request.method === 'notebook/getCells') {
          result = await provider.getCells(request.params);
        } else if (request.method === 'notebook/applyEdit') {
          result = await provider.applyEdit(request.params);
        } else if (request.method === 'notebook/runCells') {
          result = await provider.runCells(request.params, controller.signal);
        } else {
          throw new Error(`unknown method ${request.method}`);
        }
        comm.send({ id: request.id, result } as any);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        comm.send({ id: request.id, error: { message } });
      } finally {
        running.delete(request.id);
      }
    };
    comm.onClose = () => {
      running.forEach(controller => controller.abort());
      running.clear();
    };
    comm.send({ type: 'ready', page });
  };

  const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
    if (!kernel || registered.has(kernel)) {
      return;
    }
    registered.add(kernel);
    kernel.registerCommTarget(COMM_TARGET, comm => serve(comm));
  };

  const watch = (panel: NotebookPanel) => {
    register(panel.sessionContext.session?.kernel);
    panel.sessionContext.kernelChanged.connect((_, change) => register(change.newValue));
  };
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_, panel) => watch(panel));
}
