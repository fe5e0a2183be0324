import { defineDomain, type ApiOf } from '../../kernel/domain';
import { DocsFeedback } from './docs-feedback.entity';
import { FeedbackService } from './feedback.service';
import { HealthService } from './health.service';
import { platformMigrations } from './migrations';

export { DocsFeedback } from './docs-feedback.entity';
export { FeedbackService, FEEDBACK_LIMITS } from './feedback.service';
export { HealthService, type Health } from './health.service';

/** The service itself: health, and feedback on its documentation. */
export const platformDomain = defineDomain({
  name: 'platform',
  requires: {},
  entities: [DocsFeedback],
  migrations: platformMigrations,
  create: ({ kernel }) => ({
    health: new HealthService(kernel.reads),
    feedback: new FeedbackService(kernel.orm, kernel.secrets.ipHashSalt),
  }),
});

export type PlatformApi = ApiOf<typeof platformDomain>;
