/**
 * A short readable cause of a failed outgoing request (a webhook delivery, an agent's HTTP tool),
 * unwrapping undici's nested `cause`; the address guard's refusal is kept as it is.
 */
export function describeHttpError(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 3; depth++) {
    const cause = (current as { cause?: unknown })?.cause;
    if ((current as { code?: unknown })?.code === 'EWEBHOOKFORBIDDEN' || !cause) break;
    current = cause;
  }
  if (current instanceof Error) {
    if (current.name === 'TimeoutError' || current.name === 'AbortError')
      return 'the receiver did not answer in time';
    return current.message;
  }
  return String(current);
}
