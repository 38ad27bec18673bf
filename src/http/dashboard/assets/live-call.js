// outdial dashboard: a call's live part (status and running duration, transcript as it is said,
// Hang up, Say, Transfer), from the call's event stream. Plain browser JavaScript; see
// src/http/dashboard/live-call.ts.
(() => {
  const root = document.getElementById('live-call');
  if (!root) return;
  const callId = root.dataset.callId;
  const csrf = root.dataset.csrf;
  const list = document.getElementById('live-transcript');
  const status = root.querySelector('[data-field="liveStatus"]');
  const duration = root.querySelector('[data-field="liveDuration"]');
  const result = document.getElementById('live-result');
  const sayForm = document.getElementById('live-say');
  const sayNote = document.getElementById('live-say-note');
  const buttons = root.querySelectorAll('button, input');
  const base = `/dashboard/calls/${encodeURIComponent(callId)}`;

  // Said as the server's formatDuration says it: "42 s", "2 min 5 s".
  const formatSeconds = (seconds) => {
    const minutes = Math.floor(seconds / 60);
    return minutes > 0 ? `${minutes} min ${seconds % 60} s` : `${seconds} s`;
  };

  // The running duration: from the answer while the call is up, stopped at its end.
  let answeredAt = root.dataset.answeredAt ? Date.parse(root.dataset.answeredAt) : null;
  let ticker = null;
  const tick = () => {
    if (answeredAt === null) return;
    duration.textContent = formatSeconds(Math.max(0, Math.floor((Date.now() - answeredAt) / 1000)));
  };
  const startClock = () => {
    if (ticker !== null) return;
    answeredAt ??= Date.now();
    tick();
    ticker = setInterval(tick, 1000);
  };
  const stopClock = (seconds) => {
    clearInterval(ticker);
    ticker = 'stopped';
    if (typeof seconds === 'number') duration.textContent = formatSeconds(seconds);
  };
  if (answeredAt !== null) startClock();

  // Lines on the page: no note may then say that nothing was said.
  const linesShown = () => {
    for (const note of document.querySelectorAll('#transcript-note')) note.hidden = true;
  };
  const line = (role, content) => {
    const li = document.createElement('li');
    li.className = role;
    const who = document.createElement('strong');
    who.textContent = role === 'assistant' ? 'Agent' : 'Contact';
    li.append(who, document.createTextNode(` ${content}`));
    list.appendChild(li);
    linesShown();
  };

  // Say is taken while an agent talks with the person (`in-progress`), not before or after.
  const canSay = (yes) => {
    for (const control of sayForm.querySelectorAll('button, input')) control.disabled = !yes;
    sayNote.hidden = yes;
  };
  const done = () => {
    for (const control of buttons) control.disabled = true;
    sayNote.hidden = true;
  };

  const events = new EventSource(`/dashboard/api/calls/${encodeURIComponent(callId)}/events`);
  events.addEventListener('status', (event) => {
    const data = JSON.parse(event.data);
    status.textContent = data.endedReason ? `${data.status} (${data.endedReason})` : data.status;
    if (['answered', 'in-progress', 'voicemail'].includes(data.status) && ticker !== 'stopped') startClock();
    canSay(data.status === 'in-progress');
  });
  events.addEventListener('turn', (event) => {
    const data = JSON.parse(event.data);
    line(data.role, data.content);
  });
  events.addEventListener('tool-call', (event) => {
    const data = JSON.parse(event.data);
    const li = document.createElement('li');
    li.className = 'tool';
    li.textContent = `Tool: ${data.call.name}${data.call.error ? ` (failed: ${data.call.error})` : ''}`;
    list.appendChild(li);
  });
  events.addEventListener('ended', (event) => {
    const data = JSON.parse(event.data);
    status.textContent = `Ended: ${data.status}${data.endedReason ? ` (${data.endedReason})` : ''}`;
    stopClock(data.duration);
    // The stored transcript, when the stream brought none of it (a canned call's script).
    if (list.children.length === 0)
      for (const turn of data.transcription || []) line(turn.role, turn.content);
    const pageDuration = document.querySelector('dd[data-field="duration"]');
    if (pageDuration && typeof data.duration === 'number')
      pageDuration.textContent = formatSeconds(data.duration);
    events.close();
    done();
  });

  const RESULT_TEXT = {
    ended: 'Hung up.',
    transferred: 'Transferred.',
    queued: 'Sent: the agent says it next.',
  };
  const send = async (action, fields) => {
    result.textContent = 'Sending…';
    const body = new URLSearchParams({ _csrf: csrf, ...fields });
    try {
      const res = await fetch(`${base}/${action}`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      const answer = await res.json();
      if (!res.ok) result.textContent = answer.message || answer.error;
      else if (answer.outcome === 'refused') result.textContent = `Refused: ${answer.reason}`;
      else result.textContent = RESULT_TEXT[answer.outcome] || 'Done.';
      return res.ok && answer.outcome !== 'refused';
    } catch {
      result.textContent = 'Could not reach outdial; try again.';
      return false;
    }
  };
  document.getElementById('live-hangup').addEventListener('click', () => {
    if (window.confirm('Hang up this call now?')) void send('hangup', {});
  });
  sayForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const input = sayForm.elements.namedItem('text');
    if (await send('say', { text: String(input.value || '') })) input.value = '';
  });
  document.getElementById('live-transfer')?.addEventListener('submit', (event) => {
    event.preventDefault();
    const to = new FormData(event.target).get('to');
    void send('transfer', { to: String(to || '') });
  });
})();
