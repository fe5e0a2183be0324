import { body, path, type RestRoute } from '../route';
import { jobIdAnswer, jobIdPage, renamedMember } from '../schemas';
import { pageArgs } from '../pagination';
import { RESEARCH_DEPTHS, researchDepths } from '../../src/domains/research';

const MODULES_KEY = 'Takes only an AI-modules key (Authorization: Bearer sk_live_svc_…) with the research scope; any other credential is 401.';
const PLATFORM = 'Takes a signed-in user\'s access token or a company API key (svc_…).';
const depthsText = (depths: readonly (keyof typeof RESEARCH_DEPTHS)[]) =>
  depths.map((d) => `${d} ${RESEARCH_DEPTHS[d].credits} credits (${RESEARCH_DEPTHS[d].questions} sub-questions, up to ${RESEARCH_DEPTHS[d].sources} pages read)`).join('; ');
const HOW =
  'The model plans sub-questions, each is searched (WEB_SEARCH_URL), the best pages are fetched through the SSRF guard and summarised, ' +
  'and the model writes a Markdown report in the requested language (en or nl) whose citations [n] map to sources[{n, url, title}]. ' +
  'Each step is a durable job: a restart resumes after the last finished step. The credits are held now, spent when the report ' +
  'completes and returned if it fails or is cancelled. Without AI_BASE_URL or WEB_SEARCH_URL: 503, spending nothing; past ' +
  'RESEARCH_MAX_CONCURRENT queued or running jobs of the company: 429 job_limit_reached. Follow it with GET …/status or the ' +
  'jobProgress GraphQL subscription.';
const PROBLEMS = { 429: 'job_limit_reached', 503: 'ai_provider_not_configured or web_search_not_configured' };
/** Each API spells running out its own way: the AI modules API as ai-modules-api.md does, the platform API with billing's codes. */
const MODULES_PROBLEMS = { ...PROBLEMS, 402: 'CREDIT_EXHAUSTED (detail: the need and the balance) or BUDGET_EXHAUSTED' };
const PLATFORM_PROBLEMS = { ...PROBLEMS, 402: 'insufficient_credits (detail: the need and the balance) or budget_exhausted' };

/** The platform API names a report's text `content`. */
const contentAnswer = renamedMember('report', 'content');

/** Research jobs: the AI-modules API's /research/start and /research/status, and the platform API's /research. */
export const researchRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/research/start',
    operationId: 'startResearch',
    summary: 'Start a research job',
    description: `query, depth (${depthsText(researchDepths)}; default standard) and language (en, nl; default en). ${HOW} Answers 202 with job_id. ${MODULES_KEY}`,
    tag: 'AI modules: research',
    credential: 'module_key',
    status: 202,
    problems: { ...MODULES_PROBLEMS, 403: 'insufficient_scope: the key lacks the research scope' },
    field: 'startResearch',
    args: { input: body() },
    answer: jobIdAnswer,
  },
  {
    method: 'GET',
    path: '/research/status/:job_id',
    operationId: 'getResearchStatus',
    summary: 'Research job status',
    description:
      'status: queued, running (with progress: phase, step, total), completed (with report and sources), failed (with error) or cancelled. ' +
      `Another user's job, or an unknown id, is 404. ${MODULES_KEY}`,
    tag: 'AI modules: research',
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the research scope', 404: 'No research job of yours with this id' },
    field: 'researchJob',
    args: { id: path('job_id') },
    answer: jobIdAnswer,
  },
  {
    method: 'GET',
    path: '/research/list',
    operationId: 'listResearchJobsWithKey',
    summary: 'Your research jobs',
    description: `Your research jobs, newest first, paged. ${MODULES_KEY}`,
    tag: 'AI modules: research',
    extension: true,
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the research scope' },
    field: 'researchJobs',
    args: pageArgs(),
    paginated: true,
    answer: jobIdPage,
    select: 'items { id status query depth language progress { phase step total } error credits createdAt startedAt finishedAt } page perPage total',
  },
  {
    method: 'POST',
    path: '/research/cancel/:job_id',
    operationId: 'cancelResearchWithKey',
    summary: 'Cancel a research job',
    description: `Cancels a queued or running job and returns its credits. A finished job is 409 job_finished. ${MODULES_KEY}`,
    tag: 'AI modules: research',
    extension: true,
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the research scope', 404: 'No research job of yours with this id', 409: 'job_finished' },
    field: 'cancelResearch',
    args: { id: path('job_id') },
    answer: jobIdAnswer,
  },
  {
    method: 'POST',
    path: '/research',
    operationId: 'createResearch',
    summary: 'Start a research report',
    description: `query, depth (${depthsText(['standard', 'deep'])}; default standard) and language (en, nl; default en). ${HOW} Answers 202 with the job. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    status: 202,
    problems: PLATFORM_PROBLEMS,
    field: 'startResearch',
    args: { input: body() },
    bodyHints: { properties: { depth: { enum: ['standard', 'deep'] } } },
    answer: contentAnswer,
  },
  {
    method: 'GET',
    path: '/research',
    operationId: 'listResearch',
    summary: 'Your research reports',
    description: `Your research jobs (a company key's: those company keys started), newest first, paged; without their content. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    extension: true,
    status: 200,
    field: 'researchJobs',
    args: pageArgs(),
    paginated: true,
    select: 'items { id status query depth language progress { phase step total } error credits createdAt startedAt finishedAt } page perPage total',
  },
  {
    method: 'GET',
    path: '/research/:id',
    operationId: 'getResearch',
    summary: 'A research report',
    description:
      'The job with, once completed, its content (Markdown with citations [n]) and sources [{n, url, title}]; while running its progress. ' +
      `Another company's id is 404; a member sees their own jobs, an admin or a company key the company's. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    status: 200,
    problems: { 404: 'No research job with this id' },
    field: 'researchJob',
    args: { id: path('id') },
    answer: contentAnswer,
  },
  {
    method: 'POST',
    path: '/research/:id/cancel',
    operationId: 'cancelResearch',
    summary: 'Cancel a research report',
    description: `Cancels a queued or running job and returns its credits; a finished one is 409 job_finished. ${PLATFORM}`,
    tag: 'Research and bulk jobs',
    extension: true,
    status: 200,
    problems: { 404: 'No research job with this id', 409: 'job_finished' },
    field: 'cancelResearch',
    args: { id: path('id') },
    answer: contentAnswer,
  },
];
