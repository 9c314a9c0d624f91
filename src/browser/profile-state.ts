/**
 * A browser profile's state in and out of a Playwright context (docs/profiles.md): only what
 * belongs to hosts of the allow-list, asked of the confinement's one host matcher, goes in or
 * comes out, whatever a page managed to set. The state is Playwright's own `storageState`
 * (cookies and each origin's localStorage): Playwright writes it into a new context before its
 * first page and reads it back from every origin the context has seen.
 *
 * IndexedDB is left out on purpose: the sign-ins of the business systems we drive are cookies
 * (or a token in localStorage); IndexedDB holds application data, would multiply a profile's
 * size and its secrets, and Playwright reads it only as a snapshot that a page may be writing.
 */
import type { BrowserContext, Page } from 'playwright-core';
import type { HostMatcher } from './host-matcher.js';
import type { StorageState, StoredCookie } from '../contract/storage-state.js';

/** The part of `state` that belongs to allowed hosts. */
export function allowedState(state: StorageState, matcher: HostMatcher): StorageState {
  return {
    cookies: state.cookies.filter((cookie) => cookieAllowed(cookie, matcher)),
    origins: state.origins.filter((origin) => matcher.allowsUrl(origin.origin).ok),
  };
}

/**
 * A cookie is an allowed host's when the host it was set for (its domain, a leading dot only
 * saying "and subdomains") is allowed. `Domain=example.com` set by an allowed `www.example.com`
 * reaches every subdomain: it is kept only when example.com itself is allowed.
 */
function cookieAllowed(cookie: StoredCookie, matcher: HostMatcher): boolean {
  const host = cookie.domain.startsWith('.') ? cookie.domain.slice(1) : cookie.domain;
  return host !== '' && matcher.allowsHost(host);
}

/** The context's current state of allowed hosts. */
export async function readAllowedState(context: BrowserContext, matcher: HostMatcher): Promise<StorageState> {
  const state = await context.storageState();
  return allowedState({ cookies: state.cookies.map((c) => ({ ...c })), origins: state.origins.map((o) => ({ origin: o.origin, localStorage: o.localStorage.map((e) => ({ ...e })) })) }, matcher);
}

/** What a sign-in page has: a field for a password or a one-time code. */
const SIGN_IN_FIELDS = 'input[type="password"], input[autocomplete~="current-password"], input[autocomplete~="one-time-code"]';

/**
 * Notes whether any page of the context, once loaded, asks for a sign-in: the login health of
 * a profile (docs/profiles.md#stale-sign-ins). Checked at each load of a top-level document.
 */
export function watchSignIn(context: BrowserContext): { seen(): boolean } {
  let seen = false;
  const check = (page: Page) => {
    if (seen) return;
    void page
      .evaluate((selector) => document.querySelector(selector) !== null, SIGN_IN_FIELDS)
      .then((found) => {
        if (found) seen = true;
      })
      // A page that navigates or closes meanwhile is checked at its next load, or not at all.
      .catch(() => undefined);
  };
  const follow = (page: Page) => page.on('load', () => check(page));
  for (const page of context.pages()) follow(page);
  context.on('page', follow);
  return { seen: () => seen };
}
