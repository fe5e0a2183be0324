import { Extensions } from 'type-graphql';
import type { GraphQLField } from 'graphql';

const SHARED_RESULTS = 'atriumSharedResults';

/**
 * Declares that what a subscription field's events resolve to depends only
 * on the event and the operation (its document, operation name and
 * variables), never on who subscribed: a resolver under the field may use
 * the context for how it reads (its loaders), never to decide what it
 * answers. Each event is then executed and serialised once for every
 * subscriber of the same operation (src/host/shared-subscriptions.ts)
 * rather than once per subscriber, which ten thousand dashboards feel.
 * Which events reach whom stays the field's `subscribe`'s to decide, per
 * subscriber; its events must be shared objects (one per change, the same
 * for every listener) for the sharing to happen at all.
 */
export function SharedResults(): MethodDecorator {
  return Extensions({ [SHARED_RESULTS]: true });
}

export function sharesResults(field: GraphQLField<unknown, unknown>): boolean {
  return field.extensions?.[SHARED_RESULTS] === true;
}
