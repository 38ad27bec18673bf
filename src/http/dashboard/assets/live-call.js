// outdial dashboard: a call's live part (transcript as it is said, Hang up, Transfer), from the
// call's event stream. Plain browser JavaScript; see src/http/dashboard/live-call.ts.
(() => {
  const root = document.getElementById('live-call');
  if (!root) return;
  const callId = root.dataset.callId;
  const csrf = root.dataset.csrf;
  const list = document.getElementById('live-transcript');
  const status = root.querySelector('[data-field="liveStatus"]');
  const result = document.getElementById('live-result');
  const buttons = root.querySelectorAll('button, input');
  const base = `/dashboard/calls/${encodeURIComponent(callId)}`;

  const line = (role, content) => {
    const li = document.createElement('li');
    li.className = role;
    const who = document.createElement('strong');
    who.textContent = role === 'assistant' ? 'Agent' : 'Contact';
    li.append(who, document.createTextNode(` ${content}`));
    list.appendChild(li);
  };
  const done = () => {
    for (const control of buttons) control.disabled = true;
  };

  const events = new EventSource(`/dashboard/api/calls/${encodeURIComponent(callId)}/events`);
  events.addEventListener('status', (event) => {
    const data = JSON.parse(event.data);
    status.textContent = data.endedReason ? `${data.status} (${data.endedReason})` : data.status;
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
    events.close();
    done();
  });

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
      else if (answer.outcome === 'refused') result.textContent = `Transfer refused: ${answer.reason}`;
      else result.textContent = answer.outcome === 'ended' ? 'Hung up.' : 'Transferred.';
    } catch {
      result.textContent = 'Could not reach outdial; try again.';
    }
  };
  document.getElementById('live-hangup').addEventListener('click', () => {
    if (window.confirm('Hang up this call now?')) void send('hangup', {});
  });
  document.getElementById('live-transfer')?.addEventListener('submit', (event) => {
    event.preventDefault();
    const to = new FormData(event.target).get('to');
    void send('transfer', { to: String(to || '') });
  });
})();
