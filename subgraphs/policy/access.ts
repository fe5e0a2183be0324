import { Extensions } from 'type-graphql';
import type { GraphQLField, GraphQLFieldConfig } from 'graphql';
import type { RateLimitClass } from '../../src/rate-limit/budgets';

/**
 * The access policy of a root field (a query, mutation or subscription),
 * declared on the resolver with `@Access({...})` and enforced for every
 * transport by the policy layer (./enforce.ts, ./gate.ts): POST /graphql,
 * operations over WebSocket, the REST adapter (which takes a route's
 * credential requirement and budget from the field it runs), and
 * `atrium subgraph <name>`.
 */
export interface FieldPolicy {
  /**
   * `public`: anyone; `authenticated`: a signed-in user or a company API key
   * (refused 401 with the reason the credential was refused, before the
   * resolver runs). Finer rules (roles, user-only) stay with the domain.
   * A user's AI-modules key (`sk_live_svc_…`) is refused (401) on every field
   * but `modules` ones.
   * `modules`: an AI module, run for a user: a signed-in user or an
   * AI-modules key (its scope is checked by the module's service).
   */
  auth: 'public' | 'authenticated' | 'modules';
  /** A stricter per-IP budget the operation spends before it runs, on top of the request's own. */
  rateLimit?: Exclude<RateLimitClass, 'default'>;
  /**
   * Allowed while the caller owes MFA enrolment (company policy mfa_required,
   * MFA off): enrolment itself, the profile and sign-out. Anything else runs
   * as if the caller had no credential (403 mfa_enrollment_required).
   */
  duringMfaEnrollment?: true;
}

const POLICY = 'atriumPolicy';

/** Declares a root field's access policy (see FieldPolicy). Every root field must declare one. */
export function Access(policy: FieldPolicy): MethodDecorator & PropertyDecorator {
  return Extensions({ [POLICY]: Object.freeze({ ...policy }) });
}

/** The declared policy of a field, or undefined when it declares none. */
export function fieldPolicy(field: GraphQLField<unknown, unknown> | GraphQLFieldConfig<unknown, unknown>): FieldPolicy | undefined {
  return field.extensions?.[POLICY] as FieldPolicy | undefined;
}
