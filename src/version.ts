/** The API version this build serves, and the changelog versions a client may pin. */
export const CURRENT_API_VERSION = '2026.05.04';
export const SUPPORTED_API_VERSIONS = ['2026.05.04', '2026.04.21', '2026.03.30'] as const;
/** Clients pinned before this version get the pre-RFC-9457 `{"detail": ...}` error body. */
export const PROBLEM_DETAILS_SINCE = '2026.05.04';
