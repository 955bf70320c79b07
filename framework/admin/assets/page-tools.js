// The hand-written pages' small tools; each page works without them.
//
// Upload progress for the shell's upload forms (form[data-upload]): htmx 4 sends requests with
// fetch, which reports no upload progress, so this posts the same multipart form with
// XMLHttpRequest and fills the form's <progress>. The server answers as it does for the plain
// form: a redirect to the page to show next (followed here as a navigation), or the page again
// with the problem explained (shown in place). Without this script the form posts as it is.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute('data-upload')) return;
  event.preventDefault();
  const submitter = event.submitter;
  const action = submitter?.getAttribute('formaction') ?? form.getAttribute('action') ?? location.href;
  const progress = form.querySelector('progress');
  const status = form.querySelector('[data-upload-status]');
  const buttons = form.querySelectorAll('button');
  const request = new XMLHttpRequest();
  request.open('POST', action);
  request.upload.addEventListener('progress', (progressEvent) => {
    if (!progress || !progressEvent.lengthComputable) return;
    progress.hidden = false;
    progress.max = progressEvent.total;
    progress.value = progressEvent.loaded;
    const percent = Math.round((progressEvent.loaded / progressEvent.total) * 100);
    progress.textContent = `${percent}%`;
    if (status) status.textContent = `Uploading… ${percent}%`;
  });
  request.addEventListener('load', () => {
    if (request.status < 400) {
      location.assign(request.responseURL);
      return;
    }
    // The page again, with the reason: its main part replaces this one.
    const answered = new DOMParser().parseFromString(request.responseText, 'text/html');
    const main = answered.querySelector('main');
    const here = document.querySelector('main');
    if (main && here) here.replaceChildren(...main.childNodes);
    else if (status) status.textContent = 'The upload failed. Please try again.';
  });
  request.addEventListener('error', () => {
    if (status) status.textContent = 'The upload was interrupted. Check the connection and try again.';
    for (const button of buttons) button.disabled = false;
  });
  for (const button of buttons) button.disabled = true;
  if (status) status.textContent = 'Uploading…';
  request.send(new FormData(form));
});

// Copy buttons (button[data-copy="<id of a text input>"]): copy the input's value (a public link)
// and say so. Hidden until this script runs: without it the link is selectable text.
for (const button of document.querySelectorAll('button[data-copy]')) button.hidden = false;
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button) return;
  const input = document.getElementById(button.getAttribute('data-copy'));
  const said = button.parentElement?.querySelector('[data-copied]');
  if (!(input instanceof HTMLInputElement)) return;
  try {
    await navigator.clipboard.writeText(input.value);
    if (said) said.textContent = 'Link copied.';
  } catch {
    input.select();
    if (said) said.textContent = 'Press Ctrl+C (or ⌘C) to copy the selected link.';
  }
});
