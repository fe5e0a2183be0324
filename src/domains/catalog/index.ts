import { defineDomain, type ApiOf } from '../../kernel/domain';
import { readSeed } from '../../seed-data';
import { auditDomain } from '../audit';
import { CatalogService, type ModelSeed } from './catalog.service';
import { catalogErrors } from './errors';
import { ModelAdminService } from './model-admin.service';
import { Model } from './model.entity';
import { catalogMigrations } from './migrations';

export { Model } from './model.entity';
export { CatalogService, MODEL_NAME_MAX, type ModelView, type ModelSeed } from './catalog.service';
export { ModelAdminService, MODEL_ID_PATTERN, MODEL_PRICE_MAX_MICROS, type ModelInput, type ModelPatch } from './model-admin.service';

/** The platform-wide model catalog: what callers may use, and its administration by superadmins. */
export const catalogDomain = defineDomain({
  name: 'catalog',
  requires: { audit: auditDomain },
  entities: [Model],
  migrations: catalogMigrations,
  errors: catalogErrors,
  create: ({ kernel, deps }) => ({
    models: new CatalogService(kernel.orm, kernel.reads),
    admin: new ModelAdminService(kernel.orm, deps.audit.log),
  }),
  seed: async (catalog) => {
    await catalog.models.seed(readSeed<ModelSeed[]>('models.json'));
  },
});

export type CatalogApi = ApiOf<typeof catalogDomain>;
