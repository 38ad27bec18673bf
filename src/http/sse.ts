import type { ServerResponse } from 'node:http';
import type { LiveStreamSink } from '../services/live-control.js';

/** The response as a stream of Server-Sent Events: `event:`, `id:`, one `data:` line of JSON. */
export function sseSink(raw: ServerResponse, start: () => void): LiveStreamSink {
  const write = (text: string) => {
    if (!raw.writableEnded && !raw.destroyed) raw.write(text);
  };
  return {
    open() {
      start();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        // nginx buffers responses unless told otherwise.
        'x-accel-buffering': 'no',
      });
      write(': stream open\n\n');
    },
    event(name, data, id) {
      write(`event: ${name}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`);
    },
    comment(text) {
      write(`: ${text}\n\n`);
    },
    end() {
      if (!raw.writableEnded) raw.end();
    },
  };
}
