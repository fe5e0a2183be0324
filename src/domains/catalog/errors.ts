import { defineErrors } from '../../errors/catalog';

export const catalogErrors = defineErrors({
  model_not_found: { status: 404, title: 'Model not found' },
  model_blocked: { status: 422, title: 'Model blocked' },
});

declare module '../../errors/catalog' {
  interface ErrorCodes extends Record<keyof typeof catalogErrors, ErrorEntry> {}
}
