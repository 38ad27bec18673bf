/**
 * What a process is for: `serve` listens and works (one process, the default), `api` only
 * listens (and builds no SIP or RTP stack: its single SIP calls are handed to the workers),
 * `worker` only works.
 */
export type Role = 'serve' | 'api' | 'worker';
