import { AppError, type ValidationIssue } from './errors/catalog';

export const MAX_PER_PAGE = 100;

/** One page of a list: the one envelope every list uses (REST adds snake_case and a Link header). */
export interface Page<T> {
  items: T[];
  page: number;
  perPage: number;
  total: number;
}

/** Checks page/per_page once for every list; the REST schemas carry the same bounds. */
export function checkPage(page: number, perPage: number): { page: number; perPage: number } {
  const issues: ValidationIssue[] = [];
  if (!Number.isInteger(page) || page < 1) {
    issues.push({ loc: ['query', 'page'], msg: 'must be an integer >= 1', type: 'greater_than_equal' });
  }
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > MAX_PER_PAGE) {
    issues.push({ loc: ['query', 'per_page'], msg: `must be an integer from 1 to ${MAX_PER_PAGE}`, type: 'range' });
  }
  if (issues.length) throw AppError.validation(issues);
  return { page, perPage };
}
