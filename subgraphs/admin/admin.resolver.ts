import { Arg, Ctx, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { requireCompanyAdmin } from '../../src/auth/policy';
import { checkPage } from '../../src/pagination';
import type { AuditEvent } from '../../src/domains/audit/audit-event.entity';
import type { GraphQLContext } from '../context';
import { AuditEventPageType, AuditEventType, DocsFeedbackInput, DocsFeedbackReceiptType, HealthType } from './types';

@Resolver()
export class AuditResolver {
  @Query(() => AuditEventPageType, { description: "The caller's company audit log, newest first" })
  auditLog(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: 50 }) perPage: number,
    @Arg('action', () => String, { nullable: true }) action?: string | null,
  ) {
    const principal = requireCompanyAdmin(ctx.principal);
    return ctx.services.audit.list(principal.companyId, { ...checkPage(page, perPage), action: action ?? undefined });
  }

  @Subscription(() => AuditEventType, {
    description: "Each audited action of the caller's company, live (admins and owners)",
    subscribe: ({ context }) => {
      const ctx = context as GraphQLContext;
      const { companyId } = requireCompanyAdmin(ctx.principal);
      return ctx.services.bus.iterate('audit.recorded', (event) => event.companyId === companyId);
    },
  })
  auditEvents(@Root() event: AuditEvent): AuditEvent {
    return event;
  }
}

@Resolver()
export class PlatformResolver {
  @Query(() => HealthType, { description: 'Liveness and database reachability; public' })
  health(@Ctx() ctx: GraphQLContext) {
    return ctx.services.health.check();
  }

  @Mutation(() => DocsFeedbackReceiptType, { description: 'Records feedback on a documentation page; public' })
  submitDocsFeedback(@Arg('input', () => DocsFeedbackInput) input: DocsFeedbackInput, @Ctx() ctx: GraphQLContext) {
    return ctx.services.feedback.submit(input, ctx.meta);
  }
}
