import { Type } from '@sinclair/typebox';
import { DateTime, Nullable } from '../../schemas/common.js';

export const SuppressionSchema = Type.Object(
  {
    phoneNumber: Type.String({ description: 'E.164' }),
    reason: Nullable(Type.String()),
    sourceCallId: Nullable(
      Type.String({ description: 'The call the callee asked not to be called again on (reason opt-out)' }),
    ),
    createdAt: DateTime,
  },
  { $id: 'Suppression', description: 'A number never dialed for this user, in a batch or a single call' },
);
