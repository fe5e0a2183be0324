import {
  Kind,
  parse,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Principal } from '../../src/auth/principal';
import { Budgets, type BudgetHit } from '../../src/rate-limit/budgets';
import { enrollmentRequired, type AccessService } from '../../src/domains/identity';
import { fieldPolicy, type FieldPolicy } from './access';

/** What an operation asks of the policy layer: the policies of every root field it selects. */
export type OperationPolicies = readonly FieldPolicy[];

/** The budgets an operation spends, for a transport that shows the decision (response headers). */
export type ShowBudget = (hit: BudgetHit) => void;

/** Documents seen recently, by their text: a client repeats the same few. */
const MAX_CACHED_DOCUMENTS = 1000;

/**
 * The per-operation half of the policy layer, one instance per running app:
 * before an operation runs, it spends the stricter budgets its root fields
 * declare and runs a user who owes MFA enrolment as anonymous unless every
 * root field is allowed during enrolment. Each transport calls it at its own
 * "before execution" point; what it decides is the same everywhere.
 */
export class OperationGate {
  private readonly byText = new Map<string, OperationPolicies | null>();
  private readonly byDocument = new WeakMap<DocumentNode, OperationPolicies>();
  private readonly byOperation = new WeakMap<OperationDefinitionNode, OperationPolicies>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly access: Pick<AccessService, 'enrollmentPending'>,
    private readonly budgets: Budgets,
  ) {}

  /** The policies of a document's operations; null when the text is not GraphQL (the executor answers that). */
  policiesOfText(query: string): OperationPolicies | null {
    let policies = this.byText.get(query);
    if (policies === undefined) {
      try {
        policies = this.policiesOf(parse(query));
      } catch {
        policies = null;
      }
      if (this.byText.size >= MAX_CACHED_DOCUMENTS) this.byText.clear();
      this.byText.set(query, policies);
    }
    return policies;
  }

  /** The policies of every root field of every operation in the document (fragments followed). */
  policiesOf(document: DocumentNode): OperationPolicies {
    let policies = this.byDocument.get(document);
    if (!policies) {
      const fragments = fragmentsOf(document.definitions);
      policies = document.definitions.flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION ? this.operationPolicies(d, fragments) : []));
      this.byDocument.set(document, policies);
    }
    return policies;
  }

  /** The policies of one operation (what a field sees of its request through `info`). */
  policiesOfOperation(operation: OperationDefinitionNode, fragments: Record<string, FragmentDefinitionNode>): OperationPolicies {
    let policies = this.byOperation.get(operation);
    if (!policies) {
      policies = this.operationPolicies(operation, new Map(Object.entries(fragments).map(([name, f]) => [name, f.selectionSet])));
      this.byOperation.set(operation, policies);
    }
    return policies;
  }

  /**
   * Spends the stricter budgets (each class once per operation; throws 429
   * rate_limited) unless the transport already spent them, and answers the
   * principal the operation runs as.
   */
  admit(
    policies: OperationPolicies,
    principal: Principal,
    ip: string,
    options: { spend: boolean; enrollment: boolean; show?: ShowBudget },
  ): Principal | Promise<Principal> {
    if (options.spend) {
      let spent: string | undefined;
      for (const policy of policies) {
        if (!policy.rateLimit || policy.rateLimit === spent) continue;
        spent = policy.rateLimit;
        const hit = this.budgets.hit(policy.rateLimit, principal, ip);
        options.show?.(hit);
        if (!hit.allowed) throw Budgets.refusal(hit);
      }
    }
    if (!options.enrollment || principal.kind !== 'user' || policies.every((p) => p.duringMfaEnrollment)) return principal;
    const pending = this.access.enrollmentPending(principal);
    if (typeof pending === 'boolean') return pending ? enrollmentRefused() : principal;
    return pending.then((owed) => (owed ? enrollmentRefused() : principal));
  }

  private operationPolicies(operation: OperationDefinitionNode, fragments: Map<string, SelectionSetNode>): FieldPolicy[] {
    const root = this.rootType(operation);
    const policies: FieldPolicy[] = [];
    const seen = new Set<string>();
    const walk = (set: SelectionSetNode) => {
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) {
          const policy = root && root.getFields()[selection.name.value] && fieldPolicy(root.getFields()[selection.name.value]!);
          // Introspection fields (__typename, __schema) and unknown fields (the validator refuses them) declare none.
          if (policy) policies.push(policy);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          walk(selection.selectionSet);
        } else if (!seen.has(selection.name.value)) {
          seen.add(selection.name.value);
          const fragment = fragments.get(selection.name.value);
          if (fragment) walk(fragment);
        }
      }
    };
    walk(operation.selectionSet);
    // Grouped by class, so each stricter budget is spent once per operation.
    return policies.sort((a, b) => (a.rateLimit ?? '').localeCompare(b.rateLimit ?? ''));
  }

  private rootType(operation: OperationDefinitionNode): GraphQLObjectType | null | undefined {
    if (operation.operation === 'query') return this.schema.getQueryType();
    if (operation.operation === 'mutation') return this.schema.getMutationType();
    return this.schema.getSubscriptionType();
  }
}

function fragmentsOf(definitions: DocumentNode['definitions']): Map<string, SelectionSetNode> {
  const fragments = new Map<string, SelectionSetNode>();
  for (const d of definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d.selectionSet);
  return fragments;
}

function enrollmentRefused(): Principal {
  return { kind: 'anonymous', credentialError: enrollmentRequired() };
}
