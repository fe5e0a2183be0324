import fs from 'node:fs';
import path from 'node:path';

/** The API version this build serves, and the changelog versions a client may pin. */
export const CURRENT_API_VERSION = '2026.05.04';
export const SUPPORTED_API_VERSIONS = ['2026.05.04', '2026.04.21', '2026.03.30'] as const;
/** Clients pinned before this version get the pre-RFC-9457 `{"detail": ..., "code": ...}` error body (application/json). */
export const PROBLEM_DETAILS_SINCE = '2026.05.04';

/** The repository root: this file runs as dist/src/version.js. */
export const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');

/** The release of Atrium itself (package.json), shown on the landing page and at start-up. */
export const ATRIUM_VERSION: string = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')).version;
