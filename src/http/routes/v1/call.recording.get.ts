import { Type } from '@sinclair/typebox';
import type { App, AppServices } from '../../route-kit.js';
import { errorResponses, Id } from '../../schemas/common.js';

/**
 * A finished call's audio. The `recordingUrl` we hand out carries a signed token so that a player
 * or a CRM can fetch it without the API key; the owner's API key works too.
 */
export function registerCallRecording(app: App, services: Pick<AppServices, 'recordings'>): void {
  app.get(
    '/api/v1/calls/:callId/recording.wav',
    {
      config: { auth: 'optional' },
      schema: {
        tags: ['calls'],
        operationId: 'getCallRecording',
        summary: 'Recording of a call',
        description:
          "The audio of a finished call, as audio/wav. The call's recordingUrl carries a signed token that works without the API key; the owner's API key works too.",
        security: [{ bearerAuth: [] }, {}],
        params: Type.Object({ callId: Id('The call') }),
        querystring: Type.Object(
          {
            token: Type.Optional(Type.String({ maxLength: 128, description: 'Signature from recordingUrl' })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: {
            description: 'The recording, a WAV (RIFF) file',
            content: {
              'audio/wav': { schema: Type.Unsafe<Buffer>({ type: 'string', contentMediaType: 'audio/wav' }) },
            },
          },
          ...errorResponses(400, 404, 500),
        },
      },
    },
    async (request, reply) => {
      const recording = await services.recordings.recording(request.params.callId, {
        ...(request.auth ? { userId: request.auth.userId } : {}),
        ...(request.query.token ? { token: request.query.token } : {}),
      });
      return reply
        .header('content-type', recording.contentType)
        .header('cache-control', 'private, max-age=3600')
        .send(recording.body);
    },
  );
}
