import { createHash } from 'node:crypto';
import type { Orm } from '../../db/orm';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import type { RequestMeta } from '../../auth/principal';
import { DocsFeedback } from './docs-feedback.entity';
import { currentEm } from '../../db/unit-of-work';

export const FEEDBACK_LIMITS = { page: 500, comment: 2000 } as const;

export class FeedbackService {
  constructor(
    private readonly orm: Orm,
    private readonly ipHashSalt: string,
  ) {}

  async submit(
    input: { page: string; helpful?: boolean | null; comment?: string | null },
    meta: RequestMeta,
  ): Promise<DocsFeedback> {
    const page = input.page.trim();
    const comment = input.comment?.trim() || null;
    const issues: ValidationIssue[] = [];
    if (!page || textLength(page) > FEEDBACK_LIMITS.page) {
      issues.push({ loc: ['query', 'page'], msg: `must be 1 to ${FEEDBACK_LIMITS.page} characters`, type: 'string_length' });
    }
    if (comment && textLength(comment) > FEEDBACK_LIMITS.comment) {
      issues.push({ loc: ['query', 'comment'], msg: `must be at most ${FEEDBACK_LIMITS.comment} characters`, type: 'string_too_long' });
    }
    if (input.helpful == null && !comment) {
      issues.push({ loc: ['query'], msg: 'give at least one of helpful or comment', type: 'missing' });
    }
    if (issues.length) throw AppError.validation(issues);
    const em = currentEm(this.orm);
    const feedback = em.create(DocsFeedback, {
      page,
      helpful: input.helpful ?? null,
      comment,
      ipHash: createHash('sha256').update(this.ipHashSalt).update(meta.ip).digest('hex'),
      userAgent: meta.userAgent?.slice(0, 512) ?? null,
    });
    await em.flush();
    return feedback;
  }
}
