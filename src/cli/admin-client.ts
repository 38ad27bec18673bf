import { request } from 'undici';

export class AdminClientError extends Error {
  override name = 'AdminClientError';
}

/** A thin client of the admin interface: every CLI management command goes through it. */
export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {
    // Every command that talks to a running outdial comes through here: a mistyped address is the
    // user's to fix, said in one line, not an unexpected error.
    let url: URL | undefined;
    try {
      url = new URL(baseUrl);
    } catch {}
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
      throw new AdminClientError(
        `"${baseUrl}" is not the address of an outdial (--url or OUTDIAL_URL): give one such as http://127.0.0.1:3000`,
      );
    }
  }

  get(path: string) {
    return this.send('GET', path);
  }
  post(path: string, body: unknown) {
    return this.send('POST', path, body);
  }
  patch(path: string, body: unknown) {
    return this.send('PATCH', path, body);
  }
  delete(path: string) {
    return this.send('DELETE', path);
  }

  private async send(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    return (await this.exchange(method, path, body)).body;
  }

  /** The reply with its status and headers (a 201 from a 200, a page's X-Next-Cursor). */
  async exchange(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: Record<string, unknown>;
  }> {
    const url = new URL(path, this.baseUrl);
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(url, {
        method: method as 'GET',
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new AdminClientError(
        `cannot reach outdial at ${this.baseUrl} (${error instanceof Error ? error.message : String(error)}); is it running? Set --url or OUTDIAL_URL`,
      );
    }
    const text = await response.body.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      throw new AdminClientError(
        `unexpected reply from ${url.href} (${response.statusCode}): ${text.slice(0, 200)}`,
      );
    }
    if (response.statusCode >= 400) {
      const fieldErrors = (parsed.details as { fieldErrors?: Record<string, string[]> } | undefined)
        ?.fieldErrors;
      const fields = fieldErrors
        ? `\n${Object.entries(fieldErrors)
            .map(([field, messages]) => `  ${field}: ${messages.join('; ')}`)
            .join('\n')}`
        : '';
      throw new AdminClientError(
        `${response.statusCode} ${String(parsed.error ?? 'Error')}${parsed.message ? `: ${String(parsed.message)}` : ''}${fields}`,
      );
    }
    return { status: response.statusCode, headers: response.headers, body: parsed };
  }
}
