// tsc compiles TypeScript only; the SQL migrations, the embedded database image and the dashboard's
// static files ship beside the compiled code.
import { cpSync } from 'node:fs';

cpSync('src/adapters/postgres/migrations', 'dist/adapters/postgres/migrations', { recursive: true });
cpSync('src/adapters/postgres/pgimage', 'dist/adapters/postgres/pgimage', { recursive: true });
cpSync('src/http/dashboard/assets', 'dist/http/dashboard/assets', { recursive: true });
