import type { TestApp } from './app.js';

/**
 * A browser's cookie jar over `TestApp.request`, enough for the dashboard's forms: it keeps the
 * session and CSRF cookies, reads a page's CSRF token and signs in with an API key.
 */
export class DashboardClient {
  cookies = new Map<string, string>();
  constructor(private readonly t: TestApp) {}

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  take(setCookie: string | string[] | undefined): void {
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair] = line.split(';');
      const [name, value] = (pair ?? '').split('=');
      if (name) this.cookies.set(name, value ?? '');
    }
  }

  async get(url: string, headers: Record<string, string> = {}) {
    const res = await this.t.request({ method: 'GET', url, headers: { cookie: this.header(), ...headers } });
    this.take(res.headers['set-cookie']);
    return res;
  }

  async post(url: string, form: Record<string, string>, headers: Record<string, string> = {}) {
    const res = await this.t.request({
      method: 'POST',
      url,
      headers: { cookie: this.header(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: new URLSearchParams(form).toString(),
    });
    this.take(res.headers['set-cookie']);
    return res;
  }

  /** The CSRF token a page's forms carry. */
  async csrf(url = '/sign-in'): Promise<string> {
    const res = await this.get(url);
    return /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1] ?? '';
  }

  async signIn(key: string, next = '/dashboard') {
    const csrf = await this.csrf();
    return this.post('/sign-in', { apiKey: key, _csrf: csrf, next });
  }
}
