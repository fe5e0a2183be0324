import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import { AppError, NULL_ISSUE, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { requireAuthenticated } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import type { SecretBox } from '../../crypto/secret-box';
import { guardedRequest, SsrfBlockedError, type Resolver } from '../../net/ssrf-guard';
import type { AuditService } from '../audit';
import { Company, type CompanyAdminService } from '../identity';
import type { ConnectorsConfig } from './config';
import { ConnectorConfig } from './connector-config.entity';

/** The two cloud-storage connectors: consumer accounts (Google) and workplace accounts (Microsoft). */
export const connectorNames = ['google_drive', 'onedrive'] as const;
export type ConnectorName = (typeof connectorNames)[number];

export const SYNC_INTERVAL_BOUNDS = { min: 15, max: 1440, default: 60 } as const;
export const CLIENT_ID_MAX = 256;
export const CLIENT_SECRET_MAX = 1024;
export const TENANT_MAX = 256;

/** A tenant id (GUID), a verified domain, or common / organizations / consumers. */
const TENANT = /^(?=.{1,256}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A connector's configuration as the API shows it (never the secret). */
export interface ConnectorView {
  companyId: string;
  name: ConnectorName;
  enabled: boolean;
  clientId: string | null;
  /** Whether a client secret is stored (the secret itself is never returned). */
  clientSecretSet: boolean;
  /** onedrive only (null: the `common` authority); always null for google_drive. */
  tenant: string | null;
  syncIntervalMinutes: number;
  /** Null while the connector was never configured. */
  updatedAt: Date | null;
  updatedBy: string | null;
}

/** The fields an update may set; a field left out (undefined) keeps its value; null clears. */
export interface ConnectorPatch {
  enabled?: boolean | null;
  clientId?: string | null;
  clientSecret?: string | null;
  tenant?: string | null;
  syncIntervalMinutes?: number | null;
}

type PatchField = keyof ConnectorPatch;

/** Documented (REST) names, used in validation `loc` and in the audit record. */
export const CONNECTOR_FIELDS: Record<PatchField, string> = {
  enabled: 'enabled',
  clientId: 'client_id',
  clientSecret: 'client_secret',
  tenant: 'tenant',
  syncIntervalMinutes: 'sync_interval_minutes',
};

export interface ConnectorCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ConnectorTestResult {
  name: ConnectorName;
  ok: boolean;
  checks: ConnectorCheck[];
}

export function isConnectorName(name: string): name is ConnectorName {
  return (connectorNames as readonly string[]).includes(name);
}

export const secretContext = (companyId: string, name: string) => `connector:${companyId}:${name}`;

function defaultView(companyId: string, name: ConnectorName): ConnectorView {
  return {
    companyId,
    name,
    enabled: false,
    clientId: null,
    clientSecretSet: false,
    tenant: null,
    syncIntervalMinutes: SYNC_INTERVAL_BOUNDS.default,
    updatedAt: null,
    updatedBy: null,
  };
}

function viewOf(row: ConnectorConfig): ConnectorView {
  return {
    companyId: row.company.id,
    name: row.name as ConnectorName,
    enabled: row.enabled,
    clientId: row.clientId,
    clientSecretSet: row.clientSecretSealed !== null,
    tenant: row.name === 'onedrive' ? row.tenant : null,
    syncIntervalMinutes: row.syncIntervalMinutes,
    updatedAt: row.updatedAt,
    updatedBy: row.updatedBy,
  };
}

/**
 * A company's configuration of the cloud-storage connectors: read, change
 * (secrets sealed at rest, never returned) and test (configuration complete,
 * then the provider's token endpoint reachable through the SSRF guard).
 * Owners, admins and company API keys; a superadmin for any company.
 */
export class ConnectorService {
  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
    private readonly secretBox: SecretBox,
    private readonly config: ConnectorsConfig,
    private readonly companies: CompanyAdminService,
    /** Tests inject a resolver to simulate DNS answers; default: the system resolver. */
    private readonly resolve?: Resolver,
  ) {}

  /** Both connectors, unconfigured ones with the defaults. */
  async list(principal: Principal, companyId?: string | null): Promise<ConnectorView[]> {
    const target = await this.targetCompany(principal, companyId);
    const rows = await currentEm(this.orm).find(ConnectorConfig, { company: target });
    return connectorNames.map((name) => {
      const row = rows.find((r) => r.name === name);
      return row ? viewOf(row) : defaultView(target, name);
    });
  }

  /** Partial update; audited `connector.updated` with the changed field names (never values of secrets). */
  async update(principal: Principal, name: string, patch: ConnectorPatch, meta: RequestMeta, companyId?: string | null): Promise<ConnectorView> {
    const target = await this.targetCompany(principal, companyId);
    const connector = this.connector(name);
    const caller = requireAuthenticated(principal);
    const next = validatePatch(connector, patch);
    const em = currentEm(this.orm);
    const existing = await em.findOne(ConnectorConfig, { company: target, name: connector });
    const before = existing ? viewOf(existing) : defaultView(target, connector);
    const context = secretContext(target, connector);

    const changed: string[] = [];
    if (next.enabled !== undefined && next.enabled !== before.enabled) changed.push('enabled');
    if (next.clientId !== undefined && next.clientId !== before.clientId) changed.push('client_id');
    if (next.tenant !== undefined && next.tenant !== before.tenant) changed.push('tenant');
    if (next.syncIntervalMinutes !== undefined && next.syncIntervalMinutes !== before.syncIntervalMinutes) changed.push('sync_interval_minutes');
    if (next.clientSecret !== undefined) {
      const old = existing?.clientSecretSealed ?? null;
      if (next.clientSecret === null ? old !== null : old === null || !this.sameSecret(old, context, next.clientSecret)) {
        changed.push('client_secret');
      }
    }

    const enabled = next.enabled ?? before.enabled;
    const clientId = next.clientId !== undefined ? next.clientId : before.clientId;
    const secretSet = next.clientSecret !== undefined ? next.clientSecret !== null : before.clientSecretSet;
    if (enabled && (!clientId || !secretSet)) {
      const issues: ValidationIssue[] = [];
      if (!clientId) issues.push({ loc: ['body', 'client_id'], msg: 'an enabled connector needs a client_id', type: 'missing' });
      if (!secretSet) issues.push({ loc: ['body', 'client_secret'], msg: 'an enabled connector needs a client_secret', type: 'missing' });
      throw AppError.validation(issues, 'A connector can only be enabled with its client_id and client_secret set');
    }
    if (!changed.length) return before;

    const row = existing ?? em.create(ConnectorConfig, { company: em.getReference(Company, target), name: connector });
    if (typeof next.enabled === 'boolean') row.enabled = next.enabled;
    if (next.clientId !== undefined) row.clientId = next.clientId;
    if (next.tenant !== undefined) row.tenant = next.tenant;
    if (typeof next.syncIntervalMinutes === 'number') row.syncIntervalMinutes = next.syncIntervalMinutes;
    if (changed.includes('client_secret')) {
      row.clientSecretSealed = next.clientSecret === null || next.clientSecret === undefined ? null : this.secretBox.seal(next.clientSecret, context);
    }
    row.updatedAt = new Date();
    row.updatedBy = caller.kind === 'user' ? caller.userId : caller.keyId;
    try {
      // The change and its audit entry commit in one flush (the audit log's).
      await this.audit.record({
        action: 'connector.updated',
        companyId: target,
        principal,
        meta,
        targetType: 'connector',
        targetId: connector,
        data: { connector, fields: changed, enabled: row.enabled },
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw new AppError('conflict', 'The connector was configured by another request at the same time; try again');
      }
      throw error;
    }
    return viewOf(row);
  }

  /**
   * Checks what can be checked without a user's consent: the configuration is
   * complete and the secret opens, then the provider's token endpoint answers
   * (through the SSRF guard, within the time limit). A failed check is a result,
   * not an error. Audited `connector.tested`.
   */
  async test(principal: Principal, name: string, meta: RequestMeta, companyId?: string | null): Promise<ConnectorTestResult> {
    const target = await this.targetCompany(principal, companyId);
    const connector = this.connector(name);
    const row = await currentEm(this.orm).findOne(ConnectorConfig, { company: target, name: connector });
    const checks: ConnectorCheck[] = [];

    const missing = [!row?.clientId && 'client_id', !row?.clientSecretSealed && 'client_secret'].filter(Boolean);
    checks.push({
      name: 'configuration',
      ok: missing.length === 0,
      detail: missing.length ? `missing: ${missing.join(', ')}` : 'client_id and client_secret are set',
    });
    if (row?.clientSecretSealed) {
      let opened = true;
      try {
        this.secretBox.open(row.clientSecretSealed, secretContext(target, connector));
      } catch {
        opened = false;
      }
      checks.push({
        name: 'client_secret',
        ok: opened,
        detail: opened ? 'the stored secret can be decrypted' : 'the stored secret cannot be decrypted (encryption key missing from ENCRYPTION_KEYS?); set it again',
      });
    }
    if (checks.every((c) => c.ok)) {
      checks.push(await this.checkTokenEndpoint(this.tokenUrl(connector, row?.tenant ?? null)));
    } else {
      checks.push({ name: 'token_endpoint', ok: false, detail: 'skipped: the configuration is incomplete' });
    }
    const result: ConnectorTestResult = { name: connector, ok: checks.every((c) => c.ok), checks };
    await this.audit.record({
      action: 'connector.tested',
      companyId: target,
      principal,
      meta,
      targetType: 'connector',
      targetId: connector,
      data: { connector, ok: result.ok, checks: checks.map((c) => ({ name: c.name, ok: c.ok })) },
    });
    return result;
  }

  /** The token endpoint of a connector (the onedrive tenant, or `common`, put into the template). */
  tokenUrl(name: ConnectorName, tenant: string | null): string {
    if (name === 'google_drive') return this.config.googleTokenUrl;
    return this.config.microsoftTokenUrl.replace('{tenant}', encodeURIComponent(tenant ?? 'common'));
  }

  private async checkTokenEndpoint(url: string): Promise<ConnectorCheck> {
    const host = (() => {
      try {
        return new URL(url).host;
      } catch {
        return url;
      }
    })();
    try {
      // No credentials are sent: an empty grant is refused (400), which proves the endpoint answers.
      const response = await guardedRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: 'grant_type=',
        timeoutMs: this.config.testTimeoutMs,
        allowLoopback: this.config.allowLoopback,
        ...(this.resolve ? { resolve: this.resolve } : {}),
      });
      const ok = response.status >= 200 && response.status < 500;
      return {
        name: 'token_endpoint',
        ok,
        detail: ok ? `${host} answered HTTP ${response.status}` : `${host} answered HTTP ${response.status} (provider error)`,
      };
    } catch (error) {
      if (error instanceof SsrfBlockedError) return { name: 'token_endpoint', ok: false, detail: `refused: ${error.message}` };
      const code = (error as NodeJS.ErrnoException).code;
      return { name: 'token_endpoint', ok: false, detail: `${host} is not reachable: ${code ?? (error as Error).message}` };
    }
  }

  private sameSecret(sealed: string, context: string, plain: string): boolean {
    try {
      return this.secretBox.openString(sealed, context) === plain;
    } catch {
      return false;
    }
  }

  private connector(name: string): ConnectorName {
    if (!isConnectorName(name)) throw new AppError('not_found', `No connector named "${name}"; the connectors are ${connectorNames.join(' and ')}`);
    return name;
  }

  /** The caller's own company (owners, admins, company keys), or any company for a superadmin. */
  private targetCompany(principal: Principal, companyId?: string | null): Promise<string> {
    return this.companies.managedCompanyId(principal, companyId);
  }
}

function intIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** Checks every given field (all problems at once) and returns the normalized values. */
export function validatePatch(connector: ConnectorName, patch: ConnectorPatch): ConnectorPatch {
  const issues: ValidationIssue[] = [];
  const out: ConnectorPatch = {};
  const loc = (field: PatchField) => ['body', CONNECTOR_FIELDS[field]];
  const given = (field: PatchField) => Object.prototype.hasOwnProperty.call(patch, field) && patch[field] !== undefined;
  const text = (field: 'clientId' | 'clientSecret', max: number) => {
    if (!given(field)) return;
    const value = patch[field];
    if (value === null) {
      out[field] = null;
      return;
    }
    if (typeof value !== 'string' || !value.trim() || textLength(value) > max || CONTROL.test(value)) {
      issues.push({ loc: loc(field), msg: `must be 1 to ${max} characters without control characters, or null to clear`, type: 'value_error' });
    } else out[field] = field === 'clientId' ? value.trim() : value;
  };

  if (given('enabled')) {
    if (patch.enabled === null) issues.push({ loc: loc('enabled'), ...NULL_ISSUE });
    else if (typeof patch.enabled !== 'boolean') issues.push({ loc: loc('enabled'), msg: 'must be a boolean', type: 'bool_type' });
    else out.enabled = patch.enabled;
  }
  text('clientId', CLIENT_ID_MAX);
  text('clientSecret', CLIENT_SECRET_MAX);
  if (given('tenant')) {
    if (connector !== 'onedrive') {
      issues.push({ loc: loc('tenant'), msg: 'only the onedrive connector has a tenant', type: 'extra_forbidden' });
    } else if (patch.tenant === null) out.tenant = null;
    else if (typeof patch.tenant !== 'string' || !TENANT.test(patch.tenant.trim())) {
      issues.push({
        loc: loc('tenant'),
        msg: 'must be a tenant id (GUID), a domain such as contoso.onmicrosoft.com, common, organizations or consumers; null for common',
        type: 'value_error',
      });
    } else out.tenant = patch.tenant.trim().toLowerCase();
  }
  if (given('syncIntervalMinutes')) {
    if (patch.syncIntervalMinutes === null) issues.push({ loc: loc('syncIntervalMinutes'), ...NULL_ISSUE });
    else if (!intIn(patch.syncIntervalMinutes, SYNC_INTERVAL_BOUNDS.min, SYNC_INTERVAL_BOUNDS.max)) {
      issues.push({
        loc: loc('syncIntervalMinutes'),
        msg: `must be an integer from ${SYNC_INTERVAL_BOUNDS.min} to ${SYNC_INTERVAL_BOUNDS.max}`,
        type: 'range',
      });
    } else out.syncIntervalMinutes = patch.syncIntervalMinutes!;
  }
  if (issues.length) throw AppError.validation(issues);
  return out;
}
