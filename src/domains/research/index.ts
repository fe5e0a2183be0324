import { defineDomain, type ApiOf } from '../../kernel/domain';
import { aiDomain } from '../ai';
import { catalogDomain } from '../catalog';
import { identityDomain } from '../identity';
import { loadResearchConfig } from './config';
import { researchMigrations } from './migrations';
import { ResearchJob } from './research-job.entity';
import { RESEARCH_EXPIRY, RESEARCH_STEP, ResearchService, type ResearchStep } from './research.service';
import './events';

export { ResearchJob, researchDepths, researchLanguages, researchPhases, jobStates, isFinished, type JobState, type ResearchDepth, type ResearchLanguage, type ResearchPhase } from './research-job.entity';
export {
  ResearchService,
  RESEARCH_DEPTHS,
  RESEARCH_QUERY_MAX,
  RESEARCH_STEP,
  RESEARCH_EXPIRY,
  parsePlan,
  pickSources,
  type ResearchInput,
  type ResearchJobView,
  type ResearchProgress,
  type ResearchSourceView,
  type ResearchSurface,
} from './research.service';
export { type ResearchConfig } from './config';

/**
 * Research reports: planned, searched, read through the SSRF guard,
 * summarised and written by the model, one durable job per step. Credits
 * are held for the whole job through the ai domain's ModuleCredits.
 */
export const researchDomain = defineDomain({
  name: 'research',
  requires: { identity: identityDomain, ai: aiDomain, catalog: catalogDomain },
  entities: [ResearchJob],
  migrations: researchMigrations,
  config: loadResearchConfig,
  create: ({ kernel, config, deps }) => {
    const research = new ResearchService(kernel.orm, kernel.jobs, kernel.events, deps.ai, deps.catalog.models, config.research, kernel.config.ssrfAllowLoopback);
    // A deleted user's jobs go with their row (cascade): their subscribers are told they ended.
    deps.identity.userDeletion.add(({ userId }) => research.endedWithUser(userId));
    return { config: config.research, research };
  },
  jobs: (api) => ({
    [RESEARCH_STEP]: (payload: ResearchStep, run) => api.research.step(payload, run),
    [RESEARCH_EXPIRY]: async () => {
      await api.research.expireOverdue();
    },
  }),
  schedules: () => [{ kind: RESEARCH_EXPIRY, everySeconds: 60 }],
});

export type ResearchApi = ApiOf<typeof researchDomain>;
