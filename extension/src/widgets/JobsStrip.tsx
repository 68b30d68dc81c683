/**
 * Above the prompt box while a chat works: its pending steers (`chat/promptSteer` not yet taken in by the server;
 * × takes one back) and its running background jobs (`shell_command` with `background`; Kill ends the job's whole
 * process group through `jobs/kill`). Both come from the client's state: the chat's `steering` list and the jobs of
 * `jobs/list` / `jobs/updated`.
 */

import * as React from 'react';

import type { EcaClient } from '../client';
import type { ChatView } from '../model';

export interface JobsStripProps {
  client: EcaClient;
  chat: ChatView | null;
  onError: (error: unknown) => void;
}

export function JobsStrip(props: JobsStripProps): JSX.Element | null {
  const { client, chat } = props;
  const steering = chat?.steering ?? [];
  const jobs = chat ? client.jobs.filter(job => job.chatId === chat.id && job.status === 'running') : [];
  if (!chat || (steering.length === 0 && jobs.length === 0)) {
    return null;
  }
  return (
    <div className="eca-JobsStrip">
      {steering.length > 0 && (
        <ul className="eca-Queued eca-Steers" aria-label="Pending steers">
          {steering.map(s => (
            <li className="eca-Queued-item eca-Steer" key={s.id} title={s.message}>
              <span className="eca-Queued-badge">Steer</span>
              <span className="eca-Queued-text">{s.message.split('\n')[0]}</span>
              <button
                className="eca-Queued-remove"
                aria-label="Remove the steer"
                title="Remove: it will not reach the model"
                onClick={() => client.removeSteer(chat.id, s.id)}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {jobs.length > 0 && (
        <ul className="eca-Jobs" aria-label="Background jobs">
          {jobs.map(job => (
            <li className="eca-Job" key={job.id} title={job.label}>
              <span className="eca-Job-badge">{job.summary || job.id}</span>
              <span className="eca-Job-label">{job.label}</span>
              <span className="eca-Job-elapsed">{job.elapsed}</span>
              <button
                className="eca-Job-kill jp-mod-styled"
                aria-label={`Kill ${job.id}`}
                title="Kill this job and every process it started"
                onClick={() => client.killJob(job.id).catch(props.onError)}
              >
                Kill
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
