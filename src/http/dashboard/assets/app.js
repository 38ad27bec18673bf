// outdial dashboard: confirmation of destructive forms, copy buttons, and the live campaign page.
// Plain browser JavaScript, served by outdial (no build step, no outside script).
(() => {
  // Forms that change something irreversible ask first.
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });

  // Copy buttons: data-copy names the element whose text is copied.
  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
    if (!button) return;
    const source = document.getElementById(button.dataset.copy || '');
    if (!source) return;
    try {
      await navigator.clipboard.writeText(source.textContent || '');
      button.textContent = 'Copied';
    } catch {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.textContent = 'Selected: press Ctrl+C';
    }
  });

  // The webhook secret is not in the page: fetched when asked for, hidden again on a second click.
  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-reveal]') : null;
    if (!button) return;
    const target = document.getElementById(button.dataset.reveal || '');
    const copy = document.querySelector(`button[data-copy="${button.dataset.reveal}"]`);
    if (!target) return;
    if (button.getAttribute('aria-expanded') === 'true') {
      target.textContent = 'Hidden';
      button.textContent = 'Show secret';
      button.setAttribute('aria-expanded', 'false');
      if (copy) copy.hidden = true;
      return;
    }
    try {
      const response = await fetch('/dashboard/api/webhook-secret', {
        headers: { accept: 'application/json', 'x-csrf-token': button.dataset.csrf || '' },
        credentials: 'same-origin',
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      target.textContent = (await response.json()).secret;
      button.textContent = 'Hide secret';
      button.setAttribute('aria-expanded', 'true');
      if (copy) copy.hidden = false;
    } catch {
      button.textContent = 'Could not load; reload the page';
    }
  });

  // The settings page's usage chart: one bar a day, read from the table that holds the same figures.
  const usageBox = document.getElementById('usage-chart');
  if (usageBox && typeof window.uPlot === 'function') {
    const rows = [...document.querySelectorAll('#usage-table tbody tr')];
    const days = rows.map((row) => Date.parse(`${row.dataset.day}T00:00:00Z`) / 1000);
    const minutes = rows.map((row) => Number(row.dataset.minutes));
    const available = () => Math.max((usageBox.parentElement || usageBox).clientWidth - 24, 240);
    const usage = new window.uPlot(
      {
        width: available(),
        height: 200,
        series: [
          {},
          {
            label: 'minutes',
            stroke: '#2454d6',
            fill: 'rgba(36,84,214,0.35)',
            paths: window.uPlot.paths.bars({ size: [0.7, 40] }),
            points: { show: false },
          },
        ],
        axes: [{ incrs: [86400, 86400 * 7] }, { label: 'minutes charged' }],
        scales: {
          x: { time: true, range: (_u, min, max) => [min - 43200, max + 43200] },
          y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
        },
        legend: { show: false },
      },
      [days, minutes],
      usageBox,
    );
    window.addEventListener('resize', () => usage.setSize({ width: available(), height: 200 }));
    usageBox.dataset.drawn = String(rows.length);
  }

  const root = document.getElementById('batch');
  if (!root) return;
  const batchId = root.dataset.batchId;
  const text = (value) => document.createTextNode(value === null || value === undefined ? '' : String(value));
  const set = (field, value) => {
    const node = root.querySelector(`[data-field="${field}"]`);
    if (node) node.textContent = String(value);
  };
  const cell = (content) => {
    const td = document.createElement('td');
    if (content instanceof Node) td.appendChild(content);
    else td.appendChild(text(content));
    return td;
  };
  const badge = (status) => {
    const span = document.createElement('span');
    span.className = `status status-${status}`;
    span.textContent = status;
    return span;
  };
  const duration = (seconds) =>
    seconds === null
      ? '—'
      : seconds >= 60
        ? `${Math.floor(seconds / 60)} min ${seconds % 60} s`
        : `${seconds} s`;
  const when = (iso) => iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

  let chart = null;
  const chartBox = document.getElementById('chart');
  function drawChart(series) {
    if (!chartBox || typeof window.uPlot !== 'function') return;
    const xs = series.map((point) => point[0]);
    const ys = series.map((point) => point[1]);
    // The section's width, not the chart box's: the box is as wide as the chart it holds.
    const available = () => Math.max((chartBox.parentElement || chartBox).clientWidth - 24, 240);
    const width = available();
    if (!chart) {
      chart = new window.uPlot(
        {
          width,
          height: 200,
          series: [{}, { label: 'calls/s', stroke: '#2454d6', fill: 'rgba(36,84,214,0.12)' }],
          // Whole seconds on the time axis: the points are one per second.
          axes: [{ incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600] }, { label: 'calls per second' }],
          // From 0 always (a rate axis starting at its minimum makes 9 against 10 look like nothing
          // against everything), and at least 0..1 for a span of idle seconds.
          scales: {
            x: { time: true },
            y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
          },
          legend: { show: false },
        },
        [xs, ys],
        chartBox,
      );
      window.addEventListener('resize', () => chart.setSize({ width: available(), height: 200 }));
    } else {
      chart.setData([xs, ys]);
    }
    // The drawn y range, readable without the canvas (the browser test checks it starts at 0).
    chartBox.dataset.yRange = `${chart.scales.y.min},${chart.scales.y.max}`;
  }

  const openTranscripts = new Map();
  function transcriptRow(transcription) {
    const detail = document.createElement('tr');
    detail.className = 'transcript-row';
    const td = document.createElement('td');
    td.colSpan = 6;
    const list = document.createElement('ol');
    list.className = 'transcript';
    for (const entry of transcription) {
      const li = document.createElement('li');
      li.className = entry.role;
      const who = document.createElement('strong');
      who.textContent = entry.role === 'assistant' ? 'Agent' : 'Contact';
      li.append(who, text(` ${entry.content}`));
      list.append(li);
    }
    // A note beside the list, never inside it, and only when the list is empty.
    if (list.children.length > 0) td.append(list);
    else {
      const note = document.createElement('p');
      note.className = 'muted';
      note.textContent = 'Nothing was said.';
      td.append(note);
    }
    detail.append(td);
    return detail;
  }

  function render(data) {
    const batch = data.batch;
    const stats = batch.statistics;
    set('status', batch.status);
    const statusNode = root.querySelector('[data-field="status"]');
    if (statusNode) statusNode.className = `status status-${batch.status}`;
    set('percent', `${stats.percentComplete}%`);
    const progress = root.querySelector('progress');
    if (progress) progress.value = stats.percentComplete;
    for (const field of ['total', 'processed', 'succeeded', 'failed', 'pending', 'waitingForWindow'])
      set(field, stats[field]);
    set('successRate', `${stats.successRate}%`);
    set('callsPerSecond', batch.performance.callsPerSecond);
    set('effectiveCallsPerSecond', batch.performance.effectiveCallsPerSecond);
    set('throttle', data.throttleText);
    const throttleNode = root.querySelector('[data-field="throttle"]');
    if (throttleNode) throttleNode.dataset.reason = batch.throttle ? batch.throttle.reason : '';
    const eta = batch.performance.estimatedTimeRemaining;
    set('eta', eta === null ? '—' : duration(Math.round(eta / 1000)));

    const outcomes = document.getElementById('outcomes');
    if (outcomes) {
      outcomes.replaceChildren(
        ...Object.entries(data.outcomes).map(([status, count]) => {
          const li = document.createElement('li');
          li.append(badge(status), text(` ${count}`));
          return li;
        }),
      );
    }
    const calls = document.getElementById('calls');
    if (calls) {
      calls.replaceChildren(
        ...data.calls.flatMap((call) => {
          const tr = document.createElement('tr');
          const link = document.createElement('a');
          link.href = `/dashboard/calls/${encodeURIComponent(call.id)}`;
          link.textContent = when(call.createdAt);
          const contact = document.createElement('div');
          contact.append(text(call.contactName));
          const phone = document.createElement('div');
          phone.className = 'muted';
          phone.textContent = call.phoneNumber;
          contact.append(phone);
          // A call where nothing was said offers no transcript to open.
          let toggle = null;
          if (call.hasTranscript) {
            toggle = document.createElement('button');
            toggle.type = 'button';
            toggle.className = 'link';
            toggle.dataset.transcript = call.id;
            toggle.setAttribute('aria-expanded', 'false');
            toggle.textContent = 'Show';
          } else {
            toggle = document.createElement('span');
            toggle.className = 'muted';
            toggle.textContent = call.status === 'ONGOING' ? 'Not yet' : 'None';
          }
          tr.append(
            cell(link),
            cell(contact),
            cell(badge(call.status)),
            cell(duration(call.duration)),
            cell(call.summary || ''),
            cell(toggle),
          );
          const open = openTranscripts.get(call.id);
          if (!open || !call.hasTranscript) return [tr];
          toggle.textContent = 'Hide';
          toggle.setAttribute('aria-expanded', 'true');
          return [tr, transcriptRow(open)];
        }),
      );
    }
    drawChart(data.series);
    // The final statuses come from the server's one list (data-final-statuses).
    const final = (root.dataset.finalStatuses || '').split(',').includes(batch.status);
    if (final) root.dataset.final = 'true';
    // Each control shows while the status allows it (data-when, the lifecycle's own list).
    for (const form of root.querySelectorAll('form[data-when]'))
      form.hidden = !form.dataset.when.split(',').includes(batch.status);
    return final;
  }

  // A call's transcript, fetched when asked for, shown in a row under the call (kept open while
  // the list refreshes).
  root.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-transcript]') : null;
    if (!button) return;
    const row = button.closest('tr');
    const next = row.nextElementSibling;
    if (next?.classList.contains('transcript-row')) {
      next.remove();
      openTranscripts.delete(button.dataset.transcript);
      button.textContent = 'Show';
      button.setAttribute('aria-expanded', 'false');
      return;
    }
    button.textContent = 'Loading…';
    try {
      const response = await fetch(`/dashboard/api/calls/${encodeURIComponent(button.dataset.transcript)}`, {
        credentials: 'same-origin',
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const data = await response.json();
      openTranscripts.set(button.dataset.transcript, data.transcription);
      row.after(transcriptRow(data.transcription));
      button.textContent = 'Hide';
      button.setAttribute('aria-expanded', 'true');
    } catch {
      button.textContent = 'Could not load; try again';
    }
  });

  let failures = 0;
  async function poll() {
    try {
      const response = await fetch(`/dashboard/api/batches/${encodeURIComponent(batchId)}`, {
        headers: { accept: 'application/json' },
        credentials: 'same-origin',
      });
      if (response.status === 401) {
        window.location.href = `/sign-in?next=${encodeURIComponent(window.location.pathname)}`;
        return;
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      failures = 0;
      // A finished campaign is drawn once more, then polling stops.
      if (render(await response.json())) return;
    } catch {
      failures++;
    }
    setTimeout(poll, Math.min(1000 * 2 ** failures, 15000));
  }
  // The script is deferred: the page is parsed by the time it runs.
  poll();
})();
