import { ApiKey } from '../domains/identity/api-key.entity';
import { Company } from '../domains/identity/company.entity';
import { RefreshToken } from '../domains/identity/refresh-token.entity';
import { Session } from '../domains/identity/session.entity';
import { User } from '../domains/identity/user.entity';
import { MfaRecoveryCode } from '../domains/identity/mfa-recovery-code.entity';
import { AuditEvent } from '../domains/audit/audit-event.entity';
import { Model } from '../domains/catalog/model.entity';
import { Plan } from '../domains/billing/plan.entity';
import { DocsFeedback } from '../domains/feedback/docs-feedback.entity';
import { MailOutbox } from '../mail/outbox.entity';
import { SsoState } from '../domains/identity/sso-state.entity';
import { UserIdentity } from '../domains/identity/user-identity.entity';
import { Invitation } from '../domains/identity/invitation.entity';
import { LoginThrottle } from '../domains/identity/login-throttle.entity';
import { OneTimeToken } from '../domains/identity/one-time-token.entity';
import { SsoMfaChallenge } from '../domains/identity/sso-mfa-challenge.entity';
import { SecurityPolicy } from '../domains/admin/security-policy.entity';
import { UsageRecord } from '../domains/billing/usage-record.entity';
import { ConnectorConfig } from '../domains/admin/connector-config.entity';

/** Every entity the ORM maps; migrations must match this list (a test checks). */
export const entities = [Company, User, Session, RefreshToken, ApiKey, AuditEvent, Model, Plan, DocsFeedback, MailOutbox, MfaRecoveryCode, SsoState, UserIdentity, Invitation, SsoMfaChallenge, LoginThrottle, OneTimeToken, UsageRecord, SecurityPolicy, ConnectorConfig];
