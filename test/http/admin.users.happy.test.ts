import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('admin users: happy path', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('creates a user with minutes, reads it and adds or takes back minutes', async () => {
    const created = await t.admin('POST', '/admin/v1/users', {
      name: 'Acme',
      email: 'ops@acme.test',
      minutes: 50,
    });
    expect(created.statusCode).toBe(201);
    const user = created.json();
    expect(user).toEqual({
      id: expect.stringMatching(/^usr_/),
      name: 'Acme',
      email: 'ops@acme.test',
      availableMinutes: 50,
      maxConcurrentCalls: 200,
      defaultCountry: null,
    });

    expect((await t.admin('GET', `/admin/v1/users/${user.id}`)).json()).toEqual(user);
    const added = await t.admin('POST', `/admin/v1/users/${user.id}/credits`, { minutes: 25 });
    expect(added.statusCode).toBe(200);
    expect(added.json()).toEqual({ availableMinutes: 75 });
    const taken = await t.admin('POST', `/admin/v1/users/${user.id}/credits`, { minutes: -5 });
    expect(taken.json()).toEqual({ availableMinutes: 70 });
  });

  it("sets a user's defaultCountry (any case, stored upper case), changes and clears it, and refuses an unknown one", async () => {
    const created = await t.admin('POST', '/admin/v1/users', { name: 'Londoner', defaultCountry: 'gb' });
    expect(created.statusCode).toBe(201);
    const user = created.json();
    expect(user.defaultCountry).toBe('GB');
    const patched = await t.admin('PATCH', `/admin/v1/users/${user.id}`, { defaultCountry: 'DE' });
    expect(patched.json()).toEqual({ ...user, defaultCountry: 'DE' });
    const cleared = await t.admin('PATCH', `/admin/v1/users/${user.id}`, { defaultCountry: null });
    expect(cleared.json()).toEqual({ ...user, defaultCountry: null });
    const refused = await t.admin('PATCH', `/admin/v1/users/${user.id}`, { defaultCountry: 'XX' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().details.fieldErrors).toEqual({
      defaultCountry: [
        'XX is not an ISO 3166-1 alpha-2 country code with a known numbering plan (e.g. US, GB, DE)',
      ],
    });
    expect((await t.admin('GET', `/admin/v1/users/${user.id}`)).json().defaultCountry).toBeNull();
  });

  it('defaults email to null and minutes to 0', async () => {
    const created = await t.admin('POST', '/admin/v1/users', { name: 'Bare' });
    expect(created.json()).toMatchObject({ email: null, availableMinutes: 0, maxConcurrentCalls: 200 });
  });

  it('sets maxConcurrentCalls at creation and changes it (and only the fields given) with PATCH', async () => {
    const created = await t.admin('POST', '/admin/v1/users', {
      name: 'Limited',
      email: 'a@limited.test',
      minutes: 7,
      maxConcurrentCalls: 3,
    });
    expect(created.statusCode).toBe(201);
    const user = created.json();
    expect(user.maxConcurrentCalls).toBe(3);
    const patched = await t.admin('PATCH', `/admin/v1/users/${user.id}`, { maxConcurrentCalls: 250 });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toEqual({ ...user, maxConcurrentCalls: 250 });
    const renamed = await t.admin('PATCH', `/admin/v1/users/${user.id}`, { name: 'Renamed', email: null });
    expect(renamed.json()).toEqual({ ...user, name: 'Renamed', email: null, maxConcurrentCalls: 250 });
    expect((await t.admin('GET', `/admin/v1/users/${user.id}`)).json()).toEqual(renamed.json());
  });

  it('adds credits exactly once per request when many arrive at once', async () => {
    const user = (await t.admin('POST', '/admin/v1/users', { name: 'Race' })).json();
    await Promise.all(
      Array.from({ length: 20 }, () => t.admin('POST', `/admin/v1/users/${user.id}/credits`, { minutes: 3 })),
    );
    expect((await t.admin('GET', `/admin/v1/users/${user.id}`)).json().availableMinutes).toBe(60);
  });

  it('gives each user a whsec_ secret of 32 random bytes, and rotation keeps the old one for 24 hours', async () => {
    const user = (await t.admin('POST', '/admin/v1/users', { name: 'Hooks' })).json();
    const first = (await t.admin('GET', `/admin/v1/users/${user.id}/webhook-secret`)).json();
    expect(first.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(first.secret.slice(6), 'base64')).toHaveLength(32);
    expect(first.previousSecret).toBeNull();

    const rotated = await t.admin('POST', `/admin/v1/users/${user.id}/webhook-secret/rotate`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).not.toBe(first.secret);
    expect(rotated.json().previousSecret).toBe(first.secret);
    expect(rotated.json().rotatedAt).toEqual(expect.any(String));
    const other = (await t.admin('POST', '/admin/v1/users', { name: 'Other' })).json();
    const otherSecret = (await t.admin('GET', `/admin/v1/users/${other.id}/webhook-secret`)).json().secret;
    expect(otherSecret).not.toBe(rotated.json().secret);
  });
});
