import { Arg, Ctx, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { Access } from '../policy/access';
import { requireCompanyAdmin } from '../../src/auth/policy';
import { checkPage } from '../../src/pagination';
import type { AuditApi, AuditEvent, AuditService } from '../../src/domains/audit';
import type { FeedbackService, HealthService, PlatformApi } from '../../src/domains/platform';
import type { GraphQLContext } from '../context';
import { AUDIT_ACTION_BOUNDS, AuditEventPageType, AuditEventType, DocsFeedbackInput, DocsFeedbackReceiptType, HealthType } from './types';
import { RestArgs } from '../rest';
import { PAGE_BOUNDS } from '../page';
import { SharedResults } from '../shared-results';

@Resolver()
export class AuditResolver {
  static from = ({ audit }: { audit: AuditApi }) => new AuditResolver(audit.log);

  constructor(private readonly log: AuditService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, action: AUDIT_ACTION_BOUNDS })
  @Query(() => AuditEventPageType, { description: "The caller's company audit log, newest first; action filters by exact action" })
  auditLog(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: 50 }) perPage: number,
    @Arg('action', () => String, { nullable: true }) action?: string | null,
  ) {
    const principal = requireCompanyAdmin(ctx.principal);
    return this.log.list(principal.companyId, { ...checkPage(page, perPage), action: action ?? undefined });
  }

  @Access({ auth: 'authenticated' })
  @SharedResults()
  @Subscription(() => AuditEventType, {
    description: "Each audited action of the caller's company, live (admins and owners)",
    subscribe: ({ context }) => {
      const ctx = context as GraphQLContext;
      const { companyId } = requireCompanyAdmin(ctx.principal);
      return ctx.container.get(AuditResolver).log.follow(companyId);
    },
  })
  auditEvents(@Root() event: AuditEvent): AuditEvent {
    return event;
  }
}

@Resolver()
export class PlatformResolver {
  static from = ({ platform }: { platform: PlatformApi }) => new PlatformResolver(platform.health, platform.feedback);

  constructor(
    private readonly healthService: HealthService,
    private readonly feedback: FeedbackService,
  ) {}

  @Access({ auth: 'public' })
  @Query(() => HealthType, { description: 'Liveness and database reachability; public' })
  health() {
    return this.healthService.check();
  }

  @Access({ auth: 'public', rateLimit: 'feedback' })
  @Mutation(() => DocsFeedbackReceiptType, { description: 'Records feedback on a documentation page; public' })
  submitDocsFeedback(@Arg('input', () => DocsFeedbackInput) input: DocsFeedbackInput, @Ctx() ctx: GraphQLContext) {
    return this.feedback.submit(input, ctx.meta);
  }
}
