import { queryObject, type RestRoute } from '../route';

export const platformRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/health',
    operationId: 'getHealth',
    summary: 'Service health',
    description: 'Public. Reports whether the service and its database answer.',
    tag: 'Platform',
    status: 200,
    responseName: 'HealthResponse',
    field: 'health',
  },
  {
    method: 'GET',
    path: '/models',
    operationId: 'listModels',
    summary: 'Available AI models',
    description: 'All models of the catalog that an administrator has not blocked, with display names.',
    tag: 'Platform',
    status: 200,
    responseName: 'ModelItem',
    field: 'models',
  },
  {
    method: 'GET',
    path: '/docs-feedback',
    operationId: 'submitDocsFeedback',
    summary: 'Leave feedback on a documentation page',
    description:
      'Public. Feedback is given as query parameters so a plain link or image beacon can send it. ' +
      'At least one of helpful or comment is required. Rate-limited per client IP.',
    tag: 'Platform',
    status: 200,
    field: 'submitDocsFeedback',
    args: { input: queryObject() },
  },
];
