import type { Orm } from '../../db/orm';
import type { EventBus } from '../../events/event-bus';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { hiddenCharacterIssue } from '../../errors/display-name';
import { textLength } from '../../errors/text-length';
import { requireUser } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import { currentEm } from '../../db/unit-of-work';
import type { AuditService } from '../audit';
import { User } from './user.entity';

export const MAX_NAME_LENGTH = 200;

export interface ProfileChanges {
  /** 1 to 200 characters once trimmed; null clears it; undefined leaves it. */
  name?: string | null;
}

/** What signed-in users may change about themselves. Company API keys have no profile. */
export class ProfileService {
  constructor(
    private readonly orm: Orm,
    private readonly bus: EventBus,
    private readonly audit: AuditService,
  ) {}

  async update(principal: Principal, changes: ProfileChanges, meta: RequestMeta): Promise<User> {
    const caller = requireUser(principal);
    const name = normalizeName(changes.name);
    const em = currentEm(this.orm);
    const user = await em.findOne(User, { id: caller.userId });
    if (!user) throw new AppError('token_invalid', 'The user of this token no longer exists');
    if (name === undefined || name === user.name) return user;

    user.name = name;
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'user.profile_updated',
      companyId: caller.companyId,
      principal: caller,
      meta,
      targetType: 'user',
      targetId: user.id,
      data: { fields: ['name'] },
    });
    this.bus.publish('user.changed', { userId: user.id, access: false });
    return user;
  }
}

function normalizeName(name: string | null | undefined): string | null | undefined {
  if (name === undefined || name === null) return name;
  const trimmed = name.trim();
  const length = textLength(trimmed);
  const issues: ValidationIssue[] = [];
  if (length < 1) issues.push({ loc: ['body', 'name'], msg: 'must not be empty; send null to clear the name', type: 'string_too_short' });
  if (length > MAX_NAME_LENGTH) {
    issues.push({ loc: ['body', 'name'], msg: `must be at most ${MAX_NAME_LENGTH} characters`, type: 'string_too_long' });
  }
  const hidden = hiddenCharacterIssue(trimmed, ['body', 'name']);
  if (hidden) issues.push(hidden);
  if (issues.length) throw AppError.validation(issues);
  return trimmed;
}
