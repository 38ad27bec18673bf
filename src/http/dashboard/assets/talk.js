// outdial dashboard: "Talk to this agent". Opens a web call on the agent's WebSocket
// (/dashboard/agents/:agentId/talk, docs/agents.md §10), sends the microphone as 8 kHz 16-bit PCM
// frames (talk-worklet.js), plays the agent's frames as they come and shows the live transcript.
// Plain browser JavaScript; see src/http/dashboard/talk.ts.
(() => {
  const root = document.getElementById('talk');
  if (!root) return;
  const agentId = root.dataset.agentId;
  const start = document.getElementById('talk-start');
  const hangup = document.getElementById('talk-hangup');
  const status = document.getElementById('talk-status');
  const list = document.getElementById('talk-transcript');
  const RATE = 8000;
  let call = null;

  const say = (text) => {
    status.textContent = text;
  };
  const line = (className, who, text) => {
    const li = document.createElement('li');
    li.className = className;
    if (who) {
      const strong = document.createElement('strong');
      strong.textContent = who;
      li.append(strong, document.createTextNode(` ${text}`));
    } else {
      li.textContent = text;
    }
    list.appendChild(li);
  };

  const stop = () => {
    if (!call) return;
    const { stream, context } = call;
    call = null;
    for (const track of stream.getTracks()) track.stop();
    void context.close();
    start.hidden = false;
    start.disabled = false;
    hangup.hidden = true;
    hangup.disabled = false;
  };

  const play = (current, data) => {
    const samples = new Int16Array(data);
    if (samples.length === 0) return;
    const buffer = current.context.createBuffer(1, samples.length, RATE);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 0x8000;
    const source = current.context.createBufferSource();
    source.buffer = buffer;
    source.connect(current.context.destination);
    // Frames are queued back to back; after a pause the next starts now, not in the past.
    const at = Math.max(current.context.currentTime + 0.02, current.playAt);
    source.start(at);
    current.playAt = at + buffer.duration;
  };

  const onMessage = (current, event) => {
    if (typeof event.data !== 'string') {
      play(current, event.data);
      return;
    }
    const message = JSON.parse(event.data);
    switch (message.type) {
      case 'call':
        current.callId = message.callId;
        say('Connected: speak now.');
        break;
      case 'status':
        if (message.status === 'in-progress') say('Connected: speak now.');
        break;
      case 'turn':
        line(message.role, message.role === 'assistant' ? 'Agent' : 'You', message.content);
        break;
      case 'tool-call':
        line(
          'tool',
          null,
          `Tool: ${message.call.name}${message.call.error ? ` (failed: ${message.call.error})` : ''}`,
        );
        break;
      case 'ended': {
        say(
          `Call ended: ${message.status}${message.endedReason ? ` (${message.endedReason})` : ''}, ${message.duration} s.`,
        );
        const link = document.createElement('a');
        link.href = `/dashboard/calls/${encodeURIComponent(message.callId)}`;
        link.textContent = 'Open the call';
        status.append(' ', link);
        current.ended = true;
        break;
      }
      default:
        break;
    }
  };

  start.addEventListener('click', async () => {
    if (call) return;
    start.disabled = true;
    list.replaceChildren();
    say('Asking for the microphone…');
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
      });
    } catch (error) {
      say(`The microphone is not available: ${error.message}`);
      start.disabled = false;
      return;
    }
    const context = new AudioContext();
    await context.audioWorklet.addModule('/dashboard/assets/talk-worklet.js');
    const microphone = context.createMediaStreamSource(stream);
    const capture = new AudioWorkletNode(context, 'outdial-capture');
    microphone.connect(capture);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(
      `${scheme}//${location.host}/dashboard/agents/${encodeURIComponent(agentId)}/talk`,
    );
    socket.binaryType = 'arraybuffer';
    const current = { stream, context, socket, playAt: 0, callId: null, ended: false };
    call = current;
    say('Connecting…');
    capture.port.onmessage = (event) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(event.data);
    };
    socket.addEventListener('message', (event) => onMessage(current, event));
    socket.addEventListener('close', (event) => {
      if (!current.ended)
        say(event.reason ? `The call could not go on: ${event.reason}` : 'The connection closed.');
      if (call === current) stop();
    });
    hangup.hidden = false;
    start.hidden = true;
    hangup.focus();
  });

  hangup.addEventListener('click', () => {
    if (!call) return;
    say('Hanging up…');
    if (call.socket.readyState === WebSocket.OPEN) call.socket.send(JSON.stringify({ type: 'hangup' }));
    hangup.disabled = true;
  });
})();
