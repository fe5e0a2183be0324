import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Principal } from '../../src/auth/principal';
import { AppError } from '../../src/errors/catalog';
import type { GraphqlLimitsConfig } from '../../src/kernel/config';
import { Budgets, type BudgetHit, type RateLimitClass } from '../../src/rate-limit/budgets';
import { enrollmentRequired, type AccessService } from '../../src/domains/identity';
import type { FieldPolicy } from './access';
import { OperationScheduler } from './scheduler';
import { OperationMeter, type MeasuredDocument, type MeasuredOperation, type RootField, type Variables } from './limits';

/** What admission needs of an operation: its root fields (each alias one) and whether it introspects. */
export type AdmittedOperation = Pick<MeasuredOperation, 'rootFields' | 'introspection'>;

/** Counts an AI-modules key's operation against its plan's daily requests, `units` at once (throws 429 once spent). */
export type DailyAdmission = (principal: Principal, units: number) => void;

/** The budgets an operation spends, for a transport that shows the decision (response headers). */
export type ShowBudget = (hit: BudgetHit) => void;

/** Documents seen recently, by their text: a client repeats the same few. */
const MAX_CACHED_DOCUMENTS = 1000;
/** Longer texts are measured every time rather than kept: the cache must not become the memory an attacker fills. */
const MAX_CACHED_TEXT = 16 * 1024;

/** An operation of one root field (a REST route runs exactly one). */
export function singleField(key: string, policy: FieldPolicy): AdmittedOperation {
  return { rootFields: [{ key, name: key, policy }], introspection: false };
}

/**
 * The per-operation half of the policy layer, one instance per running app.
 * Before an operation runs, every transport hands it here at its own "before
 * execution" point, and what is decided is the same everywhere:
 * - `read`: the document is parsed within the token cap and measured against
 *   the caps on depth, aliases, root fields and estimated cost
 *   (./limits.ts); over a cap it is refused with 400 query_too_complex;
 * - `admit`: each root field spends one unit of its budget (so aliases pay
 *   for themselves) and, for an AI-modules key, one of its plan's daily
 *   requests; introspection follows its setting, and a user who owes MFA
 *   enrolment (or their AI-modules key) runs as anonymous unless every root
 *   field is allowed during enrolment.
 */
export class OperationGate {
  readonly meter: OperationMeter;
  /** Heavier operations take turns, so lighter ones keep being answered (./scheduler.ts). */
  readonly scheduler: OperationScheduler;
  private readonly byText = new Map<string, MeasuredDocument | AppError>();
  private readonly byDocument = new WeakMap<DocumentNode, MeasuredDocument>();
  private readonly introspection: GraphqlLimitsConfig['introspection'];

  constructor(
    schema: GraphQLSchema,
    private readonly access: Pick<AccessService, 'enrollmentPending'>,
    private readonly budgets: Budgets,
    limits: GraphqlLimitsConfig,
    /** Absent where no AI-modules field is served (a standalone subgraph without them). */
    private readonly daily?: DailyAdmission,
  ) {
    const { introspection, ...caps } = limits;
    this.meter = new OperationMeter(schema, caps);
    this.scheduler = new OperationScheduler(caps.maxCost);
    this.introspection = introspection;
  }

  /** A document's text, parsed and measured (remembered by text); throws its refusal (400). */
  read(text: string): MeasuredDocument {
    let read = this.byText.get(text);
    if (read === undefined) {
      try {
        read = this.meter.measure(this.meter.parse(text));
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        read = error;
      }
      if (text.length <= MAX_CACHED_TEXT) {
        if (this.byText.size >= MAX_CACHED_DOCUMENTS) this.byText.clear();
        this.byText.set(text, read);
      }
    }
    if (read instanceof AppError) throw read;
    return read;
  }

  /** A document already parsed by the transport (its text is measured when it has one). */
  readDocument(document: DocumentNode): MeasuredDocument {
    let read = this.byDocument.get(document);
    if (!read) {
      const text = document.loc?.source.body;
      read = text === undefined ? this.meter.measure(document) : this.read(text);
      this.byDocument.set(document, read);
    }
    return read;
  }

  /**
   * The operation a request runs (by name, or the only one), its cost
   * counted and checked with the request's variables; undefined when none can
   * be chosen (the executor refuses that document without running anything).
   */
  operation(read: MeasuredDocument, operationName: string | null | undefined, variables: Variables): MeasuredOperation | undefined {
    const operation = operationName
      ? read.operations.find((o) => o.name === operationName)
      : read.operations.length === 1
        ? read.operations[0]
        : undefined;
    if (!operation) return undefined;
    const cost = this.meter.costWith(read, operation, variables);
    return cost === operation.cost ? operation : { ...operation, cost };
  }

  /**
   * Spends one unit per root field: of its stricter budget when it declares
   * one, else of the default budget beyond the unit the request itself spent
   * (throws 429 rate_limited; a transport that spent them already passes
   * `spend: false`), applies the introspection setting, and answers the
   * principal the operation runs as.
   */
  admit(
    operation: AdmittedOperation,
    principal: Principal,
    ip: string,
    options: { spend: boolean; enrollment: boolean; show?: ShowBudget },
  ): Principal | Promise<Principal> {
    if (options.spend) this.spend(operation.rootFields, principal, ip, options.show);
    // Spent whatever the transport spent already: nothing else counts a key's daily requests.
    if (principal.kind === 'module_key') this.daily?.(principal, operation.rootFields.length);
    if (operation.introspection) this.admitIntrospection(principal);
    // A key acts for its user: it owes what the user owes.
    const owesEnrollment = principal.kind === 'user' || principal.kind === 'module_key';
    if (!options.enrollment || !owesEnrollment || operation.rootFields.every((f) => f.policy?.duringMfaEnrollment)) {
      return principal;
    }
    const pending = this.access.enrollmentPending(principal);
    if (typeof pending === 'boolean') return pending ? enrollmentRefused() : principal;
    return pending.then((owed) => (owed ? enrollmentRefused() : principal));
  }

  private spend(fields: readonly RootField[], principal: Principal, ip: string, show: ShowBudget | undefined): void {
    let units: Map<RateLimitClass, number> | undefined;
    let plain = 0;
    for (const field of fields) {
      const cls = field.policy?.rateLimit;
      if (cls) (units ??= new Map()).set(cls, (units.get(cls) ?? 0) + 1);
      else plain++;
    }
    // The transport spent one unit of the default budget for the request (or socket operation) itself;
    // each further root field spends its own, so aliased fields cost what as many REST requests would.
    if (plain > 1) (units ??= new Map()).set('default', plain - 1);
    if (!units) return;
    for (const [cls, count] of units) {
      const hit = this.budgets.hit(cls, principal, ip, count);
      show?.(hit);
      if (!hit.allowed) throw Budgets.refusal(hit);
    }
  }

  /**
   * Whether GRAPHQL_INTROSPECTION lets this caller read the schema. A caller
   * who may not also gets graphql-js' messages without their "Did you mean …"
   * hints (../errors.ts withoutSuggestions), which would spell the schema out
   * name by name.
   */
  mayIntrospect(principal: Principal): boolean {
    return this.introspection === 'public' || (this.introspection === 'authenticated' && principal.kind !== 'anonymous');
  }

  private admitIntrospection(principal: Principal): void {
    if (this.mayIntrospect(principal)) return;
    if (this.introspection === 'off') throw new AppError('introspection_disabled', 'Introspection is turned off on this server');
    throw (principal.kind === 'anonymous' && principal.credentialError) || new AppError('unauthenticated', 'Introspection needs a Bearer credential');
  }
}

function enrollmentRefused(): Principal {
  return { kind: 'anonymous', credentialError: enrollmentRequired() };
}
