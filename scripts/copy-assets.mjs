// tsc compiles TypeScript only; the SQL migrations ship beside the compiled code.
import { cpSync } from 'node:fs';

cpSync('src/adapters/postgres/migrations', 'dist/adapters/postgres/migrations', { recursive: true });
