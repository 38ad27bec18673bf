import { describe, expect, it } from 'vitest';
import {
  cseqMethod,
  digestAuthorization,
  header,
  parseChallenge,
  parseMessage,
  parseSdpAnswer,
  sdpOffer,
  serialize,
  tagOf,
} from '../../src/adapters/voice/sip/message.js';

describe('SIP messages', () => {
  it('parses a response with compact and folded headers', () => {
    const message = parseMessage(
      [
        'SIP/2.0 180 Ringing',
        'v: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKabc',
        'f: <sip:outdial@127.0.0.1>;tag=111',
        't: <sip:+14155550123@127.0.0.1>;tag=222',
        'i: call-1@127.0.0.1',
        'CSeq: 1 INVITE',
        'Subject: a long',
        ' folded line',
        'l: 0',
        '',
        '',
      ].join('\r\n'),
    );
    expect(message).toMatchObject({ status: 180, reason: 'Ringing', method: '' });
    expect(header(message, 'Call-ID')).toBe('call-1@127.0.0.1');
    expect(tagOf(header(message, 'to'))).toBe('222');
    expect(cseqMethod(message)).toBe('INVITE');
    expect(header(message, 'subject')).toBe('a long folded line');
  });

  it('parses a request from the far end and round-trips what it builds', () => {
    const text = serialize('BYE sip:outdial@127.0.0.1:5070 SIP/2.0', [
      ['Via', 'SIP/2.0/UDP 127.0.0.1:5080;branch=z9hG4bKx'],
      ['CSeq', '2 BYE'],
    ]);
    expect(text.endsWith('Content-Length: 0\r\n\r\n')).toBe(true);
    expect(parseMessage(text)).toMatchObject({ status: 0, method: 'BYE', uri: 'sip:outdial@127.0.0.1:5070' });
    expect(() => parseMessage('HELLO world')).toThrow('not a SIP message');
  });

  it('answers a digest challenge as RFC 2617 computes it', () => {
    const challenge = parseChallenge(
      'Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"',
    );
    expect(challenge).toEqual({
      realm: 'testrealm@host.com',
      nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
      opaque: '5ccc069c403ebaf9f0171e9517f40e41',
      qop: 'auth,auth-int',
    });
    const value = digestAuthorization(
      challenge as NonNullable<typeof challenge>,
      { username: 'Mufasa', password: 'Circle Of Life' },
      'GET',
      '/dir/index.html',
      1,
      '0a4f113b',
    );
    expect(value).toContain('response="6629fae49393a05397450978507c4ef1"');
    expect(value).toContain('qop=auth, nc=00000001, cnonce="0a4f113b"');
    expect(parseChallenge('Basic realm="x"')).toBeNull();
  });

  it('offers PCMU and PCMA in its SDP', () => {
    const sdp = sdpOffer('127.0.0.1', 40000, 1);
    expect(sdp).toContain('m=audio 40000 RTP/AVP 0 8 101');
    expect(sdp).toContain('a=rtpmap:0 PCMU/8000');
    expect(sdp).toContain('a=rtpmap:8 PCMA/8000');
    expect(sdp).toContain('a=rtpmap:101 telephone-event/8000');
  });

  it('reads where to send audio from an SDP answer', () => {
    const answer = (lines: string[]) => lines.join('\r\n');
    expect(
      parseSdpAnswer(
        answer([
          'v=0',
          'c=IN IP4 203.0.113.5',
          't=0 0',
          'm=audio 41000 RTP/AVP 8 101',
          'a=rtpmap:8 PCMA/8000',
        ]),
      ),
    ).toEqual({ address: '203.0.113.5', port: 41000, payloadType: 8, telephoneEvent: null });
    // The answer's own payload type for telephone-events, when it is one of the stream's formats.
    expect(
      parseSdpAnswer(
        answer([
          'c=IN IP4 203.0.113.5',
          'm=audio 41000 RTP/AVP 0 96',
          'a=rtpmap:0 PCMU/8000',
          'a=rtpmap:96 telephone-event/8000',
          'a=fmtp:96 0-15',
        ]),
      )?.telephoneEvent,
    ).toBe(96);
    expect(
      parseSdpAnswer(
        answer(['c=IN IP4 203.0.113.5', 'm=audio 41000 RTP/AVP 0', 'a=rtpmap:97 telephone-event/8000']),
      )?.telephoneEvent,
    ).toBeNull();
    // A media-level address wins over the session's; the first codec we speak is chosen.
    expect(
      parseSdpAnswer(
        answer(['c=IN IP4 198.51.100.1', 'm=audio 5004 RTP/AVP 18 0 8', 'c=IN IP4 198.51.100.2']),
      ),
    ).toEqual({ address: '198.51.100.2', port: 5004, payloadType: 0, telephoneEvent: null });
    // No audio stream we can speak: no media.
    expect(parseSdpAnswer(answer(['c=IN IP4 198.51.100.1', 'm=audio 5004 RTP/AVP 18']))).toBeNull();
    expect(parseSdpAnswer(answer(['c=IN IP4 198.51.100.1', 'm=audio 0 RTP/AVP 0']))).toBeNull();
    expect(parseSdpAnswer('')).toBeNull();
  });
});
