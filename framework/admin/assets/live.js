// A signed-in page's live changes (docs/admin.md, "Live changes"), on one stream per page.
//
// The page names what it follows in its markup: each element with data-live-list names a list by
// its stream's operation id (the header's badge, a generated list's notice), and <body
// data-live-stream> says where the shell serves them together. This opens one EventSource for all
// of them, so a page never holds more than one connection, however many parts follow a list:
// - the badge (data-live-refresh) is read again and swapped in place after its list changed;
// - a list's notice (data-live-rows) says how many rows are new or changed since the rows were
//   shown, with a Show button that reads the rows again, with the page's own query.
// htmx swaps parts of the page without unloading it (paging, a form's answer, history): after each
// swap the page's lists are read again and the stream is kept, replaced or closed to match; it is
// closed when the page is left. Without this script the page shows what it had when it loaded.

const KINDS = ['created', 'updated', 'deleted', 'removed'];
/** Changes within this long are read as one: a burst of events reads the badge once. */
const SETTLE_MS = 200;

let source = null;
let url = '';
/** Per notice element: the rows it counts and the rows element they were counted against. */
const counts = new WeakMap();
const timers = new WeakMap();

function wantedUrl() {
  const base = document.body?.dataset.liveStream;
  if (!base) return '';
  const lists = new Set();
  for (const marker of document.querySelectorAll('[data-live-list]')) lists.add(marker.dataset.liveList);
  return lists.size === 0 ? '' : `${base}?lists=${[...lists].join(',')}`;
}

function close() {
  source?.close();
  source = null;
  url = '';
}

/** Opens, keeps or closes the page's one stream so that it carries exactly the lists the page names. */
function sync() {
  const wanted = wantedUrl();
  if (wanted === url && source && source.readyState !== EventSource.CLOSED) return;
  close();
  if (!wanted) return;
  url = wanted;
  source = new EventSource(wanted);
  const lists = new URL(wanted, location.href).searchParams.get('lists').split(',');
  for (const list of lists)
    for (const kind of KINDS) source.addEventListener(`${list}:${kind}`, (event) => changed(list, kind, event.data));
  // The client's position was too old to replay: every list may have changed.
  source.addEventListener('reset', () => {
    for (const list of lists) changed(list, 'reset', '{}');
  });
  // The caller may no longer follow these lists (signed out, a permission taken away): no reconnecting.
  source.addEventListener('end', close);
}

function changed(list, kind, data) {
  const id = JSON.parse(data).id;
  for (const marker of document.querySelectorAll('[data-live-list]')) {
    if (marker.dataset.liveList !== list) continue;
    if (marker.dataset.liveRefresh) later(marker, () => refresh(marker));
    else if (marker.dataset.liveRows) count(marker, kind, id);
  }
}

function later(marker, run) {
  clearTimeout(timers.get(marker));
  timers.set(marker, setTimeout(run, SETTLE_MS));
}

/** Reads the element again (its data-live-refresh answers it alone) and swaps it in place. */
async function refresh(marker) {
  const response = await fetch(marker.dataset.liveRefresh, { headers: { accept: 'text/html' } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById(marker.id);
  const current = document.getElementById(marker.id);
  if (fresh && current) current.replaceWith(document.adoptNode(fresh));
}

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

document.addEventListener('htmx:after:swap', () => {
  forgetShownRows();
  sync();
});
// Leaving the page (or putting it in the back-forward cache) closes its stream; coming back opens it again.
window.addEventListener('pagehide', close);
window.addEventListener('pageshow', sync);
sync();
