// A signed-in page's live changes (docs/admin.md, "Live changes"), on one stream per browser.
//
// The page names what it follows in its markup: each element with data-live-list names a list by
// its stream's operation id (the header's badge, a generated list's notice), and <body
// data-live-stream> says where the shell serves them together. What changes:
// - the badge (data-live-refresh) is read again and swapped in place after its list changed;
// - a list's notice (data-live-rows) says how many rows are new or changed since the rows were
//   shown, with a Show button that reads the rows again, with the page's own query.
//
// A browser allows six HTTP/1.1 connections per host: a stream per tab would leave a seventh tab
// nothing to load its page with. So the tabs of one origin share one stream. They elect a leader
// with the Web Locks API (the lock `tenantry-live`: one holder per origin, handed to a waiting tab
// when its holder's page goes). The leader alone reads the stream, for the lists of every open tab
// (each tab says which over the BroadcastChannel `tenantry-live`), and posts each event to the
// others; every tab keeps the last position it saw, so a tab that takes the lead resumes the
// stream with Last-Event-ID and nothing is lost. The stream is read with fetch, which sends that
// header (an EventSource cannot). Without these APIs, or without JavaScript, a page shows what it
// had when it loaded.

const CHANNEL = 'tenantry-live';
const KINDS = new Set(['created', 'updated', 'deleted', 'removed']);
/** Changes within this long are read as one: a burst of events reads the badge once. */
const SETTLE_MS = 200;
/** How long a new leader waits for the other tabs to say what they follow before it connects. */
const GATHER_MS = 100;
/** As framework/admin/live.ts MAX_LISTS: the lists one connection carries at most. */
const MAX_LISTS = 16;

const supported = typeof BroadcastChannel === 'function' && typeof navigator.locks?.request === 'function';
const tab = typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`;

/** The position of the last event any tab relayed: where a new connection resumes. */
let lastId = null;
/** Whether a connection has carried this tab's lists since it said what they are. */
let covered = false;
let channel = null;
/** Aborts the pending lock request, or gives the held lock up. */
let leaving = null;
/** Set while this tab leads: the other tabs' lists and the connection. */
let leader = null;

/** Per notice element: the rows it counts and the rows element they were counted against. */
const counts = new WeakMap();
const timers = new WeakMap();

function followedLists() {
  const lists = new Set();
  for (const marker of document.querySelectorAll('[data-live-list]')) lists.add(marker.dataset.liveList);
  return [...lists].sort();
}

function streamBase() {
  return document.body?.dataset.liveStream ?? '';
}

// ---- The tabs, over the channel -------------------------------------------------------------

function post(message) {
  channel?.postMessage(message);
}

/** Tells the leader what this tab follows now (at start, after an htmx swap, when a new leader asks). */
function announce() {
  const message = { type: 'want', tab, lists: followedLists(), covered, base: streamBase() };
  if (leader) wanted(message);
  else post(message);
}

function received(message) {
  switch (message.type) {
    case 'want':
      if (leader) wanted(message);
      break;
    case 'bye':
      if (leader) gone(message.tab);
      break;
    case 'who':
      announce();
      break;
    case 'carrying':
      if (message.lists.length > 0 && followedLists().every((list) => message.lists.includes(list))) covered = true;
      if (message.id !== null) lastId = message.id;
      break;
    case 'event':
      dispatch(message);
      break;
  }
}

function start() {
  if (!supported || channel || !streamBase()) return;
  channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (event) => received(event.data);
  const abort = new AbortController();
  let resign = null;
  leaving = () => {
    abort.abort();
    resign?.();
  };
  navigator.locks
    .request(CHANNEL, { signal: abort.signal }, () => {
      if (abort.signal.aborted) return undefined;
      lead();
      // Held until this page goes (pagehide gives it up; an unloaded document's locks are freed).
      return new Promise((resolve) => {
        resign = resolve;
      });
    })
    .catch(() => {});
  announce();
}

/** The page goes (a navigation, a closed tab, the back-forward cache): its stream and its place go. */
function stop() {
  if (!channel) return;
  if (leader) {
    leader.abort?.abort();
    clearTimeout(leader.timer);
    leader = null;
  } else post({ type: 'bye', tab });
  leaving?.();
  leaving = null;
  channel.close();
  channel = null;
  covered = false;
}

// ---- The leader: one connection for every tab's lists ----------------------------------------

function lead() {
  leader = {
    tabs: new Map(),
    // The lists of the connection last opened, and whether it is open now.
    lists: [],
    open: false,
    abort: null,
    timer: 0,
    ended: false,
    retry: 3000,
    base: streamBase(),
  };
  leader.tabs.set(tab, { lists: followedLists(), covered });
  // The tabs say what they follow; the stream opens once they had the time to.
  post({ type: 'who' });
  leader.timer = setTimeout(connect, GATHER_MS);
}

function wanted(message) {
  if (message.tab !== tab && message.base !== leader.base) return;
  const before = union().join(',');
  const entry = { lists: message.lists, covered: message.covered };
  leader.tabs.set(message.tab, entry);
  // The open connection carries them already: the tab is told, so that it resumes them if it leads next.
  if (leader.open && message.lists.every((list) => leader.lists.includes(list))) {
    entry.covered = true;
    if (message.tab === tab) covered = true;
    else post({ type: 'carrying', lists: leader.lists, id: lastId });
  }
  // A new page after the stream ended (its caller signed in again): a new stream for it.
  if (leader.ended && !message.covered) leader.ended = false;
  if (union().join(',') !== before || !leader.abort) reconnectSoon();
}

function gone(id) {
  const before = union().join(',');
  leader.tabs.delete(id);
  if (union().join(',') !== before) reconnectSoon();
}

function union() {
  const lists = new Set();
  for (const { lists: followed } of leader.tabs.values()) for (const list of followed) lists.add(list);
  return [...lists].sort().slice(0, MAX_LISTS);
}

function reconnectSoon() {
  clearTimeout(leader.timer);
  leader.timer = setTimeout(connect, GATHER_MS);
}

/** Opens the stream for the tabs' lists (closing the one before), resuming after the last position seen. */
async function connect() {
  const me = leader;
  if (!me || me.ended) return;
  me.abort?.abort();
  me.abort = null;
  me.open = false;
  const lists = union();
  if (lists.length === 0) return;
  const abort = new AbortController();
  me.abort = abort;
  // A list no tab followed on an earlier connection starts now: what came before is nothing missed.
  const carried = new Set(me.lists);
  for (const { lists: followed, covered: was } of me.tabs.values()) if (was) for (const l of followed) carried.add(l);
  const fresh = lastId === null ? [] : lists.filter((list) => !carried.has(list));
  const url = `${me.base}?lists=${lists.join(',')}${fresh.length > 0 ? `&fresh=${fresh.join(',')}` : ''}`;
  const headers = { accept: 'text/event-stream' };
  if (lastId !== null) headers['last-event-id'] = lastId;
  let again = true;
  try {
    const response = await fetch(url, { headers, signal: abort.signal, cache: 'no-store', credentials: 'same-origin' });
    // Refused (signed out, a permission gone, too many): the page stays as loaded until another opens.
    if (!response.ok || !response.body) {
      again = response.status === 429 || response.status >= 500;
      await response.body?.cancel();
    } else {
      me.lists = lists;
      me.open = true;
      const carries = (followed) => followed.every((list) => lists.includes(list));
      for (const entry of me.tabs.values()) if (carries(entry.lists)) entry.covered = true;
      if (carries(followedLists())) covered = true;
      let told = false;
      await readEvents(response.body, (event) => {
        if (event.id !== null) lastId = event.id;
        if (event.retry !== null) me.retry = event.retry;
        if (!told) {
          told = true;
          post({ type: 'carrying', lists, id: lastId });
        }
        if (event.name === null) return;
        const message = { type: 'event', name: event.name, data: event.data, id: lastId };
        post(message);
        dispatch(message);
        if (event.name === 'end') {
          // The caller may no longer follow these lists: no reconnecting until a new page asks.
          me.ended = true;
          again = false;
          for (const entry of me.tabs.values()) entry.covered = false;
          me.lists = [];
          lastId = null;
        }
      });
    }
  } catch {
    // A network error, or aborted for a new connection (then `me.abort` is another) or a leaving page.
  }
  if (me.abort === abort) me.open = false;
  if (abort.signal.aborted || leader !== me || me.abort !== abort) return;
  me.abort = null;
  if (again) me.timer = setTimeout(connect, me.retry);
}

/**
 * Reads server-sent events from a response body, calling `each` per block with its id, retry,
 * event name (null for a block without data, as an EventSource reads it) and data.
 */
async function readEvents(body, each) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let cut = buffer.indexOf('\n\n');
    while (cut >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = { id: null, retry: null, name: 'message', data: [] };
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = text;
        else if (field === 'retry' && /^[0-9]+$/.test(text)) event.retry = Number(text);
        else if (field === 'event') event.name = text;
        else if (field === 'data') event.data.push(text);
      }
      each({ ...event, name: event.data.length > 0 ? event.name : null, data: event.data.join('\n') });
      cut = buffer.indexOf('\n\n');
    }
  }
}

// ---- What an event changes on this page ------------------------------------------------------

function dispatch(message) {
  if (message.id !== null && message.id !== undefined) lastId = message.id;
  if (message.name === 'reset') {
    for (const list of followedLists()) changed(list, 'reset', '{}');
    return;
  }
  const cut = message.name.lastIndexOf(':');
  if (cut < 0) return;
  const kind = message.name.slice(cut + 1);
  if (KINDS.has(kind)) changed(message.name.slice(0, cut), kind, message.data);
}

function changed(list, kind, data) {
  const id = JSON.parse(data).id;
  for (const marker of document.querySelectorAll('[data-live-list]')) {
    if (marker.dataset.liveList !== list) continue;
    if (marker.dataset.liveRefresh) later(marker, () => refresh(marker));
    else if (marker.dataset.liveRows) count(marker, kind, id);
  }
}

function later(marker, run, ms = SETTLE_MS) {
  clearTimeout(timers.get(marker));
  timers.set(marker, setTimeout(run, ms));
}

/** A read of a refreshed element that failed is tried again this much later, this many times at most. */
const READ_AGAIN_MS = 3000;
const READ_TRIES = 5;
const failedReads = new WeakMap();
/** The ids of the refreshed elements whose last read failed: read again when the browser is back online. */
const stale = new Set();

/**
 * Reads the element again (its data-live-refresh answers it alone) and swaps it in place. A read
 * that fails (offline, a network error, the server busy) is not the last word: the stream may
 * stay open through a short drop and tell nothing more, so the badge would keep its old count.
 */
async function refresh(marker) {
  let response = null;
  try {
    response = await fetch(marker.dataset.liveRefresh, { headers: { accept: 'text/html' } });
  } catch {
    // Offline or a network error: tried again below.
  }
  if (!response?.ok) {
    if (!response || response.status === 429 || response.status >= 500) readAgain(marker);
    return;
  }
  stale.delete(marker.id);
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById(marker.id);
  const current = document.getElementById(marker.id);
  if (fresh && current) current.replaceWith(document.adoptNode(fresh));
}

function readAgain(marker) {
  stale.add(marker.id);
  const failed = (failedReads.get(marker) ?? 0) + 1;
  failedReads.set(marker, failed);
  // Offline, the browser says when it is back ('online', below); else a few more tries, spaced.
  if (navigator.onLine !== false && failed < READ_TRIES) later(marker, () => refresh(marker), READ_AGAIN_MS);
}

window.addEventListener('online', () => {
  for (const id of stale) {
    const marker = document.getElementById(id);
    if (marker?.dataset.liveRefresh) later(marker, () => refresh(marker));
  }
});

function count(marker, kind, id) {
  const rows = document.getElementById('rows');
  let seen = counts.get(marker);
  // The rows were read again since (paging, sorting, Show): count from them.
  if (!seen || seen.rows !== rows) seen = { rows, added: new Set(), changed: new Set(), reset: false };
  counts.set(marker, seen);
  if (kind === 'reset') seen.reset = true;
  else if (kind === 'created') {
    seen.added.add(id);
    seen.changed.delete(id);
  } else if (!seen.added.has(id)) seen.changed.add(id);
  say(marker, seen);
}

/** The notice, in words: how many rows are new or changed, and a button that shows them. */
function say(marker, seen) {
  const { liveOne: one, liveMany: many } = marker.dataset;
  const added = seen.added.size;
  const changed = seen.changed.size;
  const parts = [];
  if (added > 0) parts.push(`${added} new ${added === 1 ? one : many}`);
  if (changed > 0) parts.push(`${changed} ${changed === 1 ? one : many} changed`);
  const sentence =
    parts.length > 0
      ? `${parts.join(' and ')} since this list was shown.`
      : 'This list has changed since it was shown.';
  const text = document.createElement('span');
  text.textContent = `${sentence} `;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'button button-quiet';
  button.textContent = 'Show';
  button.addEventListener('click', () => show(marker));
  marker.replaceChildren(text, button);
}

/** Reads the rows again with the page's query (filters, sort, page) and puts them in place of the old. */
async function show(marker) {
  const response = await fetch(`${marker.dataset.liveRows}${location.search}`, { headers: { accept: 'text/html' } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById('rows');
  const current = document.getElementById('rows');
  if (!fresh || !current) return;
  const rows = document.adoptNode(fresh);
  current.replaceWith(rows);
  // Its paging and sorting links are htmx's, as the rows the page loaded with.
  globalThis.htmx?.process(rows);
  counts.delete(marker);
  marker.replaceChildren();
  // The button is gone: the rows it showed take the focus.
  rows.tabIndex = -1;
  rows.focus();
}

function forgetShownRows() {
  const rows = document.getElementById('rows');
  for (const marker of document.querySelectorAll('[data-live-rows]')) {
    const seen = counts.get(marker);
    if (seen && seen.rows !== rows) {
      counts.delete(marker);
      marker.replaceChildren();
    }
  }
}

let announced = '';
document.addEventListener('htmx:after:swap', () => {
  forgetShownRows();
  // htmx swaps parts of the page without unloading it: the lists it follows may have changed.
  const lists = followedLists().join(',');
  if (lists === announced) return;
  announced = lists;
  covered = false;
  announce();
});
window.addEventListener('pagehide', stop);
window.addEventListener('pageshow', () => {
  announced = followedLists().join(',');
  start();
});
announced = followedLists().join(',');
start();
